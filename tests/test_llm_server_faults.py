"""A model server that misbehaves, for real, on loopback: bugs a review found
in session 33, each test failing on the code before it. A redirect carried
the API key to another host and its answer was read as the model's; a
dropped connection or a timeout escaped as a plain Python error (and ended
a whole consolidation where an HTTP 500 was logged and passed); a server
sending a byte at a time was never timed out; content given as parts or a
number crashed; one turn the server always refused held back every later
turn for good; unparseable answers were asked again and stored whole
forever; "no facts" left no trace; bad settings failed inside consolidate."""
from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

import pytest

from naia_memory import DecisionOp, EngineConfig, LocalStore, MemorySystem
from naia_memory.embedders import make_embedder
from naia_memory.llm import LLMError, LLMFactExtractor, OpenAICompatChat
from naia_memory.providers.naia import build_llm

from .loopback_openai import send_json as send

T0 = datetime(2026, 1, 1, 9, tzinfo=timezone.utc)
FACTS = json.dumps({"facts": [{"content": "I work at Google", "attribute": "job"}]})


@contextmanager
def server(answer) -> Iterator[tuple[str, list]]:
    """``answer(handler, body)`` writes the reply; every request is recorded."""
    seen: list = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append({"path": self.path, "auth": self.headers.get("Authorization")})
            answer(self, json.loads(body))

        def do_GET(self):
            seen.append({"path": self.path, "auth": self.headers.get("Authorization")})
            send(self, 200, {"choices": [{"message": {"content": '{"facts": []}'}}]})

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", seen
    finally:
        srv.shutdown()
        srv.server_close()


def chat(content) -> dict:
    return {"choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}


def memory(tmp_path, tokenizer, url: str, **client) -> MemorySystem:
    return MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=make_embedder("hashing", dim=64), tokenizer=tokenizer,
                        fact_extractor=LLMFactExtractor(OpenAICompatChat(base_url=f"{url}/v1", model="m", **client)),
                        config=EngineConfig(undecided_retries=3))


def redirect_to(target: str, code: int = 302):
    """A server answer that sends the client elsewhere."""
    def moved(h, body):
        h.send_response(code)
        h.send_header("Location", target)
        h.send_header("Content-Length", "0")
        h.end_headers()
    return moved


def test_a_redirect_is_not_followed_and_the_key_goes_nowhere(tmp_path, tokenizer):
    with server(lambda h, b: None) as (elsewhere, seen_elsewhere):
        with server(redirect_to(f"{elsewhere}/steal")) as (url, _):
            m = memory(tmp_path, tokenizer, url, api_key="sk-SECRET")
            m.encode(content="I work at Google", now=T0)
            with pytest.raises(LLMError, match="redirect .* not followed"):
                m.consolidate(now=T0 + timedelta(minutes=1))
            assert seen_elsewhere == []  # urllib resent the request, key and all, to the named host
            assert m.consolidator.waiting(T0 + timedelta(minutes=2))  # not taken as "no facts": still waiting
            m.close()


def test_a_dropped_connection_is_an_llm_error_naming_the_server():
    def hang_up(h, body):
        h.close_connection = True
        h.connection.close()

    with server(hang_up) as (url, _):
        with pytest.raises(LLMError, match="cannot get an answer from http://127.0.0.1"):
            OpenAICompatChat(base_url=f"{url}/v1", model="m").complete([{"role": "user", "content": "hi"}])


def drip(answer):
    """A server answer sent a byte every 50 ms: never idle for a timeout, never done within one."""
    def send_slowly(h, body):
        raw = json.dumps(answer(body)).encode()
        h.send_response(200)
        h.send_header("Content-Length", str(len(raw)))
        h.end_headers()
        try:
            for b in raw:
                h.wfile.write(bytes([b]))
                h.wfile.flush()
                time.sleep(0.05)
        except OSError:
            pass
    return send_slowly


def test_timeout_bounds_the_whole_answer_not_each_read():
    with server(drip(lambda body: chat(FACTS))) as (url, _):
        t = time.monotonic()
        with pytest.raises(LLMError, match="no complete answer within timeout_s"):
            OpenAICompatChat(base_url=f"{url}/v1", model="m", timeout_s=0.5).complete([{"role": "user", "content": "hi"}])
        assert time.monotonic() - t < 3


def test_an_answer_past_the_size_limit_is_refused():
    with server(lambda h, b: send(h, 200, chat("x" * 50_000))) as (url, _):
        with pytest.raises(LLMError, match="max_response_bytes"):
            OpenAICompatChat(base_url=f"{url}/v1", model="m", max_response_bytes=10_000).complete([{"role": "user", "content": "hi"}])


def test_content_parts_are_read_and_other_shapes_are_the_servers_failure():
    parts = [{"type": "text", "text": FACTS[:10]}, {"type": "text", "text": FACTS[10:]}]
    with server(lambda h, b: send(h, 200, chat(parts))) as (url, _):
        assert OpenAICompatChat(base_url=f"{url}/v1", model="m").complete([]) == FACTS
    with server(lambda h, b: send(h, 200, chat(42))) as (url, _):
        with pytest.raises(LLMError, match="neither text nor text parts"):
            OpenAICompatChat(base_url=f"{url}/v1", model="m").complete([])
    refused = {"choices": [{"message": {"content": None, "refusal": "I cannot help with that."}}]}
    with server(lambda h, b: send(h, 200, refused)) as (url, _):
        with pytest.raises(LLMError, match="refused: I cannot help"):
            OpenAICompatChat(base_url=f"{url}/v1", model="m").complete([])


def test_a_turn_the_server_refuses_holds_back_no_other_and_is_given_up_on(tmp_path, tokenizer):
    def answer(h, body):
        if "Lisbon" in body["messages"][-1]["content"]:
            send(h, 400, {"error": {"message": "maximum context length is 512 tokens"}})
        else:
            send(h, 200, chat(FACTS))

    with server(answer) as (url, _):
        m = memory(tmp_path, tokenizer, url)
        m.encode(content="a very long story about Lisbon", now=T0)
        m.encode(content="I work at Google", now=T0 + timedelta(seconds=1))
        ops = []
        for i in range(3):
            rep = m.consolidate(now=T0 + timedelta(minutes=1 + i))
            ops.append([(d.op, d.reason.split(":")[0]) for d in rep.decisions])
        assert [f.content for f in m.facts()] == ["I work at Google"]
        assert ops[0][0] == (DecisionOp.UNDECIDED, "model refused this turn")
        assert ops[2][-1] == (DecisionOp.SKIP, "given up after 3 undecided answers")
        assert not m.consolidator.waiting(T0 + timedelta(hours=1))
        m.close()


def test_no_facts_from_the_model_is_a_logged_decision_with_its_answer(tmp_path, tokenizer):
    with server(lambda h, b: send(h, 200, chat('{"facts": []}'))) as (url, _):
        m = memory(tmp_path, tokenizer, url)
        m.encode(content="how are you today?", now=T0)
        rep = m.consolidate(now=T0 + timedelta(minutes=1))
        assert [(d.op, d.reason, d.raw) for d in rep.decisions] == [
            (DecisionOp.SKIP, "not a fact: the model found none", '{"facts": []}')]
        assert m.audit_log()[-1]["reason"] == "not a fact: the model found none"
        m.close()


def test_an_unparseable_answer_is_logged_by_its_start_and_asked_a_bounded_number_of_times(tmp_path, tokenizer):
    with server(lambda h, b: send(h, 200, chat("no JSON here " * 100_000))) as (url, seen):
        m = memory(tmp_path, tokenizer, url)
        m.encode(content="I work at Google", now=T0)
        for i in range(5):
            m.consolidate(now=T0 + timedelta(minutes=1 + i))
        assert len(seen) == 3  # undecided_retries, then given up
        assert max(len(e.get("raw") or "") for e in m.audit_log()) < 25_000
        m.close()


@pytest.mark.parametrize("bad", [{"timeout_s": -1}, {"timeout_s": "30"}, {"timeout_s": float("nan")},
                                 {"max_tokens": 0}, {"max_tokens": "lots"}])
def test_bad_client_settings_are_refused_when_the_client_is_made(bad):
    with pytest.raises(ValueError, match="timeout_s|max_tokens"):
        build_llm({"base_url": "http://127.0.0.1:9/v1", "model": "m", **bad})


def test_the_key_is_not_in_a_repr():
    c = OpenAICompatChat(base_url="http://127.0.0.1:9/v1", model="m", api_key="sk-SECRET")
    assert "sk-SECRET" not in repr(c) and "sk-SECRET" not in repr(LLMFactExtractor(c))


def test_a_server_refusing_every_turn_stops_the_run_and_gives_up_nothing(tmp_path, tokenizer):
    # a setting the server rejects (an unknown model, a parameter) is not the turns' fault
    with server(lambda h, b: send(h, 400, {"error": {"message": "Unsupported parameter: 'max_tokens'"}})) as (url, _):
        m = memory(tmp_path, tokenizer, url)
        m.encode(content="I work at Google", now=T0)
        m.encode(content="I live in Lisbon", now=T0 + timedelta(seconds=1))
        for i in range(5):
            with pytest.raises(LLMError, match="refused every turn"):
                m.consolidate(now=T0 + timedelta(minutes=1 + i))
        assert len(m.consolidator.waiting(T0 + timedelta(hours=1))) == 2 and m.audit_log() == []
        m.close()


def test_an_address_that_is_not_http_is_refused_when_the_client_is_made():
    with pytest.raises(ValueError, match="http"):
        OpenAICompatChat(base_url="file:///etc/passwd", model="m")
