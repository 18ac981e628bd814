"""A conversation continued after its store was reopened carries the turn
before, as it would have without the reopen (session 38). Until then the
turn before lived in the process only: the first answer after a server
restarted was indexed without the question it answered."""
from __future__ import annotations

from datetime import timedelta

import pytest

from naia_memory import EngineConfig, MemorySystem
from naia_memory.embedders import HashingEmbedder

from .conftest import naia_store

QUESTION = "Which city did you move to last spring, and do you like it there?"


def _open(tmp_path, tokenizer, kind="json") -> MemorySystem:
    return MemorySystem(store=naia_store(kind, tmp_path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer,
                        config=EngineConfig())


def _answer_after(tmp_path, tokenizer, t0, kind: str, reopen: bool, forget_question: bool = False):
    m = _open(tmp_path, tokenizer, kind)
    m.encode(content="I adopted a cat named Miso", session="other", now=t0)
    asked = m.encode(content=QUESTION, role="assistant", session="chat", now=t0 + timedelta(minutes=1))
    assert asked.stored
    m.encode(content="I like jazz", session="other", now=t0 + timedelta(minutes=2))  # another conversation in between
    if forget_question:
        m.forget(memory_id=asked.id)
    if reopen:
        m.close()
        m = _open(tmp_path, tokenizer, kind)
    said = m.encode(content="I moved to Busan and I love living by the sea", session="chat", now=t0 + timedelta(minutes=3))  # answers it
    rec = m.store.get(said.id)
    m.close()
    return rec.metadata.get("context"), rec.tokens


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_the_first_turn_after_a_reopen_is_indexed_with_the_turn_before(tmp_path, tokenizer, t0, kind):
    kept = _answer_after(tmp_path / "kept", tokenizer, t0, kind, reopen=False)
    reopened = _answer_after(tmp_path / "reopened", tokenizer, t0, kind, reopen=True)
    assert kept[0] == QUESTION and reopened == kept  # same context, same keywords


def test_a_forgotten_turn_is_not_carried_after_a_reopen(tmp_path, tokenizer, t0):
    context, _ = _answer_after(tmp_path, tokenizer, t0, "json", reopen=True, forget_question=True)
    assert context is None


def test_a_turn_the_gate_dropped_is_not_kept_to_carry_after_a_reopen(tmp_path, tokenizer, t0):
    m = _open(tmp_path, tokenizer)
    asked = m.encode(content=QUESTION, role="assistant", session="chat", now=t0)
    dropped = m.encode(content="음", session="chat", now=t0 + timedelta(minutes=1))
    assert asked.stored and not dropped.stored
    m.close()
    m = _open(tmp_path, tokenizer)  # the dropped turn is nowhere: the latest kept one is the turn before
    said = m.encode(content="I moved to Busan and I love living by the sea", session="chat", now=t0 + timedelta(minutes=2))
    assert m.store.get(said.id).metadata.get("context") == QUESTION
    assert not any("음" == r.content for r in m.store.records(None))
    m.close()


def test_an_edited_old_turn_is_not_the_turn_before_after_a_reopen(tmp_path, tokenizer, t0):
    m = _open(tmp_path, tokenizer)
    old = m.encode(content="I work as a pharmacist in a big hospital downtown", session="chat", now=t0)
    m.encode(content=QUESTION, role="assistant", session="chat", now=t0 + timedelta(minutes=1))
    m.edit(memory_id=old.id, content="I work as a pharmacist in a small clinic downtown")  # dated when the edit is made
    m.close()
    m = _open(tmp_path, tokenizer)
    said = m.encode(content="I moved to Busan and I love living by the sea", session="chat", now=t0 + timedelta(minutes=2))
    assert m.store.get(said.id).metadata.get("context") == QUESTION
    m.close()
