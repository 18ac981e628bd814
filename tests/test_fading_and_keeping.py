"""What fades and what is kept, at its edges: bugs a review found in session
33, each test failing on the code before it. A recall dated before the last
one moved the last use back (one more recall, a weaker memory) and revived
a memory before it had faded; a correction inherited the faded last use of
what it corrected (archived as it was made) and its archive marks; "do you
remember that movie?" or "I don't remember that restaurant" pinned a turn
for good; a fact drawn from a turn the user asked to keep faded."""
from __future__ import annotations

from datetime import timedelta

import pytest

from naia_memory import LocalStore, MemorySystem
from naia_memory.cognition.importance import asks_to_keep
from naia_memory.embedders import HashingEmbedder
from naia_memory.records import ARCHIVED


def _m(tmp_path, tokenizer) -> MemorySystem:
    return MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)


def test_a_recall_dated_before_the_last_never_weakens_nor_revives_early(tmp_path, tokenizer, t0):
    m = _m(tmp_path, tokenizer)
    rid = m.encode(content="We went hiking at Bukhansan with my sister", now=t0).id
    m.recall(query="hiking Bukhansan", top_k=1, now=t0 + timedelta(days=150))
    before = m.strength(rid, now=t0 + timedelta(days=300))
    m.recall(query="hiking Bukhansan", top_k=1, now=t0 + timedelta(days=1))  # out of order
    assert m.store.get(rid).last_accessed == t0 + timedelta(days=150)
    assert m.strength(rid, now=t0 + timedelta(days=300)) >= before
    assert m.apply_decay(now=t0 + timedelta(days=2000)) == 1 and m.store.get(rid).status == ARCHIVED
    archived_at = m.store.get(rid).metadata["archived_at"]
    m.recall(query="hiking Bukhansan", top_k=1, now=t0 + timedelta(days=400))  # a look dated before it faded
    r = m.store.get(rid)
    assert r.status == ARCHIVED and "revived_at" not in r.metadata and r.metadata["archived_at"] == archived_at
    m.close()


def test_a_correction_starts_fresh_without_the_old_versions_archive_marks(tmp_path, tokenizer, t0):
    m = _m(tmp_path, tokenizer)
    rid = m.encode(content="My gym is the one near Gangnam station", now=t0).id
    m.apply_decay(now=t0 + timedelta(days=2000))
    m.recall(query="my gym near Gangnam", top_k=1, now=t0 + timedelta(days=2001))  # revived
    assert "archived_at" in m.store.get(rid).metadata
    new = m.edit(memory_id=rid, content="My gym is the one near Yeoksam station", now=t0 + timedelta(days=2100))
    n = m.store.get(new)
    assert n.last_accessed == t0 + timedelta(days=2100)
    assert not {"archived_at", "strength_at_archive", "revived_at"} & set(n.metadata)
    assert m.strength(new, now=t0 + timedelta(days=2100)) == pytest.approx(1.0)
    assert m.apply_decay(now=t0 + timedelta(days=2100)) == 0  # archived the moment it was made, before
    m.close()


@pytest.mark.parametrize("text", ["I don't remember that restaurant's name but I love Thai food",
                                  "Do you remember that movie we talked about?", "I can never remember this word in Spanish",
                                  "너 그거 기억해?", "I never forget a face", "I'll remember that, thanks", "기억 안 나 그 식당 이름"])
def test_remembering_said_or_asked_is_not_a_request_to_keep(text):
    assert not asks_to_keep(text)


@pytest.mark.parametrize("text", ["Remember this. My locker code is 4812.", "기억해 줘. 내 사물함 비밀번호는 4812야.",
                                  "Please remember that I'm allergic to peanuts", "Don't forget my birthday is May 3",
                                  "잊지 마, 나 땅콩 알레르기 있어", "내 전화번호 기억해둬"])
def test_a_request_to_keep_is_one(text):
    assert asks_to_keep(text)


def test_what_is_drawn_from_a_turn_the_user_asked_to_keep_is_kept_too(tmp_path, tokenizer, t0):
    m = _m(tmp_path, tokenizer)
    m.encode(content="Remember this. My locker code is 4812.", now=t0)
    m.encode(content="Do you remember that movie we talked about?", now=t0 + timedelta(minutes=1))
    m.consolidate(now=t0 + timedelta(minutes=2))
    classes = {r.content: r.memory_class for r in m.store.records()}
    assert classes["My locker code is 4812."] == "permanent"
    assert classes.get("Do you remember that movie we talked about?") != "permanent"
    m.apply_decay(now=t0 + timedelta(days=3000))
    assert m.store.get(next(r.id for r in m.store.records() if r.content == "My locker code is 4812.")).status == "active"
    m.close()


@pytest.mark.parametrize("text", ["Remember this, okay? My locker code is 4812.", "Can you remember this for me: my locker code is 4812.",
                                  "Please remember that I always forget my keys, so remind me.", "이거 꼭 기억해, 알았지?"])
def test_a_polite_or_tagged_request_to_keep_is_one(text):
    assert asks_to_keep(text)
