"""One store, several writers: bugs a review found in session 33, each test
failing on the code before it. A SQLite batch refused part-way held the
file's write lock until the process next committed; a batch that met
another process's id failed the same way on every retry; a write refused
for a busy file left its record in the process's memory; memory switched
on or off while a batch embedded broke the batch; a closed system answered
an empty recall_many; a JSON store opened through a symbolic link took a
lock of its own."""
from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from naia_memory import LocalStore, MemorySystem
from naia_memory.contract import Turn
from naia_memory.embedders import HashingEmbedder
from naia_memory.stores.lock import StoreInUseError

apsw = pytest.importorskip("apsw")
from naia_memory.stores.sqlite_store import SqliteStore  # noqa: E402


def _sqlite(path, tokenizer, embedder=None, busy_ms: int = 5000) -> MemorySystem:
    return MemorySystem(store=SqliteStore(path, busy_timeout_ms=busy_ms), embedder=embedder or HashingEmbedder(dim=64),
                        tokenizer=tokenizer)


class _FailingTokenizer:
    """The engine's tokenizer, failing from its n-th call on (a bad turn deep in a batch)."""

    def __init__(self, real, n: int):
        self.real, self.n, self.calls = real, n, 0

    def __getattr__(self, name):
        return getattr(self.real, name)

    def tokens(self, text):
        self.calls += 1
        if self.calls >= self.n:
            raise RuntimeError("tokenizer failed")
        return self.real.tokens(text)


def test_a_refused_sqlite_batch_lets_the_write_lock_go(tmp_path, tokenizer, t0):
    path = tmp_path / "m.sqlite"
    a = _sqlite(path, tokenizer)
    a.encode(content="the store's first turn", now=t0)
    a.encoder.tokenizer = _FailingTokenizer(a.encoder.tokenizer, 12)
    with pytest.raises(RuntimeError, match="tokenizer failed"):
        a.encode_many(turns=[Turn(content=f"I went to the market on day {i} with my friend", now=t0 + timedelta(days=i))
                             for i in range(1, 9)])
    assert len(a.store) == 1
    b = _sqlite(path, tokenizer, busy_ms=200)  # another writer gets in at once, not after the timeout
    assert b.encode(content="a second writer's turn about oranges", now=t0 + timedelta(days=20)).stored
    b.close()
    a.close()


class _OtherImporterMeanwhile(HashingEmbedder):
    """While this process embeds its batch, another writer commits the same turns (two importers of one history)."""

    def __init__(self, other, turns):
        super().__init__(dim=64)
        self.other, self.turns = other, turns

    def embed_passages(self, texts):
        if self.other is not None:
            other, self.other = self.other, None
            other.encode_many(turns=self.turns)
        return super().embed_passages(texts)


def test_a_batch_meeting_another_writers_ids_reads_them_and_stores_under_the_next(tmp_path, tokenizer, t0):
    path = tmp_path / "m.sqlite"
    shared = [Turn(content=f"We planned the trip to Jeju, part {i}", now=t0 + timedelta(hours=i)) for i in range(5)]
    b = _sqlite(path, tokenizer)
    emb = _OtherImporterMeanwhile(b, shared)
    a = _sqlite(path, tokenizer, embedder=emb)
    a.encode(content="the store's first turn", now=t0 - timedelta(days=1))
    results = a.encode_many(turns=[Turn(content="I live in Seoul near the river", now=t0), *shared])
    assert all(r.stored for r in results) and len({r.id for r in results}) == 6
    b.close()
    a.close()
    reopened = SqliteStore(path)
    assert len(reopened) == 1 + 5 + 6
    reopened.close()


def test_a_write_refused_for_a_busy_file_is_not_held_as_stored(tmp_path, tokenizer, t0):
    path = tmp_path / "m.sqlite"
    a = _sqlite(path, tokenizer, busy_ms=200)
    a.encode(content="I live in Seoul near the river", now=t0)
    holder = apsw.Connection(str(path))
    holder.execute("BEGIN IMMEDIATE")  # another process's long write
    with pytest.raises(StoreInUseError, match="nothing was written"):
        a.encode(content="my cat is named Tofu and she is three", now=t0 + timedelta(days=1))
    holder.execute("ROLLBACK")
    assert len(a.store) == 1  # the refused turn was held in memory: recalled, then every strengthening failed
    hits = a.recall(query="my cat Tofu", top_k=5, now=t0 + timedelta(days=2)).hits
    assert [h.content for h in hits] == ["I live in Seoul near the river"]
    a.close()
    holder.close()


class _HeldEmbedder(HashingEmbedder):
    def __init__(self):
        super().__init__(dim=64)
        self.started, self.go = threading.Event(), threading.Event()

    def embed_passages(self, texts):
        self.started.set()
        self.go.wait(10)
        return super().embed_passages(texts)


def test_incognito_switched_while_a_batch_embeds_waits_for_the_batch(tmp_path, tokenizer, t0):
    emb = _HeldEmbedder()
    m = MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=emb, tokenizer=tokenizer)
    m.set_incognito(session="B")
    out: dict = {}

    def importer():
        try:
            out["r"] = m.encode_many(turns=[Turn(content="I live in Seoul near the river", session="A", now=t0),
                                            Turn(content="My sister Mina lives in Busan", session="B",
                                                 now=t0 + timedelta(minutes=1))])
        except BaseException as e:  # noqa: BLE001 - the test reports it
            out["e"] = e

    t = threading.Thread(target=importer)
    t.start()
    assert emb.started.wait(10)
    host = threading.Thread(target=lambda: m.set_incognito(session="B", on=False))
    host.start()
    emb.go.set()
    t.join(10)
    host.join(10)
    assert "e" not in out, out.get("e")  # a RuntimeError (turn indexed as one text, embedded as another) before
    assert [(r.stored, r.reason) for r in out["r"]] == [(True, "stored"), (False, "incognito conversation")]
    assert m.encode(content="My sister Mina lives in Busan now", session="B", now=t0 + timedelta(hours=1)).stored
    m.close()


def test_a_closed_system_refuses_an_empty_recall_many_and_the_switches(tmp_path, tokenizer):
    m = MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    assert m.recall_many(queries=[]) == []
    m.close()
    for call in (lambda: m.recall_many(queries=[]), m.enable, m.disable, lambda: m.set_incognito(session="s")):
        with pytest.raises(RuntimeError, match="closed"):
            call()


def test_a_json_store_opened_through_a_symlink_is_the_same_store(tmp_path, tokenizer, t0):
    real = tmp_path / "real" / "m.json"
    a = MemorySystem(store=LocalStore(real), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    a.encode(content="I live in Seoul near the river", now=t0)
    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / "elsewhere" / "m.json"
    link.symlink_to(real)
    with pytest.raises(StoreInUseError):
        LocalStore(link)
    a.close()
    b = MemorySystem(store=LocalStore(link), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    b.encode(content="my cat is named Tofu", now=t0 + timedelta(days=1))
    b.store.compact()
    b.close()
    assert link.is_symlink()  # a rewrite replaces the file, not the link
    assert len(LocalStore(real)) == 2


def test_switching_memory_off_does_not_wait_behind_a_consolidation(tmp_path, tokenizer, t0):
    import time as _time

    m = MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    held = threading.Event()

    def busy():  # a consolidation holds the engine lock through a slow model call
        with m._lock:
            held.set()
            _time.sleep(1.5)

    t = threading.Thread(target=busy)
    t.start()
    assert held.wait(5)
    start = _time.perf_counter()
    m.disable()
    m.set_incognito(session="s")
    assert _time.perf_counter() - start < 1.0  # waited the whole call before
    t.join()
    m.close()


def test_a_failed_backup_leaves_no_gap_in_the_journal(tmp_path, tokenizer, t0, monkeypatch):
    import naia_memory.stores.json_store as js

    path = tmp_path / "m.json"
    m = MemorySystem(store=LocalStore(path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    m.encode(content="I live in Lisbon", now=t0)
    m.encode(content="I play bass in a band", now=t0 + timedelta(minutes=1))

    def full_disk(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(js, "atomic_write_chunks", full_disk)
    with pytest.raises(OSError):
        m.store.compact()
    monkeypatch.undo()
    m.encode(content="My sister is called Ana", now=t0 + timedelta(minutes=2))
    m.store._lock.release()  # the process dies before close
    reopened = LocalStore(path)
    assert sorted(r.content for r in reopened.records()) == ["I live in Lisbon", "I play bass in a band", "My sister is called Ana"]
    reopened.close()
