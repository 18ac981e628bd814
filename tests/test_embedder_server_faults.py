"""An embeddings server that misbehaves, for real, on loopback: bugs a review
found in session 34, each test failing on the code before it. A redirect
carried the API key to another host and its vectors were used; a server
sending a byte at a time was never timed out; an answer of any size was read
whole; a dropped connection, a body cut short or not UTF-8 escaped as a raw
Python error; vectors were placed by sorting their ``index`` (as text when
the server sent strings: the eleventh text got the second's vector) with
duplicates and gaps accepted; strings and booleans became numbers; the key
was in the repr; bad settings failed at the first call."""
from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import numpy as np
import pytest

from naia_memory import LocalStore, MemorySystem
from naia_memory.embedders import EmbedderError, HashingEmbedder, make_embedder

from .loopback_openai import send_json as send
from .test_llm_server_faults import drip, redirect_to, server

T0 = datetime(2026, 1, 1, 9, tzinfo=timezone.utc)
DIM = 8
REF = HashingEmbedder(dim=DIM)


def rows(texts: list[str], order=None, index=lambda i: i) -> dict:
    vecs = REF.embed_passages(texts)
    order = order or list(range(len(texts)))
    return {"data": [{"index": index(i), "embedding": vecs[i].tolist()} for i in order]}


def embedder(url: str, **kw):
    return make_embedder("openai", base_url=f"{url}/v1", model="m", dim=DIM, **kw)


def test_a_redirect_is_not_followed_and_the_key_goes_nowhere():
    with server(lambda h, b: send(h, 200, rows(b["input"]))) as (elsewhere, seen_elsewhere):
        with server(redirect_to(f"{elsewhere}/v1/embeddings", 307)) as (url, _):
            with pytest.raises(EmbedderError, match="redirect .* not followed"):
                embedder(url, api_key="sk-SECRET").embed_query("hello")
    assert seen_elsewhere == []  # nothing, and no key, reached the other host


def test_timeout_bounds_the_whole_answer_and_size_is_capped():
    with server(drip(lambda body: rows(body["input"]))) as (url, _):
        t = time.monotonic()
        with pytest.raises(EmbedderError, match="no complete answer within timeout_s"):
            embedder(url, timeout_s=0.5).embed_query("hello")
        assert time.monotonic() - t < 3
    with server(lambda h, b: send(h, 200, {**rows(b["input"]), "pad": "x" * 50_000})) as (url, _):
        with pytest.raises(EmbedderError, match="max_response_bytes"):
            embedder(url, max_response_bytes=10_000).embed_query("hello")


def test_every_transport_failure_is_an_embedder_error():
    def hang_up(h, body):
        h.close_connection = True
        h.connection.close()

    def cut_short(h, body):
        h.send_response(200)
        h.send_header("Content-Length", "1000")
        h.end_headers()
        h.wfile.write(b'{"data": [')

    def not_utf8(h, body):
        raw = b'{"data": "\xff\xfe"}'
        h.send_response(200)
        h.send_header("Content-Length", str(len(raw)))
        h.end_headers()
        h.wfile.write(raw)

    for answer in (hang_up, cut_short, not_utf8):
        with server(answer) as (url, _):
            with pytest.raises(EmbedderError):
                embedder(url).embed_query("hello")


def test_vectors_go_to_the_text_their_index_names():
    texts = [f"text number {i}" for i in range(11)]
    backwards = list(range(10, -1, -1))
    with server(lambda h, b: send(h, 200, rows(b["input"], order=backwards))) as (url, _):
        got = embedder(url).embed_passages(texts)
    assert np.allclose(got, REF.embed_passages(texts), atol=1e-6)  # shuffled by the server, placed by index


@pytest.mark.parametrize("bad", [
    {"index": lambda i: str(i)},  # "10" sorted before "2" put vectors on the wrong texts
    {"index": lambda i: 0},  # every vector claims the first text
    {"index": lambda i: i + 5},  # out of range
    {"index": lambda i: bool(i)},
])
def test_an_index_that_is_not_each_text_once_is_refused(bad):
    texts = [f"text number {i}" for i in range(11)]
    with server(lambda h, b: send(h, 200, rows(b["input"], index=bad["index"]))) as (url, _):
        with pytest.raises(EmbedderError, match="index"):
            embedder(url).embed_passages(texts)


@pytest.mark.parametrize("value", ["0.5", True, None])
def test_a_value_that_is_not_a_number_is_refused(value):
    answer = {"data": [{"index": 0, "embedding": [value] * DIM}]}
    with server(lambda h, b: send(h, 200, answer)) as (url, _):
        with pytest.raises(EmbedderError, match="not 8 numbers"):
            embedder(url).embed_query("hello")


def test_a_vector_of_zeros_is_refused():
    with server(lambda h, b: send(h, 200, {"data": [{"index": 0, "embedding": [0.0] * DIM}]})) as (url, _):
        with pytest.raises(EmbedderError, match="zeros"):
            embedder(url).embed_query("hello")


def test_the_key_is_not_in_a_repr_and_can_come_from_the_environment(monkeypatch):
    e = make_embedder("openai", base_url="http://127.0.0.1:9/v1", model="m", dim=DIM, api_key="sk-SECRET")
    assert "sk-SECRET" not in repr(e)
    monkeypatch.setenv("NAIA_TEST_EMBED_KEY", "sk-FROM-ENV")
    with server(lambda h, b: send(h, 200, rows(b["input"]))) as (url, seen):
        embedder(url, api_key_env="NAIA_TEST_EMBED_KEY").embed_query("hello")
    assert seen[-1]["auth"] == "Bearer sk-FROM-ENV"
    monkeypatch.delenv("NAIA_TEST_EMBED_KEY")
    with pytest.raises(ValueError, match="NAIA_TEST_EMBED_KEY is not set"):
        embedder("http://127.0.0.1:9", api_key_env="NAIA_TEST_EMBED_KEY")


@pytest.mark.parametrize("bad", [{"timeout_s": 0}, {"timeout_s": float("nan")}, {"timeout_s": -1}, {"batch_size": 0},
                                 {"dim": 0}, {"base_url": "file:///etc/passwd"}])
def test_bad_settings_are_refused_when_the_embedder_is_made(bad):
    spec = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "dim": DIM, **bad}
    with pytest.raises(ValueError):
        make_embedder("openai", **spec)


def test_a_failed_embedding_leaves_the_store_as_it_was(tmp_path, tokenizer):
    calls = []

    def flaky(h, body):
        calls.append(1)
        if len(calls) > 1:
            h.close_connection = True
            h.connection.close()
        else:
            send(h, 200, rows(body["input"]))

    with server(flaky) as (url, _):
        m = MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=embedder(url), tokenizer=tokenizer)
        m.encode(content="I adopted a dog named Kong", now=T0)
        before = ([(r.id, r.content) for r in m.store.records()], len(m.store.log()))
        with pytest.raises(EmbedderError):
            m.encode(content="I moved to Busan", now=T0)
        assert ([(r.id, r.content) for r in m.store.records()], len(m.store.log())) == before
