"""The stores walk their records in the order they came in, in the process
and after a reopen, whatever was removed (session 40's review): a removal
moves the last row into the freed one, and the JSON store wrote its snapshot
in row order, so after a forget and a reopen a user's question and the
assistant's answer said at the same second traded places, and the next turn
was indexed with the question as the turn before it (SQLite, reading by
rowid, with the answer)."""
from __future__ import annotations

from datetime import timedelta

import pytest

from naia_memory import EngineConfig, MemorySystem
from naia_memory.embedders import HashingEmbedder

from .conftest import naia_store

KINDS = ["json", "sqlite", "qdrant"]


def _m(kind, folder, tokenizer) -> MemorySystem:
    if kind == "qdrant":
        pytest.importorskip("qdrant_client")
    if kind == "sqlite":
        pytest.importorskip("apsw")
    return MemorySystem(store=naia_store(kind, folder), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer,
                        config=EngineConfig())


@pytest.mark.parametrize("kind", KINDS)
def test_after_a_forget_and_a_reopen_the_turn_before_is_the_one_said_last(kind, tmp_path, tokenizer, t0):
    m = _m(kind, tmp_path, tokenizer)
    first = m.encode(content="I adopted a cat named Mochi yesterday.", session="s", now=t0).id
    m.encode(content="Can you recommend a good brand of cat food for kittens?", session="s", now=t0 + timedelta(minutes=1))
    m.encode(content="Royal Canin Kitten and Hill's Science Diet Kitten are both good for kittens.", role="assistant",
             session="s", now=t0 + timedelta(minutes=1))
    m.encode(content="My sister also has a cat.", session="other", now=t0 + timedelta(minutes=1))
    assert m.forget(memory_id=first) == 1
    in_process = [r.content for r in m.store.records()]
    m.close()
    m = _m(kind, tmp_path, tokenizer)
    assert [r.content for r in m.store.records()] == in_process == [
        "Can you recommend a good brand of cat food for kittens?",
        "Royal Canin Kitten and Hill's Science Diet Kitten are both good for kittens.",
        "My sister also has a cat."]
    nxt = m.encode(content="Which one of those has more protein for a growing kitten?", session="s",
                   now=t0 + timedelta(minutes=2)).id
    assert m.store.get(nxt).metadata["context"].startswith("Royal Canin Kitten")
    m.close()
