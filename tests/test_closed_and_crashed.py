"""A closed system writes nothing, and what a crash or a failed write leaves
is put right on the next open (found by a review in session 32; each test
fails on the code before it)."""
from __future__ import annotations

import errno
import os
import shutil
from datetime import datetime, timedelta, timezone

import pytest

import naia_memory.stores.journal as journal
from naia_memory import LocalStore, MemorySystem
from naia_memory.embedders import HashingEmbedder
from naia_memory.stores.journal import Journal
from naia_memory.stores.port import StoreError

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def crash_copy(src_dir, name: str, dst_dir) -> str:
    """The store's files as a crash would leave them now (no close), in another folder."""
    os.makedirs(dst_dir, exist_ok=True)
    for f in os.listdir(src_dir):
        if f.startswith(name) and not f.endswith(".lock"):
            shutil.copy(os.path.join(src_dir, f), dst_dir)
    return os.path.join(dst_dir, name)


def _closed_and_live(tmp_path):
    p = str(tmp_path / "s.json")
    emb = HashingEmbedder(dim=32)
    m1 = MemorySystem(store=LocalStore(p), embedder=emb)
    r = m1.encode(content="I live in Seoul and work at Naver", now=T0)
    m1.close()
    m2 = MemorySystem(store=LocalStore(p), embedder=emb)  # the store's owner now
    m2.encode(content="My dog is named Bori", now=T0 + timedelta(minutes=1))
    return p, emb, m1, m2, r.id


@pytest.mark.parametrize("call", ["edit", "backup", "apply_decay", "reindex"])
def test_a_closed_system_refuses_every_write(tmp_path, call):
    p, emb, m1, m2, rid = _closed_and_live(tmp_path)
    try:
        with pytest.raises(RuntimeError, match="closed"):
            if call == "edit":
                m1.edit(memory_id=rid, content="I live in Busan", now=T0 + timedelta(minutes=2))
            elif call == "backup":
                m1.backup(path=str(tmp_path / "b.json"))
            elif call == "apply_decay":
                m1.apply_decay(now=T0 + timedelta(days=3000))
            else:
                m1.reindex(HashingEmbedder(dim=16))
        m2.encode(content="My sister studies medicine", now=T0 + timedelta(minutes=3))
        q = crash_copy(str(tmp_path), "s.json", tmp_path / "crash")  # the live system's process dies here
        s = LocalStore(q)
        contents = sorted(r.content for r in s.records())
        s.close()
        assert contents == ["I live in Seoul and work at Naver", "My dog is named Bori", "My sister studies medicine"]
    finally:
        m2.close()


def test_a_closed_store_refuses_to_commit_and_closes_once(tmp_path):
    s = LocalStore(tmp_path / "s.json")
    s.close()
    s.close()  # twice is fine
    for write in (s.commit, s.compact, lambda: s.backup_to(str(tmp_path / "b.json"))):
        with pytest.raises(StoreError, match="closed"):
            write()


def test_edges_survive_a_failed_journal_append(tmp_path, monkeypatch):
    p = str(tmp_path / "s.json")
    m = MemorySystem(store=LocalStore(p), embedder=HashingEmbedder(dim=32))
    m.encode(content="I live in Seoul and work at Naver as an engineer", now=T0)
    m.encode(content="My dog Bori likes walking in Hangang park", now=T0 + timedelta(seconds=1))

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal.os, "fsync", full)
    with pytest.raises(OSError):
        m.consolidate(now=T0 + timedelta(minutes=1))
    monkeypatch.undo()
    assert m.store.graph.edges  # consolidation put edges in the graph
    m.encode(content="My sister studies medicine in Daegu", now=T0 + timedelta(minutes=2))  # commits fine
    s = LocalStore(crash_copy(str(tmp_path), "s.json", tmp_path / "crash"))
    try:
        assert dict(s.graph.edges) == dict(m.store.graph.edges)
    finally:
        s.close()
        m.close()


class Crash(BaseException):
    pass


def test_a_crash_inside_forget_leaves_no_forgotten_words_after_reopening(tmp_path, monkeypatch):
    """forget rewrites the snapshot, then removes the journal: a crash between
    the two left a journal the snapshot already holds, with the forgotten
    words in it, kept by every later commit."""
    p = str(tmp_path / "s.json")
    emb = HashingEmbedder(dim=16)
    m = MemorySystem(store=LocalStore(p), embedder=emb)
    m.encode(content="I live in Seoul", now=T0)
    r = m.encode(content="My secret password is hunter2", now=T0 + timedelta(seconds=1))
    m.encode(content="I like kimchi stew", now=T0 + timedelta(seconds=2))

    def crash(self):
        raise Crash()

    monkeypatch.setattr(Journal, "clear", crash)  # the process dies right after the snapshot's rename
    with pytest.raises(Crash):
        m.forget(memory_id=r.id)
    monkeypatch.undo()
    q = crash_copy(str(tmp_path), "s.json", tmp_path / "crash")
    m2 = MemorySystem(store=LocalStore(q), embedder=emb)
    try:
        assert sorted(x.content for x in m2.store.records()) == ["I like kimchi stew", "I live in Seoul"]
        m2.encode(content="I bought a bike", now=T0 + timedelta(seconds=3))
        for f in os.listdir(os.path.dirname(q)):
            with open(os.path.join(os.path.dirname(q), f), "rb") as fh:
                assert b"hunter2" not in fh.read(), f"forgotten words still in {f}"
    finally:
        m2.close()
