"""QdrantStore: the engine's storage port on Qdrant via ``qdrant-client``.

``QdrantStore(path="/dir")`` runs Qdrant in-process on disk (local mode);
``QdrantStore(url="http://host:6333", api_key=...)`` talks to a server or
cluster you run, so a user who outgrows one machine keeps the same engine.
Vector search runs in Qdrant with the scope filters (project, status, kind,
time) pushed down as a payload filter. Keyword search is the engine's BM25
over the morpheme tokens kept in each point's payload (loaded at open), so
rankings equal the JSON and SQLite stores'. Metadata, the entity graph and
the audit log live in a companion collection ``<collection>__naia``. A
re-index fills a new points collection (``<collection>__points_v2``, ...) that the
metadata names only once its commit is whole; the old one is dropped after,
and one that no metadata names (a re-index that died) is dropped at open.

Qdrant has no transaction across collections (nor across the points of one
call), so a commit writes an undo record first: the points it is about to
change as they were, the metadata and graph as they were, and where the log
stood. It is deleted when the commit is whole; a commit that fails puts the
file back from it (and the store reads it again before the next call; with
``autosave=False`` its changes are queued for the caller's next commit), and
an undo record found at open means a process died mid-commit: the file is
put back the same way.
"""
from __future__ import annotations

import json
import logging
import os
import uuid
from typing import Any, Iterable, Iterator

import numpy as np

from ..cognition.bm25 import BM25Index
from ..cognition.graph import EntityGraph
from ..contract import MemoryKind
from ..records import MemoryRecord
from .cache import RecordCache, check_embedder
from .cached_reads import CachedReads
from .port import RecordFilter, StoreError, kind_tag, scrub_entry

log = logging.getLogger("naia_memory")
_NS = uuid.UUID("5d1f0c3e-8a52-4c1b-9a57-7f0e2b3c4d5e")
_META_ID, _GRAPH_ID, _UNDO_ID = 1, 2, 3


def _pid(record_id: str) -> str:
    return str(uuid.uuid5(_NS, record_id))


class QdrantStore(CachedReads):
    def __init__(self, path: str | None = None, *, url: str | None = None, api_key: str | None = None,
                 collection: str = "naia_memory", autosave: bool = True, recover: bool | None = None):
        """``recover``: put back an unfinished commit found at open (its undo
        record). Local mode does (default): the folder is locked to one
        process, so the record is a dead process's. On a server another
        process may be committing right now, so by default an open that finds
        one is refused; pass ``recover=True`` once none is running."""
        from qdrant_client import QdrantClient, models

        if (path is None) == (url is None):
            raise ValueError("give exactly one of path= (local mode, on disk) or url= (a Qdrant server)")
        self.models = models
        self.path = path or url
        self.autosave = autosave
        if path is not None:  # Qdrant writes its files as the umask lets it: the folder is the user's only
            os.makedirs(path, mode=0o700, exist_ok=True)
            os.chmod(path, 0o700)
        self.client = QdrantClient(path=path) if path is not None else QdrantClient(url=url, api_key=api_key)
        self._base = collection
        self.collection = collection  # the points collection the metadata names (a re-index makes a new one)
        self.meta_collection = f"{collection}__naia"
        self._empty()
        self._recover = (url is None) if recover is None else bool(recover)
        self._lost = False  # a commit failed: the next call reads the collection again (``refresh``)
        self._reread = False
        if not self.client.collection_exists(self.meta_collection):
            self.client.create_collection(self.meta_collection, vectors_config=models.VectorParams(size=1, distance=models.Distance.DOT))
        try:
            self._load()
        except BaseException:
            self.client.close()  # refused: the local folder's lock is not left held behind the error
            raise

    # ---- load / persist ----------------------------------------------------------
    def _scroll(self, collection: str, with_vectors: bool) -> Iterator[Any]:
        offset = None
        while True:
            points, offset = self.client.scroll(collection, limit=512, offset=offset, with_payload=True, with_vectors=with_vectors)
            yield from points
            if offset is None:
                return

    def _load(self, own_undo: bool = False) -> None:
        """``own_undo``: an undo record found is this process's (a put-back that failed): applied whatever ``recover``."""
        found = self.client.retrieve(self.meta_collection, ids=[_UNDO_ID], with_payload=True)
        if found:  # a process died mid-commit: the file back as the last whole commit left it
            if not (self._recover or own_undo):
                raise StoreError(f"{self.path}: collection {self.collection!r} holds an unfinished commit (its undo "
                                 "record): another process is committing now, or one died mid-commit; once none is "
                                 "running, open it with recover=True to put it back as the last whole commit left it")
            self._apply_undo(json.loads(found[0].payload["data"]))
        entries = []
        for p in self._scroll(self.meta_collection, with_vectors=False):
            if p.id == _META_ID:
                self._meta = json.loads(p.payload["data"])
            elif p.id == _GRAPH_ID:
                self.graph = EntityGraph.from_json(json.loads(p.payload["data"]))
            else:
                entries.append((int(p.id), json.loads(p.payload["data"])))
        self._log = [e for _, e in sorted(entries, key=lambda x: x[0])]
        self._log_flushed = len(self._log)
        self.collection = str(self._meta.get("points") or self._base)
        emb = self._meta.get("embedder")
        if emb is None:
            return
        if self._recover:  # local mode, or a server no other process writes to now
            self._drop_unnamed()
        if not self.client.collection_exists(self.collection):
            raise StoreError(f"{self.path}: metadata names an embedder but collection {self.collection!r} is missing")
        points = list(self._scroll(self.collection, with_vectors=True))
        self._cache.reset_vectors(len(points), int(emb["dim"]))
        for p in sorted(points, key=lambda p: p.payload["seq"]):
            rec = MemoryRecord.from_json(json.loads(p.payload["record"]))
            self._cache.add(rec, np.asarray(p.vector, dtype=np.float32))
            self._bm25.add(rec.id, rec.tokens, kind_tag(rec.kind))
            self._seqmap[rec.id] = p.payload["seq"]
        self._seq = max(self._seqmap.values(), default=0)

    def _drop_unnamed(self) -> None:
        """Points collections of this store that its metadata does not name:
        a re-index that died before its commit was whole (the new one), or
        after it and before the old one was dropped (the old one)."""
        stem = f"{self._base}__points_v"
        ours = {self._base} | {c.name for c in self.client.get_collections().collections
                               if c.name.startswith(stem) and c.name[len(stem):].isdigit()}
        for name in sorted(ours - {self.collection}):
            # one with metadata of its own is another store that happens to be named so: not ours to drop
            if self.client.collection_exists(name) and (name == self._base or not self.client.collection_exists(f"{name}__naia")):
                self.client.delete_collection(name)

    def _put_meta(self, point_id: int, data: Any) -> None:
        self.client.upsert(self.meta_collection, points=[self.models.PointStruct(id=point_id, vector=[1.0], payload={"data": json.dumps(data, ensure_ascii=False, default=str)})])

    def _flush_points(self, log_to: int | None = None) -> None:
        """The queued point changes, after the undo record that can take them
        back (a search flushes mid-transaction: that is covered too)."""
        if not (self._deleted or self._pending or log_to is not None):
            return
        undo = self._undo_record()
        fresh = [i for i in (*self._deleted, *self._pending) if i not in undo["points"]]
        if fresh and self.client.collection_exists(self.collection):
            old = {str(p.id): {"vector": p.vector, "payload": p.payload}
                   for p in self.client.retrieve(self.collection, ids=[_pid(i) for i in fresh], with_vectors=True,
                                                 with_payload=True)}
            undo["points"].update({i: old.get(_pid(i)) for i in fresh})
        if log_to is not None:
            undo["log_to"] = log_to
            fresh_log = [i for i in self._log_dirty if str(i) not in undo["log_old"]]
            if fresh_log:
                undo["log_old"].update({str(int(p.id) - 1000): p.payload["data"] for p in self.client.retrieve(
                    self.meta_collection, ids=[1000 + i for i in fresh_log], with_payload=True)})
        self._put_meta(_UNDO_ID, undo)
        if self._deleted:
            self.client.delete(self.collection, points_selector=self.models.PointIdsList(points=[_pid(i) for i in self._deleted]))
            self._deleted.clear()
        if self._pending:
            self.client.upsert(self.collection, points=list(self._pending.values()))
            self._pending.clear()

    def _undo_record(self) -> dict[str, Any]:
        """Begun at a transaction's first write: the metadata and graph as the
        file holds them, and where its log ends."""
        if self._undo is None:
            saved = {int(p.id): p.payload["data"] for p in self.client.retrieve(
                self.meta_collection, ids=[_META_ID, _GRAPH_ID, _UNDO_ID], with_payload=True)}
            if _UNDO_ID in saved:  # a put-back that failed left its record: what it restores stays the truth
                self._undo = json.loads(saved[_UNDO_ID])
                self._undo.setdefault("log_old", {})
            else:
                self._undo = {"points": {}, "meta": saved.get(_META_ID), "graph": saved.get(_GRAPH_ID),
                              "log_from": self._log_flushed, "log_to": self._log_flushed, "log_old": {},
                              "collection": self.collection}
        return self._undo

    def _apply_undo(self, undo: dict[str, Any]) -> None:
        """The file put back as it was before the transaction ``undo`` began
        (absolute values: running it twice is harmless), then the record dropped."""
        m = self.models
        points = str(undo.get("collection") or self.collection)  # a re-index's transaction wrote to its new collection
        gone = [_pid(i) for i, old in undo["points"].items() if old is None]
        back = [m.PointStruct(id=_pid(i), vector=old["vector"], payload=old["payload"])
                for i, old in undo["points"].items() if old is not None]
        if (gone or back) and self.client.collection_exists(points):
            if gone:
                self.client.delete(points, points_selector=m.PointIdsList(points=gone))
            if back:
                self.client.upsert(points, points=back)
        for pid, data in ((_META_ID, undo["meta"]), (_GRAPH_ID, undo["graph"])):
            if data is None:
                self.client.delete(self.meta_collection, points_selector=m.PointIdsList(points=[pid]))
            else:
                self.client.upsert(self.meta_collection, points=[m.PointStruct(id=pid, vector=[1.0], payload={"data": data})])
        old_log = [m.PointStruct(id=1000 + int(i), vector=[1.0], payload={"data": data})
                   for i, data in undo.get("log_old", {}).items()]
        if old_log:
            self.client.upsert(self.meta_collection, points=old_log)
        if undo["meta"] is None and self.client.collection_exists(points) and self.client.count(points).count == 0:
            self.client.delete_collection(points)  # made for a new store whose first commit never finished
        added = list(range(1000 + undo["log_from"], 1000 + undo["log_to"]))
        if added:
            self.client.delete(self.meta_collection, points_selector=m.PointIdsList(points=added))
        self.client.delete(self.meta_collection, points_selector=m.PointIdsList(points=[_UNDO_ID]))

    def _refuse_closed(self) -> None:
        if self.client is None:  # as LocalStore: a closed store refuses (it failed with an AttributeError)
            raise StoreError(f"{self.path or 'this Qdrant store'} is closed")

    def commit(self) -> None:
        """All or nothing: the undo record, the points, metadata, graph and
        log, then the record deleted. On a failure the file is put back from
        the record and the store reads it again before the next call (until
        session 37 the changes were queued again and the next commit wrote
        them: a failed call was stored after all)."""
        self._refuse_closed()
        if self._lost:  # changes since a failed commit belong to the call that failed
            self._read_again()
            self._reread = True
        new = self._log[self._log_flushed:]
        try:
            self._flush_points(log_to=len(self._log))
            self._put_meta(_META_ID, self._meta)
            self._put_meta(_GRAPH_ID, self.graph.to_json())
            rewritten = [(i, self._log[i]) for i in sorted(self._log_dirty)]
            if new or rewritten:
                self.client.upsert(self.meta_collection, points=[
                    self.models.PointStruct(id=1000 + i, vector=[1.0], payload={"data": json.dumps(e, ensure_ascii=False, default=str)})
                    for i, e in (*rewritten, *enumerate(new, self._log_flushed))])
            self.client.delete(self.meta_collection, points_selector=self.models.PointIdsList(points=[_UNDO_ID]))
        except BaseException:
            undo = self._undo
            self._put_back()
            if self.autosave:  # the call that made the changes failed: read the file again
                self._lost = True
            elif undo is not None:  # the caller commits: what this commit carried stays owed to the next one
                self._requeue(undo)
            raise
        self._undo = None
        self._log_flushed = len(self._log)
        self._log_dirty.clear()
        if self._retired is not None:  # the metadata names the new vectors now: the old ones go
            retired, self._retired = self._retired, None
            try:
                self.client.delete_collection(retired)
            except Exception as e:  # the commit is whole; the next open drops what no metadata names
                log.warning("%s: the points collection %r a re-index replaced could not be dropped (%s); it is "
                            "dropped when the store is next opened", self.path, retired, e)

    def _put_back(self) -> None:
        """After a failed commit: the file as before the transaction. If even
        that fails, the undo record stays in the collection and the next
        read (the next call's, or the next open's) applies it."""
        undo = self._undo
        if undo is None:
            return
        try:
            self._apply_undo(undo)
            self._undo = None
        except BaseException as e:
            log.warning("%s: a failed commit could not be put back (%s: %s); its undo record stays in the collection "
                        "and is applied when the store is next read", self.path, type(e).__name__, e)
            if not isinstance(e, Exception):  # an interrupt is not swallowed
                raise

    def _requeue(self, undo: dict[str, Any]) -> None:
        for i in undo["points"]:
            if i in self._cache.records:
                self._stage(self._cache.records[i])
            else:
                self._pending.pop(i, None)
                self._deleted.add(i)
        self._log_dirty.update(int(i) for i in undo.get("log_old", {}))

    def changed_elsewhere(self) -> bool:
        """Asked by the engine before each call: true after a failed commit
        (or a re-read since), so it rebuilds its maps from what is stored."""
        return self._lost or self._reread

    def refresh(self) -> None:
        self._refuse_closed()
        if self._lost:
            self._read_again()
        self._reread = False

    def _empty(self) -> None:
        """What this process holds of the store, before anything is read."""
        self._retired: str | None = None  # the points collection a re-index left: dropped once its commit is whole
        self._cache = RecordCache()
        self._bm25 = BM25Index()
        self._pending: dict[str, Any] = {}
        self._deleted: set[str] = set()
        self._log: list[dict[str, Any]] = []
        self._log_flushed = 0
        self._seq = 0
        self._seqmap: dict[str, int] = {}
        self._meta: dict[str, Any] = {"format": "naia-memory-qdrant", "embedder": None}
        self.graph = EntityGraph()
        self._undo: dict[str, Any] | None = None  # the open transaction's undo record (written before its first change)
        self._log_dirty: set[int] = set()  # flushed log entries scrubbed since: rewritten at the next commit

    def _read_again(self) -> None:
        """Everything this process holds dropped and read from the
        collections (an undo record still there, from a put-back that failed
        too, is applied first, as at open)."""
        self._empty()
        self._load(own_undo=True)
        self._lost, self._reread = False, True

    def discard(self) -> bool:
        """Drop what this process holds that is not committed: the collections
        are read again before the next call (a search may have flushed some of
        it: its undo record takes it back then)."""
        self._lost = True
        return True

    def close(self) -> None:
        if self.client is None:
            return
        self.commit()
        self.client.close()
        self.client = None

    # ---- metadata -------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        return dict(self._meta)

    def bind_embedder(self, name: str, dim: int) -> None:
        if check_embedder(self.path, self._meta.get("embedder"), name, dim):
            self._meta["embedder"] = {"name": name, "dim": int(dim)}
            self._cache.reset_vectors(0, dim)
            if self.client.collection_exists(self.collection):
                raise StoreError(f"collection {self.collection!r} exists without naia metadata; choose another collection name")
            self._create_points(self.collection, dim)
            self.commit()

    def rebind_embedder(self, name: str, dim: int) -> None:
        """The new vectors go to a new points collection, which the metadata
        names from the next whole commit on; until then the file still reads
        as the old embedder wrote it (a process that dies in between leaves
        the store as it was, and the half-filled collection is dropped at
        open). The old collection is dropped after that commit."""
        self.commit()
        generation = int(self._meta.get("generation", 1)) + 1
        while self.client.collection_exists(f"{self._base}__points_v{generation}__naia"):
            generation += 1  # another store happens to be named so: not ours to fill
        new = f"{self._base}__points_v{generation}"
        if self.client.collection_exists(new):  # a re-index that died left it (a server opened without recover)
            self.client.delete_collection(new)
        self._create_points(new, dim)
        self._retired, self.collection = self.collection, new
        self._meta.update(embedder={"name": name, "dim": int(dim)}, points=new, generation=generation)
        self._cache.reset_vectors(len(self._cache), dim)
        for rid in self._cache.ids:  # upserted with their new vectors by set_embedding
            self._stage(self._cache.records[rid])

    def _create_points(self, name: str, dim: int) -> None:
        m = self.models
        self.client.create_collection(name, vectors_config=m.VectorParams(size=int(dim), distance=m.Distance.COSINE))
        if self.path and "://" in self.path:  # payload indexes matter on a server; local mode ignores them
            for field, schema in (("project", m.PayloadSchemaType.KEYWORD), ("status", m.PayloadSchemaType.KEYWORD),
                                  ("kind", m.PayloadSchemaType.KEYWORD), ("created_ts", m.PayloadSchemaType.FLOAT)):
                self.client.create_payload_index(name, field, field_schema=schema)

    # ---- records ----------------------------------------------------------------------
    def _stage(self, r: MemoryRecord) -> None:
        payload = {"record": json.dumps(r.to_json(), ensure_ascii=False), "project": r.project, "status": r.status,
                   "kind": r.kind.value, "created_ts": r.created_at.timestamp(), "seq": self._seqs_get(r.id)}
        vec = self._cache.vectors[self._cache.row[r.id]].tolist()
        self._pending[r.id] = self.models.PointStruct(id=_pid(r.id), vector=vec, payload=payload)

    def _seqs_get(self, record_id: str) -> int:
        """Insertion order survives a reopen (Qdrant's scroll order is by point id)."""
        if record_id not in self._seqmap:
            self._seq += 1
            self._seqmap[record_id] = self._seq
        return self._seqmap[record_id]

    def put(self, record: MemoryRecord, embedding: np.ndarray) -> None:
        self._cache.add(record, embedding)
        self._bm25.add(record.id, record.tokens, kind_tag(record.kind))
        self._deleted.discard(record.id)
        self._stage(record)

    def update(self, record: MemoryRecord) -> None:
        if record.id not in self._cache.records:
            raise StoreError(f"no record {record.id}")
        self._cache.replace(record)
        if tuple(record.tokens) != self._bm25.doc_tokens.get(record.id):
            self._bm25.add(record.id, record.tokens, kind_tag(record.kind))
        self._stage(record)

    def set_embedding(self, record_id: str, embedding: np.ndarray) -> None:
        self._cache.set_vector(record_id, embedding)
        self._stage(self._cache.records[record_id])

    def delete(self, record_id: str) -> None:
        if record_id not in self._cache.records:
            return
        self._cache.remove(record_id)
        self._bm25.remove(record_id)
        self._pending.pop(record_id, None)
        self._deleted.add(record_id)

    # ---- search -------------------------------------------------------------------------
    def _qfilter(self, flt: RecordFilter):
        m = self.models
        must = []
        if flt.project is not None:
            must.append(m.FieldCondition(key="project", match=m.MatchValue(value=flt.project)))
        if flt.statuses is not None:
            must.append(m.FieldCondition(key="status", match=m.MatchAny(any=list(flt.statuses))))
        if flt.kinds is not None:
            must.append(m.FieldCondition(key="kind", match=m.MatchAny(any=[k.value for k in flt.kinds])))
        if flt.created_before is not None:
            must.append(m.FieldCondition(key="created_ts", range=m.Range(lte=flt.created_before.timestamp())))
        must_not = [m.FieldCondition(key="kind", match=m.MatchValue(value=MemoryKind.REFLECTION.value))] if flt.evidence else []
        return m.Filter(must=must, must_not=must_not or None) if must or must_not else None

    def vector_top_k_many(self, queries: np.ndarray, k: int, flt: RecordFilter) -> list[list[tuple[str, float]]]:
        return [self.vector_top_k(q, k, flt) for q in np.asarray(queries)]  # Qdrant is asked one query at a time

    def vector_top_k(self, query: np.ndarray, k: int, flt: RecordFilter) -> list[tuple[str, float]]:
        if k <= 0 or not len(self._cache):
            return []
        self._flush_points()
        q = np.asarray(query, dtype=np.float32)
        width = 2 * k if flt.valid_at is None else max(4 * k, 64)  # margin: ties at the cut
        while True:
            res = self.client.query_points(self.collection, query=q.tolist(), query_filter=self._qfilter(flt),
                                           limit=width, with_payload=["record"])
            ids = [json.loads(p.payload["record"])["id"] for p in res.points]
            ids = [i for i in ids if flt.matches(self._cache.records[i])]
            # Qdrant picks the candidates; the score is recomputed from the same
            # float32 vectors the other stores use, so equal texts tie exactly
            # and ties break on id everywhere.
            sims = self._cache.embeddings(ids) @ q if ids else []
            cands = sorted(zip(ids, map(float, sims)), key=lambda x: (-x[1], x[0]))
            if len(cands) >= k or len(res.points) < width:
                return cands[:k]
            width *= 4

    def backup_to(self, dest: str) -> None:
        """Local mode: copy the folder after a flush. A server is backed up with Qdrant's snapshots."""
        import shutil

        self._refuse_closed()
        self.commit()
        if "://" in str(self.path):
            raise NotImplementedError("back up a Qdrant server with its snapshot API (client.create_snapshot)")
        shutil.copytree(self.path, dest, dirs_exist_ok=False)
        for root, dirs, files in os.walk(dest):  # Qdrant writes its files as the umask lets it: a backup is private
            os.chmod(root, 0o700)
            for name in files:
                os.chmod(os.path.join(root, name), 0o600)

    # ---- audit log ---------------------------------------------------------------------
    def append_log(self, entries: Iterable[dict[str, Any]]) -> None:
        self._log.extend(entries)

    def log(self) -> list[dict[str, Any]]:
        return list(self._log)

    def scrub_log(self, forgotten: set[str]) -> int:
        changed = []
        for i, e in enumerate(self._log):
            clean = scrub_entry(e, forgotten)
            if clean is not None:
                self._log[i] = clean
                changed.append(i)
        # already in Qdrant: those points are overwritten at commit, inside its transaction (their text as the file
        # holds it goes into the undo record first, so a commit that fails puts them back with everything else)
        self._log_dirty.update(i for i in changed if i < self._log_flushed)
        return len(changed)

    def erase_freed(self) -> None:
        """Deletes and overwrites reach Qdrant at commit; in local mode each
        collection is a SQLite file, whose freed pages keep the deleted
        payloads (the memories' text) unless SQLite zeroes them: many builds
        do not (SQLite's own default is off), so every collection's file is
        rebuilt here from its live pages
        (session 32: the README's promise held only on a build that zeroes by
        default). A server's storage is the server's to erase."""
        self.commit()
        for conn in self._local_files():
            conn.execute("VACUUM")  # rewrites the file from its live pages only: the freed ones are gone

    def _local_files(self) -> list:
        """The SQLite connections of a local-mode client's collections (none
        for a server). qdrant-client keeps them inside its local client; if
        that layout changes, forgetting must not go on silently: it fails."""
        if "://" in str(self.path):
            return []
        local = getattr(self.client, "_client", None)
        collections = getattr(local, "collections", None)
        if collections is None:
            raise StoreError("qdrant-client's local storage is not where naia-memory looks for it "
                             "(client._client.collections); forgotten text cannot be erased from its files")
        out = []
        for c in collections.values():
            storage = getattr(c, "storage", None)
            conn = getattr(storage, "storage", None)
            if storage is not None and conn is None:
                raise StoreError("a Qdrant local collection keeps no SQLite connection where naia-memory looks for it")
            if conn is not None:
                out.append(conn)
        return out
