"""A Qdrant commit is all or nothing (session 36): Qdrant has no transaction
across collections, so a commit writes an undo record first and deletes it
last. Before, a process that died after a failed metadata write left that
call's points on disk (a clean close applied the caller's rollback); and a
search, which flushes queued points, wrote a transaction's points before its
commit. Real qdrant-client in local mode; a failure is one client call made
to raise, and a process's death is its client closed without a commit."""
from __future__ import annotations

from datetime import timedelta

import pytest

pytest.importorskip("qdrant_client")

from naia_memory import MemorySystem  # noqa: E402
from naia_memory.embedders import HashingEmbedder  # noqa: E402
from naia_memory.stores.port import StoreError  # noqa: E402
from naia_memory.stores.qdrant_store import _META_ID, _UNDO_ID, QdrantStore  # noqa: E402


def _m(path, tokenizer) -> MemorySystem:
    return MemorySystem(store=QdrantStore(path=str(path)), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)


def _dies(m: MemorySystem) -> None:
    """The process ends here: no commit, no close of the store."""
    m.store.client.close()
    m.store.client = None


def _held(path) -> list[tuple[str, str]]:
    s = QdrantStore(path=str(path))
    out = sorted((r.content, r.status) for r in s.records(None)), len(s.log())
    assert not s.client.retrieve(s.meta_collection, ids=[_UNDO_ID])  # put back and dropped at open
    s.close()
    return out


def _failing(store, when) -> list:
    """Make the client's ``upsert`` raise once ``when(collection, points)`` says so; returns the calls seen."""
    real, seen = store.client.upsert, []

    def upsert(collection_name, points, **kw):
        seen.append(collection_name)
        if when(collection_name, points):
            raise OSError("the disk is full")
        return real(collection_name, points=points, **kw)

    store.client.upsert = upsert
    return seen


def _full_from_the_graph_write(store):
    """The graph's write fails, and every write after it (the put-back's too); returns what gives the space back."""
    broken, real_upsert, real_delete = [], store.client.upsert, store.client.delete

    def upsert(collection_name, points, **kw):
        if broken or (collection_name == store.meta_collection and any(p.id == 2 for p in points)):
            broken.append(1)
            raise OSError("the disk is full")
        return real_upsert(collection_name, points=points, **kw)

    store.client.upsert = upsert
    store.client.delete = lambda *a, **k: (_ for _ in ()).throw(OSError("the disk is full"))

    def space_again():
        store.client.upsert, store.client.delete = real_upsert, real_delete
    return space_again


def test_a_commit_that_fails_at_the_metadata_leaves_the_file_as_the_last_whole_commit(tmp_path, tokenizer, t0):
    path = tmp_path / "q"
    m = _m(path, tokenizer)
    m.encode(content="I live in Lisbon", now=t0)
    before = sorted((r.content, r.status) for r in m.store.records(None)), len(m.store.log())
    _failing(m.store, lambda c, pts: c == m.store.meta_collection and any(p.id == _META_ID for p in pts))
    with pytest.raises(OSError, match="disk is full"):
        m.encode(content="I run on Tuesdays", now=t0 + timedelta(minutes=1))
    _dies(m)
    assert _held(path) == before  # the failed call's point is not on disk


def test_a_process_that_dies_with_the_undo_record_in_the_file_is_put_back_at_open(tmp_path, tokenizer, t0):
    path = tmp_path / "q"
    m = _m(path, tokenizer)
    m.encode(content="I live in Lisbon", now=t0)
    before = sorted((r.content, r.status) for r in m.store.records(None)), len(m.store.log())
    # the graph write fails, and so does every write after it (the undo too): the record stays in the file
    broken = []
    _failing(m.store, lambda c, pts: broken.append(1) if broken or any(p.id == 2 for p in pts) and c == m.store.meta_collection else False)
    real_delete = m.store.client.delete
    m.store.client.delete = lambda *a, **k: (_ for _ in ()).throw(OSError("the disk is full"))
    with pytest.raises(OSError):
        m.encode(content="I run on Tuesdays", now=t0 + timedelta(minutes=1))
    m.store.client.delete = real_delete
    assert m.store.client.retrieve(m.store.meta_collection, ids=[_UNDO_ID])  # left for the next open
    _dies(m)
    assert _held(path) == before


def test_a_search_mid_transaction_writes_nothing_that_outlives_a_death(tmp_path, tokenizer, t0):
    """A recall flushes queued points so Qdrant can search them; with autosave
    off they were on disk before any commit."""
    path = tmp_path / "q"
    m = MemorySystem(store=QdrantStore(path=str(path), autosave=False), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    m.encode(content="I live in Lisbon", now=t0)
    m.store.commit()
    before = sorted((r.content, r.status) for r in m.store.records(None)), len(m.store.log())
    m.encode(content="I run on Tuesdays", now=t0 + timedelta(minutes=1))
    assert m.recall(query="Tuesdays", now=t0 + timedelta(hours=1)).contents()  # flushed to Qdrant to be searched
    _dies(m)
    assert _held(path) == before


def test_after_a_failed_commit_the_store_reads_the_file_again(tmp_path, tokenizer, t0):
    """Until session 37 the failed transaction's changes were queued again
    and the next commit wrote them: a call that failed was stored after all."""
    path = tmp_path / "q"
    m = _m(path, tokenizer)
    m.encode(content="I live in Lisbon", now=t0)
    once = []
    _failing(m.store, lambda c, pts: not once and c == m.store.meta_collection and any(p.id == _META_ID for p in pts)
             and not once.append(1))
    with pytest.raises(OSError):
        m.encode(content="I run on Tuesdays", now=t0 + timedelta(minutes=1))
    m.encode(content="I play bass in a band", now=t0 + timedelta(minutes=2))  # read again first, then written
    held = sorted((r.content, r.status) for r in m.store.records(None)), len(m.store.log())
    assert [c for c, _ in held[0]] == ["I live in Lisbon", "I play bass in a band"]
    assert "I run on Tuesdays" not in m.recall(query="Tuesdays", now=t0 + timedelta(hours=1), strengthen=False).contents()
    m.close()
    assert _held(path) == held


def test_an_unfinished_commit_is_refused_where_another_process_may_be_committing(tmp_path, tokenizer, t0):
    """On a server another process may be mid-commit: its undo record is not
    applied behind its back unless the caller says none is running."""
    path = tmp_path / "q"
    m = _m(path, tokenizer)
    m.encode(content="I live in Lisbon", now=t0)
    m.store.autosave = False
    m.encode(content="I run on Tuesdays", now=t0 + timedelta(minutes=1))
    m.recall(query="Tuesdays", now=t0 + timedelta(hours=1))  # flushed: the undo record is in the collection
    _dies(m)
    with pytest.raises(StoreError, match="unfinished commit"):
        QdrantStore(path=str(path), recover=False)
    s = QdrantStore(path=str(path), recover=True)  # the folder's lock was let go by the refused open
    assert sorted(r.content for r in s.records(None)) == ["I live in Lisbon"]
    s.close()


# ---- a review of the undo record (a helper session; each fails on the code before) ---------------------------------

def test_an_undo_record_a_failed_put_back_left_is_extended_not_replaced(tmp_path, tokenizer, t0):
    """The put-back failed too (the disk still full), then a search flushed the
    queued points: a new record, made from the half-written file, replaced the
    one on disk, and a death then 'recovered' to the half state."""
    path = tmp_path / "q"
    m = _m(path, tokenizer)
    m.encode(content="I live in Lisbon", now=t0)
    before = sorted((r.content, r.status) for r in m.store.records(None)), len(m.store.log())
    m.store.autosave = False
    m.encode(content="I run on Tuesdays", now=t0 + timedelta(minutes=1))
    store = m.store
    space_again = _full_from_the_graph_write(store)
    with pytest.raises(OSError):
        store.commit()
    space_again()
    m.recall(query="Tuesdays", now=t0 + timedelta(hours=1))  # space again: a flush, before the process dies
    _dies(m)
    assert _held(path) == before


def test_a_forget_whose_commit_fails_leaves_the_log_as_the_last_commit_did(tmp_path, tokenizer, t0):
    """The log's scrub was written straight away, outside the transaction: a
    forget that failed and a death left the memory with its log entry scrubbed."""
    path = tmp_path / "q"
    m = _m(path, tokenizer)
    x = m.encode(content="I live in Lisbon", now=t0).id
    m.store.append_log([{"op": "ADD", "target_id": x, "candidate": "I live in Lisbon"}])
    m.store.commit()
    before = sorted((r.content, r.status) for r in m.store.records(None)), len(m.store.log())
    log_before = m.store.log()
    _failing(m.store, lambda c, pts: c == m.store.meta_collection and any(p.id == _META_ID for p in pts))
    with pytest.raises(OSError):
        m.forget(memory_id=x)
    _dies(m)
    assert _held(path) == before
    s = QdrantStore(path=str(path))
    assert s.log() == log_before
    s.close()


def test_a_new_store_whose_first_commit_never_finished_opens_as_new(tmp_path, tokenizer, t0, monkeypatch):
    path = tmp_path / "q"
    real = QdrantStore.commit

    def first_fails(self):
        monkeypatch.setattr(QdrantStore, "commit", real)
        _failing(self, lambda c, pts: c == self.meta_collection and any(p.id == _META_ID for p in pts))
        try:
            real(self)
        finally:
            self.client.close()  # and the process ends
            self.client = None

    monkeypatch.setattr(QdrantStore, "commit", first_fails)
    with pytest.raises(OSError):
        _m(path, tokenizer)  # binding the embedder commits
    m = _m(path, tokenizer)  # was: "collection exists without naia metadata"
    m.encode(content="I live in Lisbon", now=t0)
    m.close()
    assert _held(path)[0] == [("I live in Lisbon", "active")]


def _collections(path) -> list[str]:
    s = QdrantStore(path=str(path))
    names = sorted(c.name for c in s.client.get_collections().collections)
    s.close()
    return names


def _vectors(path, dim) -> dict[str, int]:
    m = MemorySystem(store=QdrantStore(path=str(path)), embedder=HashingEmbedder(dim=dim))
    out = {r.content: int(m.store.embeddings([r.id]).shape[1]) for r in m.store.records(None)}
    assert m.recall(query="Lisbon", now=None).contents()[0] == "I live in Lisbon"
    m.close()
    return out


def _two_turns(path, tokenizer, t0) -> MemorySystem:
    m = _m(path, tokenizer)
    m.encode(content="I live in Lisbon", now=t0)
    m.encode(content="I run on Tuesdays", now=t0 + timedelta(minutes=1))
    return m


def test_a_reindex_that_dies_before_its_commit_leaves_the_store_as_the_old_embedder_wrote_it(tmp_path, tokenizer, t0):
    """Until session 37 the points collection was deleted and made again at
    once: a process that died before the next commit left an empty store."""
    path = tmp_path / "q"
    m = _two_turns(path, tokenizer, t0)
    m.store.rebind_embedder("hashing-32", 32)
    for r in list(m.store.records(None)):
        m.store.set_embedding(r.id, HashingEmbedder(dim=32).embed_passages([r.content])[0])
    _dies(m)
    assert _vectors(path, 64) == {"I live in Lisbon": 64, "I run on Tuesdays": 64}
    assert _collections(path) == ["naia_memory", "naia_memory__naia"]  # the half-filled one is dropped at open


def test_a_reindex_whose_commit_fails_is_put_back_and_a_death_then_loses_nothing(tmp_path, tokenizer, t0):
    path = tmp_path / "q"
    m = _two_turns(path, tokenizer, t0)
    _failing(m.store, lambda c, pts: c == m.store.meta_collection and any(p.id == _META_ID for p in pts))
    with pytest.raises(OSError, match="disk is full"):
        m.reindex(HashingEmbedder(dim=32))
    _dies(m)
    assert _vectors(path, 64) == {"I live in Lisbon": 64, "I run on Tuesdays": 64}
    assert _collections(path) == ["naia_memory", "naia_memory__naia"]


def test_a_whole_reindex_moves_to_a_new_collection_and_drops_the_old(tmp_path, tokenizer, t0):
    path = tmp_path / "q"
    m = _two_turns(path, tokenizer, t0)
    assert m.reindex(HashingEmbedder(dim=32)) == 2
    assert sorted(c.name for c in m.store.client.get_collections().collections) == ["naia_memory__naia", "naia_memory__points_v2"]
    m.close()
    assert _vectors(path, 32) == {"I live in Lisbon": 32, "I run on Tuesdays": 32}
    m = MemorySystem(store=QdrantStore(path=str(path)), embedder=HashingEmbedder(dim=32), tokenizer=tokenizer)
    m.reindex(HashingEmbedder(dim=48))
    m.close()
    assert _collections(path) == ["naia_memory__naia", "naia_memory__points_v3"]
    assert _vectors(path, 48) == {"I live in Lisbon": 48, "I run on Tuesdays": 48}


def test_the_old_collection_left_by_a_death_after_the_commit_is_dropped_and_another_store_is_not(tmp_path, tokenizer, t0):
    path = tmp_path / "q"
    other = MemorySystem(store=QdrantStore(path=str(path), collection="naia_memory__points_v7"),
                         embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    other.encode(content="I live in Oslo", now=t0)
    other.close()
    m = _two_turns(path, tokenizer, t0)
    m.store.client.delete_collection = lambda *a, **k: (_ for _ in ()).throw(OSError("the disk is full"))
    m.reindex(HashingEmbedder(dim=32))  # whole: the old collection's drop fails after it, and is only logged
    _dies(m)
    assert _vectors(path, 32) == {"I live in Lisbon": 32, "I run on Tuesdays": 32}
    assert _collections(path) == ["naia_memory__naia", "naia_memory__points_v2", "naia_memory__points_v7",
                                  "naia_memory__points_v7__naia"]
    s = QdrantStore(path=str(path), collection="naia_memory__points_v7")
    assert [r.content for r in s.records(None)] == ["I live in Oslo"]
    s.close()


# ---- a review of session 37's changes (a helper session; each failed on the first version) --------------------------

def test_a_reindex_does_not_fill_another_store_named_like_its_next_collection(tmp_path, tokenizer, t0):
    path = str(tmp_path / "q")
    other = MemorySystem(store=QdrantStore(path=path, collection="naia_memory__points_v2"),
                         embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    other.encode(content="I live in Oslo", now=t0)
    other.close()
    m = _m(tmp_path / "q", tokenizer)
    m.encode(content="I live in Lisbon", now=t0)
    m.reindex(HashingEmbedder(dim=32))
    assert m.store.collection == "naia_memory__points_v3"
    m.close()
    s = QdrantStore(path=path, collection="naia_memory__points_v2")
    try:
        assert [r.content for r in s.records(None)] == ["I live in Oslo"]
    finally:
        s.close()


def test_a_put_back_that_failed_does_not_lock_the_process_out_without_recover(tmp_path, tokenizer, t0):
    """recover=False (a server's default): the undo record a failed put-back left is this process's own,
    and the next call's re-read refused it as another process's."""
    path = str(tmp_path / "q")
    m = MemorySystem(store=QdrantStore(path=path, recover=False), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    m.encode(content="I live in Lisbon", now=t0)
    store = m.store
    space_again = _full_from_the_graph_write(store)
    with pytest.raises(OSError):
        m.encode(content="I run on Tuesdays", now=t0 + timedelta(minutes=1))
    space_again()
    assert store.client.retrieve(store.meta_collection, ids=[_UNDO_ID])
    m.encode(content="I play bass in a band", now=t0 + timedelta(minutes=2))
    assert sorted(r.content for r in m.store.records(None)) == ["I live in Lisbon", "I play bass in a band"]
    m.close()
