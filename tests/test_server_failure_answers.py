"""What the REST and MCP servers answer when something under them fails: a
model or embedding server that is down (502 / a tool error with the reason,
not a 500 or an unexplained crash), a full disk during an ``infer``
consolidation after the turns were stored (200 with ``consolidation_error``,
so a client does not retry and store them twice), and the documented
``limit`` of ``GET /changes`` and ``/doubts`` read from the query string."""
from __future__ import annotations

import asyncio
import errno
import traceback

import pytest

import naia_memory.stores.journal as journal

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from naia_memory import LocalStore, MemorySystem  # noqa: E402
from naia_memory.embedders import HashingEmbedder, make_embedder  # noqa: E402
from naia_memory.server.rest import ServerSettings, create_app  # noqa: E402
from naia_memory.validate import unused_loopback_port  # noqa: E402

TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _client(memory) -> TestClient:
    return TestClient(create_app(memory, ServerSettings(tokens={TOKEN: None}, rate=1000, burst=1000)))


def _down_embedder():
    # a real OpenAI-compatible client pointed at a loopback port nothing listens on
    return make_embedder("openai", base_url=f"http://127.0.0.1:{unused_loopback_port()}/v1", model="m", dim=8,
                         timeout_s=2)


class DiskFullInConsolidation(LocalStore):
    """A real JSON store whose next commit made by a consolidation fails as a
    full disk does: its journal's write raises, inside the store's own commit."""

    armed = False

    def commit(self):
        if not (self.armed and any(f.name == "consolidate" for f in traceback.extract_stack())):
            return super().commit()
        self.armed = False
        durable = journal._durable

        def full(*_a, **_k):
            raise OSError(errno.ENOSPC, "No space left on device")

        journal._durable = full
        try:
            return super().commit()
        finally:
            journal._durable = durable


def test_changes_and_doubts_take_their_limit_from_the_query_string(tmp_path, tokenizer):
    m = MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    try:
        with _client(m) as c:
            for path in ("/changes", "/doubts"):
                ok = c.get(path, params={"user_id": "alice", "limit": "5"}, headers=AUTH)
                assert ok.status_code == 200, ok.text
                for bad in ("0", "1001", "five", "1.5"):
                    assert c.get(path, params={"user_id": "alice", "limit": bad}, headers=AUTH).status_code == 422
    finally:
        m.close()


def test_an_embedding_server_that_is_down_is_a_502_and_nothing_is_stored(tmp_path, tokenizer):
    m = MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=_down_embedder(), tokenizer=tokenizer)
    try:
        with _client(m) as c:
            r = c.post("/memories", headers=AUTH,
                       json={"user_id": "alice", "messages": [{"role": "user", "content": "I live in Lisbon"}]})
            assert r.status_code == 502 and r.json()["detail"].startswith("the embedding model failed"), r.text
            r = c.post("/search", headers=AUTH, json={"user_id": "alice", "query": "where do I live"})
            assert r.status_code == 502, r.text
            assert 502 in {int(k) for k in c.get("/openapi.json").json()["paths"]["/memories"]["post"]["responses"]}
        assert len(m.store) == 0
    finally:
        m.close()


def test_mcp_tells_the_agent_why_when_the_embedder_or_the_disk_fails(tmp_path, tokenizer):
    pytest.importorskip("mcp")
    from mcp.server.mcpserver.exceptions import ToolError

    from naia_memory.server.mcp_tools import build_mcp

    m = MemorySystem(store=LocalStore(tmp_path / "a.json"), embedder=_down_embedder(), tokenizer=tokenizer)
    try:
        with pytest.raises(ToolError, match="the embedding model failed"):
            asyncio.run(build_mcp(m).call_tool("remember", {"content": "I live in Lisbon"}))
    finally:
        m.close()

    store = DiskFullInConsolidation(tmp_path / "b.json")
    m = MemorySystem(store=store, embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    try:
        server = build_mcp(m)
        asyncio.run(server.call_tool("remember", {"content": "I live in Lisbon"}))
        store.armed = True
        with pytest.raises(ToolError, match="the store could not be written: No space left on device"):
            asyncio.run(server.call_tool("consolidate", {}))
    finally:
        m.close()


def test_a_full_disk_in_an_infer_consolidation_is_not_a_503_the_client_retries(tmp_path, tokenizer):
    store = DiskFullInConsolidation(tmp_path / "m.json")
    m = MemorySystem(store=store, embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    body = {"user_id": "alice", "infer": True, "messages": [{"role": "user", "content": "I live in Lisbon"}]}
    try:
        with _client(m) as c:
            store.armed = True
            r = c.post("/memories", headers=AUTH, json=body)
            assert r.status_code == 200, r.text
            out = r.json()
            assert out["results"][0]["event"] == "ADD" and out["consolidated"] is None
            assert out["consolidation_error"].startswith("the turns are stored") and "No space left" in out["consolidation_error"]
            # the turn is stored once; the consolidation that failed wrote nothing and runs on the next call
            listed = c.get("/memories", params={"user_id": "alice"}, headers=AUTH).json()["results"]
            assert [x["memory"] for x in listed] == ["I live in Lisbon"]
            assert c.post("/consolidate", headers=AUTH, json={"user_id": "alice"}).status_code == 200
            kinds = sorted(x["kind"] for x in c.get("/memories", params={"user_id": "alice"}, headers=AUTH).json()["results"])
            assert kinds == ["episode", "fact"]
    finally:
        m.close()
