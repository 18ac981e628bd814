"""The REST server (issue 11): mem0-shaped endpoints over one store, a bearer
token, users that cannot reach each other, body and rate limits, no 500s.
In-process through the ASGI app (httpx), and once as a real uvicorn server
on loopback started by the ``naia-memory serve rest`` command."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from naia_memory import EngineConfig, LocalStore, MemorySystem  # noqa: E402
from naia_memory.embedders import HashingEmbedder  # noqa: E402
from naia_memory.server.rest import ServerSettings, create_app  # noqa: E402
from naia_memory.validate import MAX_CONTENT_CHARS, unused_loopback_port  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TOKEN = "test-token-0123456789"
BOB = "bob-token-0123456789ab"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def memory(tmp_path, tokenizer):
    m = MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer,
                     config=EngineConfig())
    yield m
    m.close()


@pytest.fixture
def client(memory):
    app = create_app(memory, ServerSettings(tokens={TOKEN: None, BOB: "bob"}, rate=1000, burst=1000))
    with TestClient(app) as c:
        yield c


def _add(client, user: str, *texts: str, headers=AUTH, **extra) -> list[dict]:
    r = client.post("/memories", headers=headers, json={"user_id": user, "messages": [{"role": "user", "content": t} for t in texts], **extra})
    assert r.status_code == 200, r.text
    return r.json()["results"]


def test_round_trip_in_mem0_shape(client):
    added = _add(client, "alice", "I live in Lisbon", "I play bass in a band", run_id="chat-1", agent_id="helper")
    assert [a["event"] for a in added] == ["ADD", "ADD"] and all(a["id"] for a in added)
    listed = client.get("/memories", params={"user_id": "alice"}, headers=AUTH).json()["results"]
    assert {m["memory"] for m in listed} == {"I live in Lisbon", "I play bass in a band"}
    assert {m["run_id"] for m in listed} == {"chat-1"} and {m["user_id"] for m in listed} == {"alice"}
    found = client.post("/search", headers=AUTH, json={"user_id": "alice", "query": "where do I live", "limit": 1}).json()["results"]
    assert found[0]["memory"] == "I live in Lisbon" and found[0]["score"] > 0
    done = client.post("/consolidate", headers=AUTH, json={"user_id": "alice"}).json()
    assert done["turns"] == 2 and done["decisions"].get("ADD", 0) >= 2
    fact = next(m for m in client.get("/memories", params={"user_id": "alice"}, headers=AUTH).json()["results"]
                if m["kind"] == "fact" and "Lisbon" in m["memory"])
    assert fact["provenance"]  # the turn it came from
    upd = client.put(f"/memories/{fact['id']}", headers=AUTH, json={"user_id": "alice", "text": "I live in Porto"}).json()
    assert upd["previous_id"] == fact["id"] and upd["memory"] == "I live in Porto"
    hist = client.get(f"/memories/{upd['id']}/history", params={"user_id": "alice"}, headers=AUTH).json()["results"]
    assert [h["memory"] for h in hist] == ["I live in Lisbon", "I live in Porto"]
    assert hist[0]["status"] != "active" and hist[1]["supersedes"] == fact["id"]
    got = client.get(f"/memories/{upd['id']}", params={"user_id": "alice"}, headers=AUTH).json()
    assert got["memory"] == "I live in Porto"
    gone = client.delete(f"/memories/{upd['id']}", params={"user_id": "alice"}, headers=AUTH).json()
    assert gone["deleted"] >= 1
    assert client.get(f"/memories/{upd['id']}", params={"user_id": "alice"}, headers=AUTH).status_code == 404
    everything = client.delete("/memories", params={"user_id": "alice"}, headers=AUTH).json()
    assert everything["deleted"] >= 1
    assert client.get("/memories", params={"user_id": "alice", "include_inactive": True}, headers=AUTH).json()["results"] == []


def test_auth_is_required_and_compared_exactly(client):
    assert client.get("/health").status_code == 200  # liveness needs no token
    assert client.get("/memories", params={"user_id": "alice"}).status_code == 401
    for bad in ("Bearer wrong-token-0123456789", f"Basic {TOKEN}", f"Bearer {TOKEN}x", "Bearer "):
        r = client.get("/memories", params={"user_id": "alice"}, headers={"Authorization": bad})
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert client.get("/memories", params={"user_id": "alice"}, headers=AUTH).status_code == 200


def test_settings_refuse_unsafe_setups(memory):
    with pytest.raises(ValueError, match="token"):
        create_app(memory, ServerSettings(tokens={}))
    with pytest.raises(ValueError, match="loopback"):
        create_app(memory, ServerSettings(auth=False, host="0.0.0.0"))
    with pytest.raises(ValueError, match="16"):
        create_app(memory, ServerSettings(tokens={"short": None}))
    create_app(memory, ServerSettings(auth=False, host="127.0.0.1"))  # loopback without a token: allowed


def test_no_user_reaches_another_users_memories(client, memory):
    """Every endpoint tried with alice's ids while acting as bob: nothing of
    alice's is read, changed or deleted, and her ids read as missing."""
    _add(client, "alice", "I live in Lisbon", "My sister is called Ana")
    client.post("/consolidate", headers=AUTH, json={"user_id": "alice"})
    _add(client, "bob", "I live in Oslo")
    before = client.get("/memories", params={"user_id": "alice", "include_inactive": True}, headers=AUTH).json()["results"]
    ids = [m["id"] for m in before]
    leaks = []
    for who, headers in (("bob", AUTH), ("bob", {"Authorization": f"Bearer {BOB}"})):
        for mid in ids:
            for r in (client.get(f"/memories/{mid}", params={"user_id": who}, headers=headers),
                      client.get(f"/memories/{mid}/history", params={"user_id": who}, headers=headers),
                      client.put(f"/memories/{mid}", headers=headers, json={"user_id": who, "text": "hacked"}),
                      client.delete(f"/memories/{mid}", params={"user_id": who}, headers=headers)):
                if r.status_code != 404 or "Lisbon" in r.text or "Ana" in r.text:
                    leaks.append((r.request.method, r.request.url.path, r.status_code))
        for r in (client.get("/memories", params={"user_id": who}, headers=headers),
                  client.post("/search", headers=headers, json={"user_id": who, "query": "Lisbon sister Ana", "limit": 50})):
            if "Lisbon" in r.text or "Ana" in r.text:
                leaks.append((r.request.method, r.request.url.path, r.status_code))
        client.post("/consolidate", headers=headers, json={"user_id": who})
    # a token bound to bob cannot act for alice at all
    bob = {"Authorization": f"Bearer {BOB}"}
    for r in (client.get("/memories", params={"user_id": "alice"}, headers=bob),
              client.post("/search", headers=bob, json={"user_id": "alice", "query": "Lisbon"}),
              client.delete("/memories", params={"user_id": "alice"}, headers=bob),
              client.get(f"/memories/{ids[0]}", params={"user_id": "alice"}, headers=bob)):
        if r.status_code != 403:
            leaks.append((r.request.method, r.request.url.path, r.status_code))
    client.delete("/memories", params={"user_id": "bob"}, headers=AUTH)  # bob forgets everything of his
    after = client.get("/memories", params={"user_id": "alice", "include_inactive": True}, headers=AUTH).json()["results"]
    assert leaks == []
    assert [(m["id"], m["memory"], m["status"]) for m in after] == [(m["id"], m["memory"], m["status"]) for m in before]


def test_bad_input_is_a_4xx_and_changes_nothing(client, memory):
    _add(client, "alice", "I live in Lisbon")
    snapshot = [(h.id, h.content) for h in memory.memories(project=None, include_inactive=True)]
    cases = [
        {"user_id": "alice", "messages": [{"content": "x" * (MAX_CONTENT_CHARS + 1)}]},
        {"user_id": "alice", "messages": [{"content": "ok"}, {"content": "  "}]},  # one bad turn: none stored
        {"user_id": "alice", "messages": [{"content": "bad \ud800 surrogate"}]},
        {"user_id": "", "messages": [{"content": "hi"}]},
        {"user_id": "alice", "messages": []},
        {"user_id": "alice", "messages": [{"role": "king", "content": "hi"}]},
        {"user_id": "alice", "messages": [{"content": "hi"}], "metadata": {"k": "v" * 70_000}},
        {"user_id": "alice", "messages": [{"content": "hi"}], "run_id": "r" * 300},
        # the engine's own keys (session 32: one such add made every later search of the user a 500)
        {"user_id": "alice", "messages": [{"content": "hi"}], "metadata": {"source_ids": 5}},
        {"user_id": "alice", "messages": [{"content": "hi"}], "metadata": {"summarizes": 5}},
        # session 33: a dict under "context" made every later forget of the store a 500, for every user
        {"user_id": "alice", "messages": [{"content": "hi"}], "metadata": {"context": {"x": 1}}},
        {"user_id": "alice", "messages": [{"content": "hi"}], "infer": "yes"},
    ]
    for body in cases:
        r = client.post("/memories", headers=AUTH, content=json.dumps(body), )
        assert 400 <= r.status_code < 500, (body, r.status_code, r.text)
    assert client.post("/search", headers=AUTH, json={"user_id": "alice", "query": ""}).status_code == 400
    assert client.post("/search", headers=AUTH, json={"user_id": "alice", "query": "x", "limit": 0}).status_code == 422
    assert client.post("/search", headers=AUTH, json={"user_id": "alice", "query": "x", "limit": True}).status_code == 422
    assert client.get("/memories/nope", params={"user_id": "alice"}, headers=AUTH).status_code == 404
    # a number JSON cannot write (NaN, Infinity) where the schema wants another type: 422, not a 500 from echoing it
    for raw in (b'{"user_id":"alice","query":"x","limit":NaN}', b'{"user_id":"alice","query":Infinity}'):
        r = client.post("/search", headers={**AUTH, "content-type": "application/json"}, content=raw)
        assert r.status_code == 422, (raw, r.status_code, r.text)
    assert [(h.id, h.content) for h in memory.memories(project=None, include_inactive=True)] == snapshot
    assert client.post("/search", headers=AUTH, json={"user_id": "alice", "query": "Lisbon"}).status_code == 200


def test_body_size_limit(memory):
    app = create_app(memory, ServerSettings(tokens={TOKEN: None}, max_body_bytes=4096))
    with TestClient(app) as c:
        big = json.dumps({"user_id": "a", "messages": [{"content": "y" * 8000}]})
        assert c.post("/memories", headers=AUTH, content=big).status_code == 413
        chunks = (part.encode() for part in (big[:3000], big[3000:]))  # no declared length: counted as it arrives
        assert c.post("/memories", headers={**AUTH, "Content-Type": "application/json"}, content=chunks).status_code == 413
        assert c.post("/memories", headers=AUTH, json={"user_id": "a", "messages": [{"content": "I live in Lisbon"}]}).status_code == 200
    assert len(memory.store) == 1


def test_rate_limit_per_client(memory):
    clock = Clock()
    app = create_app(memory, ServerSettings(tokens={TOKEN: None, BOB: "bob"}, rate=2.0, burst=3), clock=clock)
    with TestClient(app) as c:
        codes = [c.get("/memories", params={"user_id": "a"}, headers=AUTH).status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429]
        r = c.get("/memories", params={"user_id": "a"}, headers=AUTH)
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        assert c.get("/memories", params={"user_id": "bob"}, headers={"Authorization": f"Bearer {BOB}"}).status_code == 200
        clock.t += 0.5  # one token back at 2 a second
        assert c.get("/memories", params={"user_id": "a"}, headers=AUTH).status_code == 200


def test_openapi_document_names_every_endpoint(client):
    doc = client.get("/openapi.json").json()
    paths = {(p, m) for p, ops in doc["paths"].items() for m in ops}
    assert {("/memories", "post"), ("/memories", "get"), ("/memories", "delete"), ("/memories/{memory_id}", "get"),
            ("/memories/{memory_id}", "put"), ("/memories/{memory_id}", "delete"), ("/memories/{memory_id}/history", "get"),
            ("/search", "post"), ("/consolidate", "post"), ("/health", "get")} <= paths
    assert "HTTPBearer" in doc["components"]["securitySchemes"]


def test_a_real_server_on_loopback(tmp_path, tokenizer):
    """``naia-memory serve rest`` as a user starts it: a real uvicorn process,
    real HTTP on 127.0.0.1, the store written to disk."""
    path = tmp_path / "served.json"
    MemorySystem(store=LocalStore(path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer).close()
    port = unused_loopback_port()
    proc = subprocess.Popen([sys.executable, "-m", "naia_memory.cli", "--store", str(path), "serve", "rest", "--port", str(port)],
                            cwd=REPO, env={**os.environ, "NAIA_MEMORY_TOKEN": TOKEN}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"

    def call(method: str, url: str, body: dict | None = None, headers=AUTH):
        req = urllib.request.Request(base + url, method=method, data=json.dumps(body).encode() if body else None,
                                     headers={**headers, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    try:
        deadline = time.time() + 60
        while True:
            try:
                if call("GET", "/health")[0] == 200:
                    break
            except OSError:
                pass  # not listening yet
            if time.time() > deadline or proc.poll() is not None:  # also when it answers, but never 200
                raise AssertionError(proc.stderr.read().decode() if proc.poll() is not None else "server did not get healthy")
            time.sleep(0.2)
        assert call("GET", "/memories?user_id=a", headers={})[0] == 401
        status, out = call("POST", "/memories", {"user_id": "a", "messages": [{"content": "I live in Lisbon"}]})
        assert status == 200 and out["results"][0]["event"] == "ADD"
        status, out = call("POST", "/search", {"user_id": "a", "query": "Lisbon"})
        assert status == 200 and out["results"][0]["memory"] == "I live in Lisbon"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    m = MemorySystem(store=LocalStore(path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    try:
        assert [h.content for h in m.memories(project="a")] == ["I live in Lisbon"]
    finally:
        m.close()


def test_serve_refuses_to_start_without_a_token(tmp_path, tokenizer):
    path = tmp_path / "m.json"
    MemorySystem(store=LocalStore(path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer).close()
    env = {k: v for k, v in os.environ.items() if k != "NAIA_MEMORY_TOKEN"}
    out = subprocess.run([sys.executable, "-m", "naia_memory.cli", "--store", str(path), "serve", "rest"], cwd=REPO,
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode != 0 and "NAIA_MEMORY_TOKEN" in out.stderr
    out = subprocess.run([sys.executable, "-m", "naia_memory.cli", "--store", str(path), "serve", "rest", "--no-auth",
                          "--host", "0.0.0.0"], cwd=REPO, capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode != 0 and "loopback" in out.stderr
    # refused before the store is opened: a mistyped --store is not left behind as an empty store (session 40)
    typo = tmp_path / "typo" / "m.json"
    for extra in ([], ["--no-auth", "--host", "0.0.0.0"]):
        out = subprocess.run([sys.executable, "-m", "naia_memory.cli", "--store", str(typo), "serve", "rest", *extra],
                             cwd=REPO, capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode == 2 and not typo.parent.exists(), out.stderr


def test_only_an_unknown_memory_is_a_404_a_stray_key_error_is_a_500(memory, monkeypatch):
    app = create_app(memory, ServerSettings(tokens={TOKEN: None}))
    with TestClient(app, raise_server_exceptions=False) as c:
        assert c.get("/memories/nope", params={"user_id": "alice"}, headers=AUTH).status_code == 404

        def broken(**_kw):
            raise KeyError("a bug deep inside")  # not "no such memory": must not read as one

        monkeypatch.setattr(memory, "memories", broken)
        r = c.get("/memories", params={"user_id": "alice"}, headers=AUTH)
        assert r.status_code == 500 and "a bug deep inside" not in r.text


def test_only_a_refused_value_is_a_400_a_stray_value_error_is_a_500(memory, monkeypatch):
    """The engine's boundary checks raise InvalidInput (a ValueError); a
    ValueError from anywhere else (numpy, a parser) is a bug, not the caller's."""
    app = create_app(memory, ServerSettings(tokens={TOKEN: None}))
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.post("/search", json={"query": "   ", "user_id": "alice"}, headers=AUTH)
        assert r.status_code in (400, 422), r.text  # a blank query is refused at the door

        def broken(**_kw):
            raise ValueError("shapes (3,) and (4,) not aligned")

        monkeypatch.setattr(memory, "recall", broken)
        r = c.post("/search", json={"query": "where do I live", "user_id": "alice"}, headers=AUTH)
        assert r.status_code == 500 and "not aligned" not in r.text


def test_every_refusal_at_the_door_is_an_invalid_input():
    from naia_memory import InvalidInput
    from naia_memory.contract import InvalidArgument
    from naia_memory.validate import check_content

    with pytest.raises(InvalidInput):
        check_content("")
    assert issubclass(InvalidInput, ValueError) and issubclass(InvalidArgument, InvalidInput)


def test_a_model_server_down_is_a_502_and_an_add_with_infer_is_not_a_failed_add(tmp_path, tokenizer):
    from naia_memory.llm import LLMFactExtractor, OpenAICompatChat
    from naia_memory.validate import unused_loopback_port

    down = OpenAICompatChat(base_url=f"http://127.0.0.1:{unused_loopback_port()}/v1", model="m", timeout_s=2)
    m = MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer,
                     fact_extractor=LLMFactExtractor(down))
    with TestClient(create_app(m, ServerSettings(tokens={TOKEN: None}, rate=1000, burst=1000))) as c:
        r = c.post("/memories", headers=AUTH, json={"user_id": "alice", "infer": True,
                                                    "messages": [{"content": "I live in Gwangju with my wife Minji"}]})
        # the turn is stored whatever the model does: a 500 here made clients retry and store it twice
        assert r.status_code == 200 and r.json()["results"][0]["event"] == "ADD"
        assert "turns are stored" in r.json()["consolidation_error"]
        r = c.post("/consolidate", headers=AUTH, json={"user_id": "alice"})
        assert r.status_code == 502 and "model server failed" in r.json()["detail"]
    assert [h.content for h in m.memories(project="alice")] == ["I live in Gwangju with my wife Minji"]
    m.close()
