"""The MCP server (issue 11), driven by the SDK's real client over stdio:
``naia-memory serve mcp`` started as a subprocess, as an agent host starts it."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")
import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from naia_memory import LocalStore, MemorySystem  # noqa: E402
from naia_memory.embedders import HashingEmbedder  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _serve(path) -> StdioServerParameters:
    """``naia-memory serve mcp`` on ``path``, as an agent host starts it."""
    return StdioServerParameters(command=sys.executable, args=["-m", "naia_memory.cli", "--store", str(path), "serve", "mcp"],
                                 cwd=str(REPO), env={**os.environ, "PYTHONPATH": str(REPO)})


def test_mcp_tools_over_stdio(tmp_path, tokenizer):
    path = tmp_path / "m.json"
    m = MemorySystem(store=LocalStore(path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    other = m.encode(content="I live in Oslo", project="someone-else").id
    m.close()
    params = _serve(path)
    seen: dict = {}

    async def session() -> None:
        async with Client(params, read_timeout_seconds=60) as c:
            seen["tools"] = sorted(t.name for t in (await c.list_tools()).tools)
            stored = (await c.call_tool("remember", {"content": "I live in Lisbon", "session": "chat"})).structured_content
            await c.call_tool("remember", {"content": "I play bass in a band", "session": "chat"})
            seen["stored"] = stored
            seen["recall"] = (await c.call_tool("recall", {"query": "where do I live", "top_k": 1})).structured_content["result"]
            seen["consolidate"] = (await c.call_tool("consolidate", {})).structured_content
            seen["fact_hit"] = (await c.call_tool("recall", {"query": "Lisbon", "top_k": 1})).structured_content["result"]
            seen["lax"] = [await c.call_tool("recall", {"query": "Lisbon", "top_k": True}),  # a JSON true is not 1
                           await c.call_tool("list", {"kind": ""}), await c.call_tool("list", {"limit": 0}),
                           await c.call_tool("remember", {"content": "hi", "role": "king"})]
            seen["facts"] = (await c.call_tool("list", {"kind": "fact"})).structured_content["result"]
            seen["other"] = await c.call_tool("forget", {"memory_id": other})  # another project's id: unknown here
            seen["bad"] = await c.call_tool("remember", {"content": ""})
            lisbon = next(f["id"] for f in seen["facts"] if "Lisbon" in f["memory"])
            seen["forget"] = (await c.call_tool("forget", {"memory_id": lisbon})).structured_content
            seen["after"] = (await c.call_tool("list", {})).structured_content["result"]

    anyio.run(session)
    assert seen["tools"] == ["changes", "consolidate", "doubts", "forget", "incognito", "list", "memory_switch", "recall",
                             "remember", "revert", "settle"]
    assert seen["stored"]["stored"] is True and seen["stored"]["id"].startswith("ep_")
    assert seen["recall"][0]["memory"] == "I live in Lisbon"
    assert seen["consolidate"]["turns"] == 2 and seen["consolidate"]["decisions"]["ADD"] == 2
    # a recalled fact names the turn it was drawn from (its "sources" were the caller's ids, always empty here)
    assert seen["fact_hit"][0]["kind"] == "fact" and seen["fact_hit"][0]["turns"] == [seen["stored"]["id"]]
    assert all(r.is_error for r in seen["lax"])
    assert {f["memory"] for f in seen["facts"]} == {"I live in Lisbon", "I play bass in a band"}
    assert seen["other"].is_error and "no memory with id" in seen["other"].content[0].text
    assert seen["bad"].is_error and "content" in seen["bad"].content[0].text
    assert seen["forget"]["deleted"] >= 2  # the fact and the turn it came from
    assert [x["memory"] for x in seen["after"]] == ["I play bass in a band", "I play bass in a band"]
    m = MemorySystem(store=LocalStore(path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    try:  # the other project was never touched, and the session's writes are on disk
        assert [h.content for h in m.memories(project="someone-else")] == ["I live in Oslo"]
        assert not any("Lisbon" in h.content for h in m.memories(project=None, include_inactive=True))
    finally:
        m.close()


def test_mcp_changes_and_revert(tmp_path, tokenizer, t0):
    """An agent asked "did you really stop liking pad thai?" lists the change and takes it back."""
    from datetime import timedelta

    path = tmp_path / "m.json"
    m = MemorySystem(store=LocalStore(path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    m.encode(content="my favorite food is pad thai", now=t0)
    m.consolidate(now=t0 + timedelta(minutes=1))
    m.encode(content="congee is my favorite thing to eat now", now=t0 + timedelta(days=1))
    m.consolidate(now=t0 + timedelta(days=1, minutes=1))
    other = m.encode(content="I live in Oslo", project="someone-else").id
    m.close()
    params = _serve(path)
    seen: dict = {}

    async def session() -> None:
        async with Client(params, read_timeout_seconds=60) as c:
            seen["changes"] = (await c.call_tool("changes", {})).structured_content["result"]
            seen["other"] = await c.call_tool("revert", {"memory_id": other})
            seen["revert"] = (await c.call_tool("revert", {"memory_id": seen["changes"][0]["old_id"]})).structured_content
            seen["again"] = await c.call_tool("revert", {"memory_id": seen["changes"][0]["old_id"]})
            seen["after"] = (await c.call_tool("changes", {})).structured_content["result"]
            seen["doubts"] = (await c.call_tool("doubts", {})).structured_content["result"]
            seen["settle"] = await c.call_tool("settle", {"memory_id": seen["changes"][0]["old_id"], "replaces": None})

    anyio.run(session)
    [ch] = seen["changes"]
    assert (ch["op"], ch["old"], ch["new"]) == ("UPDATE", "my favorite food is pad thai", "congee is my favorite thing to eat now")
    assert seen["other"].is_error and "no memory with id" in seen["other"].content[0].text
    assert seen["revert"] == {"current": ch["old_id"]}
    assert seen["again"].is_error and "active" in seen["again"].content[0].text
    assert seen["after"] == [] and seen["doubts"] == []
    assert seen["settle"].is_error and "no open question" in seen["settle"].content[0].text


def test_mcp_switches_hold_across_a_restart_of_the_server(tmp_path, tokenizer):
    """"Don't keep this conversation" and "stop remembering", asked of an agent, outlive its MCP server."""
    path = tmp_path / "m.json"
    params = _serve(path)
    seen: dict = {}

    async def first() -> None:
        async with Client(params, read_timeout_seconds=60) as c:
            seen["incognito"] = (await c.call_tool("incognito", {"session": "private"})).structured_content
            seen["kept_out"] = (await c.call_tool("remember", {"content": "my salary is 4200 a month", "session": "private"})).structured_content
            seen["off"] = (await c.call_tool("memory_switch", {"on": False})).structured_content
            seen["bad"] = await c.call_tool("incognito", {"session": ""})

    async def second() -> None:
        async with Client(params, read_timeout_seconds=60) as c:
            seen["after_restart"] = (await c.call_tool("remember", {"content": "I live in Lisbon", "session": "open"})).structured_content
            seen["on"] = (await c.call_tool("memory_switch", {"on": True})).structured_content
            seen["still_out"] = (await c.call_tool("remember", {"content": "I earn 4200", "session": "private"})).structured_content
            seen["stored"] = (await c.call_tool("remember", {"content": "I live in Lisbon", "session": "open"})).structured_content

    anyio.run(first)
    anyio.run(second)
    assert seen["incognito"] == {"incognito": ["private"]}
    assert seen["kept_out"]["stored"] is False and seen["kept_out"]["reason"] == "incognito conversation"
    assert seen["off"] == {"on": False} and seen["bad"].is_error
    assert seen["after_restart"]["reason"] == "memory is off" and seen["on"] == {"on": True}
    assert seen["still_out"]["reason"] == "incognito conversation" and seen["stored"]["stored"] is True
