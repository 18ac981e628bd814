"""SqliteStore: the engine's storage port on one SQLite file.

Same cognition as the JSON store (the engine does it all); what changes is
durability and scale: every mutation is a row write in a transaction (WAL,
busy timeout), so committing costs O(change), not a rewrite of the file.

- BM25: the engine's pre-tokenized Kiwi morphemes are written to an FTS5
  table (contentless, with delete support) for tools that read the file;
  queries are scored by the same in-memory numpy index as the JSON store
  (Lucene IDF, k1=1.2, b=0.75), built from the stored tokens on open, so
  both stores rank identically and a query never scans the table.
- Vectors: ``vector_index="matrix"`` keeps a float32 matrix loaded from the
  blobs (AIDA's approach; exact cosine, one matrix product); ``"sqlite-vec"``
  asks a vec0 table for the nearest rows. The latency experiment measures
  both.
- Schema migrations by version number (``meta.schema_version``); the file's
  schema, opening checks and field sealing are in ``sqlite_file``, the reads
  shared with the JSON store in ``cached_reads``, the write transactions in
  ``sqlite_transactions``, the key and the roster in ``sqlite_sealing``.
- The stock ``sqlite3`` module of many Pythons cannot load extensions; this
  store uses ``apsw``, which can.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ..cognition.bm25 import BM25Index
from ..cognition.graph import EntityGraph
from ..records import MemoryRecord
from .cache import RecordCache, check_embedder
from .cached_reads import CachedReads
from .crypto import Damaged, Sealer
from .lock import FileLock
from .port import IdTakenError, RecordFilter, StoreError, kind_tag, scrub_entry
from .sqlite_file import (VECTOR_INDEXES, Fields, create_private, fts_text, meta_get, meta_put, migrate, open_connection,
                          vec_top_k)
from .sqlite_roster import Delta, Roster, graph_mark, memory_mark, roster_key
from .sqlite_sealing import SealedFile
from .sqlite_transactions import Transactions, _writes


def _columns(r: MemoryRecord) -> tuple:
    """A record's readable columns (the file's indexes and filters read them)."""
    return (r.kind.value, r.project, r.status, r.created_at.isoformat(),
            r.valid_from.isoformat() if r.valid_from else None, r.valid_to.isoformat() if r.valid_to else None,
            len(r.tokens))


class SqliteStore(Transactions, SealedFile, CachedReads):
    def __init__(self, path: str | os.PathLike, *, vector_index: str = "matrix", autosave: bool = True,
                 busy_timeout_ms: int = 5000, passphrase: str | None = None):
        """``passphrase``: field-level encryption (``stores/crypto.py``): each
        record's JSON, its vector, the log entries and the entity graph are
        sealed with AES-256-GCM; no FTS5 rows are written (their terms are the
        words). Ids, kinds, projects, statuses and times stay readable so the
        file keeps its indexes. sqlite-vec needs plaintext vectors, so the two
        do not combine."""
        if vector_index not in VECTOR_INDEXES:
            raise ValueError(f"vector_index must be one of {VECTOR_INDEXES}, got {vector_index!r}")
        if passphrase is not None and vector_index == "sqlite-vec":
            raise ValueError("an encrypted SQLite store cannot use sqlite-vec (its index holds plaintext vectors); "
                             "use vector_index='matrix'")
        if passphrase is not None and not passphrase:  # refused before a file is made (a plain one was left behind)
            raise ValueError("the passphrase must not be empty")
        self.path = str(Path(path).expanduser())
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.autosave = autosave
        self.vector_index = vector_index
        # held shared while open: an import replaces the file only when no process has it open
        self._open_lock = FileLock(self.path)  # (by the file's real path: an import through a link meets it)
        self._open_lock.acquire(wait=busy_timeout_ms / 1000, shared=True)
        try:
            self.db = open_connection(self.path, busy_timeout_ms)
        except BaseException:
            self._open_lock.release()
            raise
        self._busy_ms = busy_timeout_ms
        self._in_txn = False
        self._stale = False  # a write was refused as made on an older view; set until the file is read again
        self._cache = RecordCache()
        self._rowid: dict[str, int] = {}
        self._by_rowid: dict[int, str] = {}
        # Keyword search runs on an in-memory index of the same tokens FTS5 holds:
        # scoring through memories_inst walked every posting of every query term in
        # Python (and rebuilt a rowid map), O(store) per query, and encode queries it
        # for surprise. FTS5 stays as the on-disk index other tools can read.
        self._bm25 = BM25Index()
        self._sealer: Sealer | None = None
        self._delta = Delta()  # what the open write transaction changed, for the roster (encrypted only)
        try:
            self._check_key(passphrase)  # a wrong or missing passphrase is refused before anything is written
            migrate(self.db, self.path)
            self._open_sealer(passphrase)
            self._fields = Fields(self._sealer, self.path)
            self._seen_version = self._data_version()  # before the read: a commit landing during it is caught up next call
            self._load_or_say_why()
        except BaseException:
            self.db.close()  # refused: the connection is not left open behind the error
            self._open_lock.release()
            raise

    def _fts_put(self, rowid: int, tokens: Sequence[str]) -> None:
        if self._sealer is None:  # an encrypted store writes no terms: they are the words
            self.db.execute("INSERT INTO memories_fts(rowid, tokens) VALUES (?, ?)", (rowid, fts_text(tokens)))

    def _fts_drop(self, rowid: int) -> None:
        if self._sealer is None:
            self.db.execute("DELETE FROM memories_fts WHERE rowid = ?", (rowid,))

    # ---- schema ---------------------------------------------------------------
    def _meta_get(self, key: str) -> Any:
        return meta_get(self.db, key)

    def _meta_set(self, key: str, value: Any) -> None:
        self._begin()
        meta_put(self.db, key, value)

    def _ensure_vec_table(self, dim: int) -> None:
        if self.vector_index == "sqlite-vec":
            self.db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS memories_vec USING vec0(embedding float[{int(dim)}] distance_metric=cosine)")

    def _load_or_say_why(self) -> None:
        try:
            self._load()
        except Exception:
            self._check_header()  # a re-key (or an encryption) that landed during the read says so, not as damage
            raise

    def _load(self) -> None:
        """Every row into the cache. An encrypted store is read in one read
        transaction (one snapshot of rows, log, graph and roster, whatever
        another process commits meanwhile) and checked against its roster."""
        own = self._sealer is not None and not self.db.in_transaction
        if own:
            self.db.execute("BEGIN")
        try:
            self._read_rows()
        finally:
            if own and self.db.in_transaction:
                self.db.execute("COMMIT")  # a read: ends the snapshot, writes nothing

    def _read_rows(self) -> None:
        emb = self._meta_get("embedder")
        dim = int(emb["dim"]) if emb else 0
        rows = list(self.db.execute("SELECT rowid, id, record, embedding, kind, project, status, created_at, valid_from, "
                                    "valid_to, ntokens FROM memories ORDER BY rowid"))
        self._cache.reset_vectors(len(rows), dim)
        key = roster_key(self._sealer.id_key) if self._sealer is not None else None
        marks = 0
        for rowid, rid, rec_json, blob, *readable in rows:
            if key is not None:
                marks ^= memory_mark(key, rid, rec_json, blob)
            rec = MemoryRecord.from_json(json.loads(self._fields.open_text(rec_json, b"record", rid)))
            if rec.id != rid:
                raise Damaged(f"{self.path}: the row of {rid} holds the record of {rec.id}; not loaded")
            if key is not None and tuple(readable) != _columns(rec):  # what filters and outside tools read, as sealed
                raise Damaged(f"{self.path}: the readable columns of {rid} (kind, project, status, times) are not "
                              "what its sealed record says; not loaded")
            vec = self._fields.open_vec(blob, rid)
            if vec.shape != (dim,):
                raise StoreError(f"{self.path}: record {rec.id} has a {vec.shape[0]}-d vector, store is {dim}-d")
            self._cache.add(rec, vec)
            self._rowid[rec.id] = rowid
            self._by_rowid[rowid] = rec.id
            self._bm25.add(rec.id, rec.tokens, kind_tag(rec.kind))
        if dim:
            self._ensure_vec_table(dim)
            if self.vector_index == "sqlite-vec":
                n_vec = list(self.db.execute("SELECT count(*) FROM memories_vec"))[0][0]
                if n_vec != len(rows):  # built by a matrix-mode session: index what is missing
                    with self.db:
                        self.db.execute("DELETE FROM memories_vec")
                        self.db.execute("INSERT INTO memories_vec(rowid, embedding) SELECT rowid, embedding FROM memories")
        if self._sealer is not None:
            sealed = self._meta_get("graph_sealed")
            self._check_roster(Roster(len(rows), marks, *self._log_roster(key), graph_mark(sealed)))
            self.graph = EntityGraph.from_json(json.loads(self._fields.open_text(sealed, b"graph")) if sealed else [])
        else:
            self.graph = EntityGraph.from_json([[a, b, w] for a, b, w in self.db.execute("SELECT a, b, w FROM edges")])

    def close(self) -> None:
        if self.db is None:
            return
        self.commit()
        self.db.close()
        self.db = None
        self._open_lock.release()

    # ---- metadata -----------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        return {"format": "naia-memory-sqlite", "schema_version": self._meta_get("schema_version"),
                "embedder": self._meta_get("embedder"), "vector_index": self.vector_index}

    def bind_embedder(self, name: str, dim: int) -> None:
        stored = self._meta_get("embedder")  # bound for good once bound: no write lock needed to read it
        if stored is None:  # a new file: two new processes must not both bind, so look again under the lock
            opened = not self._in_txn  # a caller's open transaction is the caller's to commit
            self._begin(fresh=False)
            stored = self._meta_get("embedder")
            if stored is None:
                self._meta_set("embedder", {"name": name, "dim": int(dim)})
                self._cache.reset_vectors(0, dim)
                self._ensure_vec_table(dim)
            if opened:
                self.commit()
            if stored is None:
                return
        check_embedder(self.path, stored, name, dim)
        if self._cache.dim != int(dim) and not self._in_txn:  # bound by another process after this one loaded
            self.refresh()

    def rebind_embedder(self, name: str, dim: int) -> None:
        self._meta_set("embedder", {"name": name, "dim": int(dim)})
        self._cache.reset_vectors(len(self._cache), dim)
        if self.vector_index == "sqlite-vec":
            self.db.execute("DROP TABLE IF EXISTS memories_vec")
            self._ensure_vec_table(dim)

    # ---- records ----------------------------------------------------------------------
    def _row_values(self, r: MemoryRecord) -> tuple:
        return (r.id, *_columns(r), self._fields.seal_text(json.dumps(r.to_json(), ensure_ascii=False), b"record", r.id))

    @_writes
    def put(self, record: MemoryRecord, embedding: np.ndarray) -> None:
        import apsw

        vec = np.asarray(embedding, dtype="<f4").reshape(-1)
        values, vector = self._row_values(record), self._fields.seal_vec(vec, record.id)  # one that cannot be built holds nothing
        opened = not self._in_txn
        self._begin()  # the lock first: a file busy past the timeout must leave nothing held that it does not hold
        self._cache.add(record, vec)
        try:
            self.db.execute("INSERT INTO memories(id, kind, project, status, created_at, valid_from, valid_to, ntokens, record, embedding) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (*values, vector))
        except BaseException as e:  # not stored: not held as stored either (a text the file cannot encode, a taken id)
            self._cache.remove(record.id)
            if self._in_txn and not self.db.in_transaction:  # the whole transaction went with it: said by _writes
                raise
            if opened:  # nothing else is in this transaction: end it, so no write lock is left held
                self.db.execute("ROLLBACK")
                self._in_txn = False
            if isinstance(e, apsw.ConstraintError):  # the id is taken in the file: another process wrote it since we read
                raise IdTakenError(f"{self.path}: a memory with id {record.id} already exists (another process wrote it); "
                                   "nothing was stored, the next call re-reads the file") from e
            raise
        self._mark(record.id, values[-1], vector)
        self._delta.memories += 1
        rowid = self.db.last_insert_rowid()
        self._rowid[record.id] = rowid
        self._by_rowid[rowid] = record.id
        self._bm25.add(record.id, record.tokens, kind_tag(record.kind))
        self._fts_put(rowid, record.tokens)
        if self.vector_index == "sqlite-vec":
            self.db.execute("INSERT INTO memories_vec(rowid, embedding) VALUES (?, ?)", (rowid, vec.tobytes()))

    @_writes
    def update(self, record: MemoryRecord) -> None:
        if record.id not in self._rowid:
            raise StoreError(f"no record {record.id}")
        values = self._row_values(record)  # built first: one that cannot be built changes nothing
        self._begin()
        self._cache.replace(record)
        was = self._unmark(record.id)
        self.db.execute("UPDATE memories SET kind=?, project=?, status=?, created_at=?, valid_from=?, valid_to=?, ntokens=?, record=? "
                        "WHERE id=?", (*values[1:], record.id))
        if was is not None:
            self._mark(record.id, values[-1], was[1])
        if self._bm25.doc_tokens.get(record.id) != tuple(record.tokens):
            row = self._row_of(record.id) if self._sealer is None else None  # the file's row, not the one remembered
            if row is not None:
                self._fts_drop(row)
                self._fts_put(row, record.tokens)
            self._bm25.add(record.id, record.tokens, kind_tag(record.kind))

    @_writes
    def set_embedding(self, record_id: str, embedding: np.ndarray) -> None:
        vec = np.asarray(embedding, dtype="<f4").reshape(-1)
        self._begin()
        self._cache.set_vector(record_id, vec)
        was, vector = self._unmark(record_id), self._fields.seal_vec(vec, record_id)
        self.db.execute("UPDATE memories SET embedding = ? WHERE id = ?", (vector, record_id))
        if was is not None:
            self._mark(record_id, was[0], vector)
        if self.vector_index == "sqlite-vec" and (rowid := self._row_of(record_id)) is not None:
            self.db.execute("DELETE FROM memories_vec WHERE rowid = ?", (rowid,))
            self.db.execute("INSERT INTO memories_vec(rowid, embedding) VALUES (?, ?)", (rowid, vec.tobytes()))

    @_writes
    def delete(self, record_id: str) -> None:
        rowid = self._rowid.get(record_id)
        if rowid is None:
            return
        self._begin()
        del self._rowid[record_id]
        self._cache.remove(record_id)
        self._by_rowid.pop(rowid, None)
        self._bm25.remove(record_id)
        # the row the file holds under this id now: another process may have forgotten it since this one read the
        # file, and SQLite given its rowid to a new memory, which deleting by the remembered rowid erased
        row = self._row_of(record_id)
        if row is None:
            return
        if self._unmark(record_id) is not None:
            self._delta.memories -= 1
        self.db.execute("DELETE FROM memories WHERE rowid = ?", (row,))
        self._fts_drop(row)
        if self.vector_index == "sqlite-vec":
            self.db.execute("DELETE FROM memories_vec WHERE rowid = ?", (row,))

    def _row_of(self, record_id: str) -> int | None:
        found = list(self.db.execute("SELECT rowid FROM memories WHERE id = ?", (record_id,)))
        return found[0][0] if found else None

    # ---- search -------------------------------------------------------------------------
    def vector_top_k_many(self, queries: np.ndarray, k: int, flt: RecordFilter) -> list[list[tuple[str, float]]]:
        if self.vector_index == "matrix":
            return super().vector_top_k_many(queries, k, flt)
        return [self.vector_top_k(q, k, flt) for q in np.asarray(queries)]

    def vector_top_k(self, query: np.ndarray, k: int, flt: RecordFilter) -> list[tuple[str, float]]:
        if self.vector_index == "matrix":
            return super().vector_top_k(query, k, flt)
        return vec_top_k(self.db, query, k, flt, self._by_rowid, self._cache.records, self._cache.embeddings)

    @_writes
    def note_backup(self, dest: str, sealed_separately: bool) -> None:
        """Remember a backup this store wrote, so a forget can reach it too (the
        list read under the write lock: two processes noting one each keep both)."""
        self._begin(fresh=False)
        kept = [b for b in self.backups() if b.get("path") != dest]
        self._put_backups(self._fields, kept + [{"path": dest, "sealed_separately": bool(sealed_separately)}])

    def backup_to(self, dest: str) -> None:
        """A consistent copy through SQLite's online backup API (WAL included)."""
        import apsw

        self.commit()
        create_private(dest)
        os.chmod(dest, 0o600)  # a file already there keeps its mode through create_private: a backup is private
        target = apsw.Connection(dest)
        try:
            with target.backup("main", self.db, "main") as b:
                b.step()
        finally:
            target.close()

    # ---- audit log ---------------------------------------------------------------------
    @_writes
    def append_log(self, entries: Iterable[dict[str, Any]]) -> None:
        texts = [json.dumps(e, ensure_ascii=False, default=str) for e in entries]
        if texts:
            self._begin()  # the write lock: the numbers taken here are this writer's (a sealed entry is bound to its own)
            start = list(self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM log"))[0][0] + 1
            rows = [(seq, self._fields.seal_text(t, b"log", seq)) for seq, t in enumerate(texts, start)]
            self.db.executemany("INSERT INTO log(seq, entry) VALUES (?, ?)", rows)
            self._mark_log([(seq, None, entry) for seq, entry in rows])

    def log(self) -> list[dict[str, Any]]:
        self._check_header()
        return [json.loads(self._fields.open_text(e, b"log", seq)) for seq, e in self.db.execute("SELECT seq, entry FROM log ORDER BY seq")]

    @_writes
    def scrub_log(self, forgotten: set[str]) -> int:
        """Under the write lock from the first read: another process scrubbing
        the same entries meanwhile is read as it left them (the roster takes out
        what the file holds, not what this one read before)."""
        self._check_header()
        self._begin(fresh=False)
        rows, was = [], []
        for seq, e in self.db.execute("SELECT seq, entry FROM log ORDER BY seq"):
            clean = scrub_entry(json.loads(self._fields.open_text(e, b"log", seq)), forgotten)
            if clean is not None:
                rows.append((self._fields.seal_text(json.dumps(clean, ensure_ascii=False, default=str), b"log", seq), seq))
                was.append(e)
        if rows:
            self.db.executemany("UPDATE log SET entry = ? WHERE seq = ?", rows)
            self._mark_log([(seq, old, entry) for (entry, seq), old in zip(rows, was)])
        return len(rows)

    def erase_freed(self) -> bool:
        """With ``secure_delete`` a deleted row's bytes are zeroed, but FTS5
        keeps deleted terms in old index segments until they merge, and the
        WAL keeps page images until a checkpoint: merge, then checkpoint and
        truncate the WAL. True when another connection's read kept the
        checkpoint from finishing (its pages stay until the next one)."""
        self.commit()
        self.db.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")
        (busy, _, _), = list(self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
        return bool(busy)
