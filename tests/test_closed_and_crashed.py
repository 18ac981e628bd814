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


def test_a_consolidation_whose_journal_append_fails_is_made_again_edges_and_all(tmp_path, monkeypatch):
    """Until session 37 the failed call's facts and edges stayed in the
    process and the next commit wrote them; now the next call reads the file
    again, the turns wait, and the next consolidation makes the same facts
    and edges (held here to what a crash copy of the file reads)."""
    p = str(tmp_path / "s.json")
    m = MemorySystem(store=LocalStore(p), embedder=HashingEmbedder(dim=32))
    m.encode(content="I live in Seoul and work at Naver as an engineer", now=T0)
    m.encode(content="My dog Bori likes walking in Hangang park", now=T0 + timedelta(seconds=1))

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal, "_durable", full)
    with pytest.raises(OSError):
        m.consolidate(now=T0 + timedelta(minutes=1))
    monkeypatch.undo()
    assert m.store.graph.edges  # consolidation put edges in the graph, in the process only
    m.encode(content="My sister studies medicine in Daegu", now=T0 + timedelta(minutes=2))  # commits fine
    assert not m.store.graph.edges and not m.facts() and not m.audit_log(op=["ADD", "UPDATE"])
    m.consolidate(now=T0 + timedelta(minutes=3))
    assert m.store.graph.edges and len(m.facts()) >= 3
    s = LocalStore(crash_copy(str(tmp_path), "s.json", tmp_path / "crash"))
    try:
        assert dict(s.graph.edges) == dict(m.store.graph.edges)
        assert sorted(r.content for r in s.records()) == sorted(r.content for r in m.store.records())
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


def test_a_consolidation_whose_judge_fails_part_way_logs_what_it_wrote(tmp_path):
    """The model answers once, then its server is gone: the fact already made
    is in the store, so its decision is in the audit log too (it used to be
    written by the next commit with no log entry saying where it came from)."""
    from naia_memory.llm.client import LLMError, ScriptedLLM
    from naia_memory.llm.contradiction_filter import LLMContradictionFilter

    p = str(tmp_path / "s.json")
    judge = LLMContradictionFilter(ScriptedLLM(['{"op":"UPDATE","target":1}']))
    m = MemorySystem(store=LocalStore(p), embedder=HashingEmbedder(dim=64), contradiction_filter=judge)
    for i, t in enumerate(["I live in Seoul", "I live in Busan now", "I live in Daegu now"]):
        m.encode(content=t, now=T0 + timedelta(seconds=i))
    with pytest.raises(LLMError):
        m.consolidate(now=T0 + timedelta(seconds=5))
    m.close()
    s = LocalStore(p)
    try:
        facts = [r for r in s.records() if r.kind.value == "fact"]
        assert facts, "the scenario needs a fact written before the judge failed"
        logged = {i for e in s.log() for i in (e.get("fact_id"), e.get("target_id")) if i}
        assert not [(f.content, f.status) for f in facts if f.id not in logged], s.log()
        waiting = [r for r in s.records() if r.kind.value == "episode" and not r.consolidated]
        assert waiting, "the turns the judge did not finish wait for the next consolidation"
    finally:
        s.close()


def test_edit_on_a_shared_sqlite_file_sees_the_other_process_edit(tmp_path):
    """Two systems over one SQLite file (two processes, as far as SQLite can
    tell): the second edit of one fact is refused, not a fork into two
    current versions."""
    from naia_memory.contract import InvalidInput
    from naia_memory.stores.sqlite_store import SqliteStore

    p = str(tmp_path / "s.db")
    emb = HashingEmbedder(dim=64)
    a = MemorySystem(store=SqliteStore(p), embedder=emb)
    a.encode(content="I live in Seoul", now=T0)
    a.consolidate(now=T0 + timedelta(seconds=1))
    fid = a.facts()[0].id
    b = MemorySystem(store=SqliteStore(p), embedder=emb)
    b.edit(memory_id=fid, content="I live in Busan", now=T0 + timedelta(seconds=2))
    with pytest.raises(InvalidInput, match="superseded"):
        a.edit(memory_id=fid, content="I live in Daegu", now=T0 + timedelta(seconds=3))
    a.close()
    b.close()
    c = MemorySystem(store=SqliteStore(p), embedder=emb)
    try:
        assert [h.content for h in c.facts()] == ["I live in Busan"]
    finally:
        c.close()


def test_reindex_on_a_shared_sqlite_file_covers_the_other_process_rows(tmp_path):
    from naia_memory.stores.sqlite_store import SqliteStore

    p = str(tmp_path / "s.db")
    a = MemorySystem(store=SqliteStore(p), embedder=HashingEmbedder(dim=64))
    a.encode(content="I live in Seoul", now=T0)
    b = MemorySystem(store=SqliteStore(p), embedder=HashingEmbedder(dim=64))
    b.encode(content="My dog is named Bori", now=T0 + timedelta(seconds=1))
    assert a.reindex(HashingEmbedder(dim=32)) == 2
    a.close()
    b.close()
    s = SqliteStore(p)  # the file used to stop opening: "record ... has a 64-d vector, store is 32-d"
    try:
        assert sorted(r.content for r in s.records()) == ["I live in Seoul", "My dog is named Bori"]
    finally:
        s.close()


def test_no_other_process_adds_a_row_while_a_sqlite_store_is_reindexed(tmp_path):
    """The rows are read, embedded (slow, with a real model), then the file's
    dimension switches: a row another process added in between stayed on the
    old dimension and the file stopped opening. Now the re-embedding holds the
    write lock: the other writer waits (here: gives up after its busy timeout)."""
    from naia_memory.stores.sqlite_store import SqliteStore

    p = str(tmp_path / "s.db")
    a = MemorySystem(store=SqliteStore(p), embedder=HashingEmbedder(dim=64))
    a.encode(content="I live in Seoul", now=T0)
    b = MemorySystem(store=SqliteStore(p, busy_timeout_ms=50), embedder=HashingEmbedder(dim=64))
    refused = []

    class Slow(HashingEmbedder):
        def embed_passages(self, texts):
            try:  # the other process writes while this one embeds
                b.encode(content="My dog is named Bori", now=T0 + timedelta(seconds=1))
            except Exception as e:  # noqa: BLE001 - SQLite's busy error, whatever its wrapping
                refused.append(e)
            return super().embed_passages(texts)

    a.reindex(Slow(dim=32))
    assert refused, "the other writer got in while the rows were being re-embedded"
    a.close()
    b.close()
    s = SqliteStore(p)
    try:
        assert [r.content for r in s.records()] == ["I live in Seoul"] and s.meta()["embedder"]["dim"] == 32
    finally:
        s.close()


def test_a_closed_lite_provider_and_a_closed_qdrant_store_refuse_clearly(tmp_path, tokenizer, t0):
    # session 33: a closed lite answered recall from its cache; a closed Qdrant store failed with an AttributeError
    from naia_memory.providers.registry import create_provider
    from naia_memory.stores.port import StoreError

    lite = create_provider("lite", path=str(tmp_path / "lite.sqlite"), embedder=HashingEmbedder(dim=16))
    lite.encode(content="My cat Quorvex sleeps on the piano", now=t0)
    assert lite.recall(query="cat piano", now=t0).hits
    lite.close()
    for call in (lambda: lite.recall(query="cat piano", now=t0), lambda: lite.encode(content="x y z", now=t0),
                 lambda: lite.forget(project="default")):
        with pytest.raises(RuntimeError, match="closed"):
            call()
    pytest.importorskip("qdrant_client")
    from naia_memory.stores.qdrant_store import QdrantStore

    store = QdrantStore(path=str(tmp_path / "q"))
    store.close()
    for call in (store.commit, lambda: store.backup_to(str(tmp_path / "b"))):
        with pytest.raises(StoreError, match="closed"):
            call()


@pytest.mark.parametrize("bad", [{"memory_id": ""}, {"project": ""}, {"memory_id": "x", "project": "p"}])
def test_lite_forget_refuses_what_the_engine_refuses(tmp_path, bad):
    from naia_memory import InvalidInput
    from naia_memory.providers.registry import create_provider

    lite = create_provider("lite", path=str(tmp_path / "lite.sqlite"), embedder=HashingEmbedder(dim=16))
    with pytest.raises(InvalidInput):
        lite.forget(**bad)
    lite.close()


def test_a_new_journal_file_has_its_folder_synced_once(tmp_path, monkeypatch):
    """The journal's name must survive a power cut too: the folder is synced
    when an append creates the file (the first line after a compaction), not
    on every append."""
    synced: list = []
    monkeypatch.setattr(journal, "fsync_dir", lambda folder: synced.append(folder))
    j = Journal(tmp_path / "sub" / "s.json.journal")
    j.append(journal.Batch(1, [{"op": "x"}]))
    j.append(journal.Batch(2, [{"op": "y"}]))
    assert synced == [tmp_path / "sub"]
    j.clear()
    j.append(journal.Batch(3, [{"op": "z"}]))
    assert synced == [tmp_path / "sub", tmp_path / "sub"]
    assert [b.seq for b in Journal(tmp_path / "sub" / "s.json.journal").read()] == [3]
