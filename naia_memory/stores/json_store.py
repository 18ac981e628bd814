"""LocalStore: the memory in one JSON file the user can open, back up and
delete, plus a journal of the commits since that file was last written.
Search runs in memory (numpy cosine, an inverted BM25 index).

A commit appends the changed records and edges to ``<file>.journal``
(one fsync'd line, O(change)); when the journal outgrows the snapshot, and
on close, the snapshot is rewritten with everything and the journal dropped
(amortised O(1) per change, since a rewrite of S bytes follows at least S
bytes of journal). So after ``close()`` the JSON file alone is the whole,
human-readable memory. Snapshots are atomic: written to a temporary file in
the same folder, fsync'd, then renamed over the old one (the file's format:
``json_snapshot``). One process writes a store at a time (``<file>.lock``).
"""
from __future__ import annotations

import binascii
import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from ..cognition.bm25 import BM25Index
from ..cognition.graph import EntityGraph
from ..records import MemoryRecord
from ..recall.columns import Columns
from .cache import RecordCache, check_embedder
from .journal import Batch, Journal
from . import json_snapshot
from .json_members import utf8_pieces
from .json_snapshot import FORMAT, decode_vector, encode_vector
from .lock import FileLock
from .ann import resolve_hnsw_from
from .crypto import MAGIC, Sealer, is_encrypted, split
from .port import SCHEMA_VERSION, RecordFilter, StoreError, kind_tag, kind_tags, scrub_entry

DEFAULT_PATH = Path("~/.naia/memory/naia-memory.json")
MIN_COMPACT_BYTES = 1 << 20  # below this a journal is never worth folding in early


def default_path() -> Path:
    return DEFAULT_PATH.expanduser()


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_chunks(path, [text.encode("utf-8")])


def atomic_write_chunks(path: Path, chunks: Iterable[bytes]) -> int:
    """Write ``chunks`` to ``path`` atomically (temp file, fsync, rename,
    fsync of the folder); returns the bytes written. The chunks are consumed
    as they are written, so a caller that produces them one record at a time
    never holds the whole file in memory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    size = 0
    try:
        with os.fdopen(fd, "wb", buffering=1 << 18) as f:
            for chunk in chunks:
                f.write(chunk)
                size += len(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    try:  # make the rename itself durable
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:  # pragma: no cover - some filesystems refuse directory fsync
        pass
    return size


def private_copy(src: str, dest: str) -> None:
    """Copy ``src`` to ``dest`` readable by the user only (0600): a backup
    holds everything the store does."""
    import shutil

    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT
    with os.fdopen(fd, "wb") as out, open(src, "rb") as f:
        shutil.copyfileobj(f, out)
        out.flush()
        os.fsync(out.fileno())


class LocalStore:
    """JSON-file store. ``path=None`` keeps everything in memory (experiments)."""

    def __init__(self, path: str | os.PathLike | None = ..., *, autosave: bool = True, vector_index: str = "auto",
                 hnsw_from: int | None = None, passphrase: str | None = None, wait: float = 0.0):
        """``vector_index``: "exact" cosine over the matrix, "hnsw" from
        ``hnsw_from`` rows on (needs faiss), or "auto": exact below
        ``ann.AUTO_HNSW_FROM`` rows, HNSW above it when faiss is installed.
        ``passphrase``: the file and its journal are encrypted (``crypto.py``);
        a new store is created encrypted, an existing one must match.
        ``wait``: seconds to wait while another process holds the store
        (one writer at a time), instead of failing at once."""
        if path is ...:
            path = default_path()
        self.path = str(Path(path).expanduser()) if path is not None else None
        self.autosave = autosave
        self.graph = EntityGraph()
        self._meta: dict[str, Any] = {"format": FORMAT, "schema_version": SCHEMA_VERSION, "embedder": None}
        self._cache = RecordCache(hnsw_from=resolve_hnsw_from(vector_index, hnsw_from))
        self._bm25 = BM25Index()
        self._log: list[dict[str, Any]] = []
        self._log_written = 0
        self._changed: dict[str, bool] = {}  # record id -> its vector changed too
        self._rewrite = True  # the next commit writes a whole snapshot (new store, new embedder)
        self._seq = 0
        self._snapshot_bytes = 0
        self._lock: FileLock | None = None
        self._journal: Journal | None = None
        self._sealer: Sealer | None = None
        if passphrase is not None and path is None:
            raise ValueError("passphrase= encrypts a file; an in-memory store (path=None) has none")
        if self.path is not None:
            self._lock = FileLock(self.path)
            self._lock.acquire(wait)
            try:
                snapshot = Path(self.path)
                if snapshot.exists():
                    self._load(snapshot, passphrase)
                elif passphrase is not None:
                    self._sealer = Sealer.new(passphrase)
                codec = None
                if self._sealer is not None:
                    sealer = self._sealer
                    codec = (lambda b: sealer.seal(b, b"journal"),
                             lambda b: sealer.open(b, b"journal", f"{self.path}.journal"))
                self._journal = Journal(f"{self.path}.journal", codec)
                if not snapshot.exists() and self._journal.size:
                    raise StoreError(f"{self._journal.path} has changes but {snapshot} is missing; "
                                     "restore the JSON file from a backup (the journal alone holds only recent changes)")
                self._replay(self._journal.read())
                self._remove_stale_temps()
            except BaseException:
                self._lock.release()
                raise

    @property
    def journal_path(self) -> str | None:
        return str(self._journal.path) if self._journal is not None else None

    # ---- persistence -------------------------------------------------
    def _load(self, path: Path, passphrase: str | None) -> None:
        with open(path, "rb") as f:
            encrypted = is_encrypted(f.read(len(MAGIC)))
        data: bytes | None = None
        if encrypted:
            if passphrase is None:
                raise StoreError(f"{path} is encrypted; open it with passphrase=")
            head, body = split(path.read_bytes())
            self._sealer = Sealer.from_header(head, passphrase, str(path))
            data = self._sealer.open(body, b"snapshot", str(path))
        elif passphrase is not None:
            raise StoreError(f"{path} is not encrypted; open it without a passphrase (an encrypted copy: "
                             "MemorySystem.backup(path=..., passphrase=...))")
        size, sealed, records = json_snapshot.scan(path, data)
        try:
            if data is not None:
                self._load_text(path, utf8_pieces(data), size, sealed, records)
            else:
                with open(path, "rb") as f:
                    self._load_text(path, utf8_pieces(f), size, sealed, records)
        except StoreError:
            raise
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise StoreError(f"{path} is not valid JSON ({e}); the file was left untouched") from e
        except (KeyError, TypeError, ValueError, AttributeError, binascii.Error) as e:  # a damaged file without a checksum
            raise StoreError(f"{path} is damaged ({type(e).__name__}: {e}); the file was left untouched") from e

    def _load_text(self, path: Path, text: Iterable[str], size: int, sealed: bool, records: int) -> None:
        """Each record goes into the cache as it is parsed (``json_snapshot.read``)."""
        head = json_snapshot.read(path, text, sealed, records, start=self._cache.reset_vectors,
                                  take=lambda item, dim: self._take(path, item, dim))
        self._meta = {k: v for k, v in head.items() if k not in ("graph", "log", "journal_seq", "saved_at")}
        self._seq = int(head.get("journal_seq", 0))
        self._snapshot_bytes = size
        self.graph = EntityGraph.from_json(head.get("graph", []))
        self._log = list(head.get("log", []))
        self._log_written = len(self._log)
        self._rewrite = False

    def _take(self, path: Path, item: Any, dim: int | None) -> None:
        vec = item.pop("embedding", None)
        rec = MemoryRecord.from_json(item)
        if vec is None or dim is None:
            raise StoreError(f"{path}: record {rec.id} has no embedding or the store has no embedder entry")
        try:
            v = decode_vector(vec, dim)
        except StoreError as e:
            raise StoreError(f"{path} is damaged: record {rec.id}: {e}; the file was left untouched") from None
        self._cache.add(rec, v)
        self._bm25.add(rec.id, rec.tokens, kind_tag(rec.kind))

    def _replay(self, batches: Iterable[Batch]) -> None:
        """Apply the journal's commits newer than the snapshot."""
        for batch in batches:
            if batch.seq <= self._seq:
                continue  # already in the snapshot (crash between rename and truncate)
            for op in batch.ops:
                self._apply(op)
            self._seq = batch.seq
        self.graph.changed.clear()
        self._log_written = len(self._log)
        self._changed.clear()

    def _apply(self, op: dict[str, Any]) -> None:
        kind = op.get("op")
        if kind == "meta":
            self._meta = dict(op["meta"])
            dim = (self._meta.get("embedder") or {}).get("dim") or 0
            if self._cache.dim != dim:
                self._cache.reset_vectors(len(self._cache), dim)
        elif kind == "put":
            item = dict(op["record"])
            vec = item.pop("embedding", None)
            rec = MemoryRecord.from_json(item)
            dim = (self._meta.get("embedder") or {}).get("dim")
            if rec.id in self._cache.records:
                self._cache.replace(rec)
                if vec is not None:
                    self._cache.set_vector(rec.id, decode_vector(vec, dim))
            else:
                if vec is None:
                    raise StoreError(f"{self.journal_path}: new record {rec.id} has no embedding")
                self._cache.add(rec, decode_vector(vec, dim))
            self._bm25.add(rec.id, rec.tokens, kind_tag(rec.kind))
        elif kind == "delete":
            if op["id"] in self._cache.records:
                self._cache.remove(op["id"])
                self._bm25.remove(op["id"])
        elif kind == "edges":
            self.graph.set_weights(op["rows"])
        elif kind == "log":
            self._log.extend(op["entries"])
        else:
            raise StoreError(f"{self.journal_path}: unknown operation {kind!r}")

    def _snapshot(self) -> str:
        """The whole snapshot as one string (an encrypted store seals it whole; backups)."""
        return b"".join(self._snapshot_chunks()).decode("utf-8")

    def _snapshot_chunks(self) -> Iterator[bytes]:
        """The snapshot's bytes, one record at a time (``json_snapshot.chunks``)."""
        head = {k: v for k, v in self._meta.items() if k != "checksum"}
        head["saved_at"] = datetime.now(timezone.utc).isoformat()
        head["journal_seq"] = self._seq
        c = self._cache
        rows = ({**c.records[rid].to_json(), "embedding": encode_vector(c.vectors[c.row[rid]])} for rid in c.ids)
        return json_snapshot.chunks(head, rows, self.graph.to_json(), self._log)

    def _pending_ops(self) -> list[dict[str, Any]]:
        ops: list[dict[str, Any]] = []
        c = self._cache
        for rid, vec_changed in self._changed.items():
            rec = c.records.get(rid)
            if rec is None:
                ops.append({"op": "delete", "id": rid})
                continue
            d = rec.to_json()
            if vec_changed:
                d["embedding"] = encode_vector(c.vectors[c.row[rid]])
            ops.append({"op": "put", "record": d})
        edges = self.graph.take_changes()
        if edges:
            ops.append({"op": "edges", "rows": edges})
        if self._log_written < len(self._log):
            ops.append({"op": "log", "entries": self._log[self._log_written:]})
        return ops

    def _has_changes(self) -> bool:
        return bool(self._changed or self.graph.changed or self._log_written < len(self._log))

    def commit(self) -> None:
        """Durable on return. Appends to the journal, or rewrites the snapshot
        when the journal has outgrown it."""
        if self.path is None or self._journal is None:
            return
        if self._rewrite or self._journal.size > max(self._snapshot_bytes, MIN_COMPACT_BYTES):
            self.compact()
            return
        if not self._has_changes():
            return
        ops = self._pending_ops()
        self._journal.append(Batch(self._seq + 1, ops))
        self._seq += 1
        self._changed.clear()
        self._log_written = len(self._log)

    def compact(self) -> None:
        """Rewrite the snapshot with everything and drop the journal."""
        if self.path is None or self._journal is None:
            return
        if not self._rewrite and not self._journal.size and not self._has_changes():
            return
        self._seq += 1
        if self._sealer is None:
            self._snapshot_bytes = atomic_write_chunks(Path(self.path), self._snapshot_chunks())
        else:  # sealed whole (one authenticated message), so built in memory
            text = self._sealed(self._snapshot())
            atomic_write_text(Path(self.path), text)
            self._snapshot_bytes = len(text)
        self._journal.clear()
        self._changed.clear()
        self.graph.changed.clear()
        self._log_written = len(self._log)
        self._rewrite = False

    def _sealed(self, text: str) -> str:
        """The snapshot as written: itself, or encrypted under the store's key."""
        if self._sealer is None:
            return text
        return (self._sealer.header + b"\n" + self._sealer.seal(text.encode("utf-8"), b"snapshot") + b"\n").decode("ascii")

    def close(self) -> None:
        """Folds the journal into the JSON file, so the file alone is the memory."""
        try:
            self.compact()
        finally:
            if self._lock is not None:
                self._lock.release()

    # ---- metadata -----------------------------------------------------
    def meta(self) -> dict[str, Any]:
        return dict(self._meta)

    def bind_embedder(self, name: str, dim: int) -> None:
        if check_embedder(self.path or "<memory>", self._meta.get("embedder"), name, dim):
            self._meta["embedder"] = {"name": name, "dim": int(dim)}
            self._cache.reset_vectors(0, dim)
            self._rewrite = True

    def note_backup(self, dest: str, sealed_separately: bool) -> None:
        """Remember a backup this store wrote, so a forget can reach it too."""
        kept = [b for b in self._meta.get("backups", []) if b.get("path") != dest]
        self._meta["backups"] = kept + [{"path": dest, "sealed_separately": bool(sealed_separately)}]
        self._rewrite = True

    def backups(self) -> list[dict[str, Any]]:
        return [dict(b) for b in self._meta.get("backups", [])]

    def rebind_embedder(self, name: str, dim: int) -> None:
        """For re-indexing: forget the old vectors' embedder and shape."""
        self._meta["embedder"] = {"name": name, "dim": int(dim)}
        self._cache.reset_vectors(len(self._cache), dim)
        self._rewrite = True

    # ---- records --------------------------------------------------------
    def put(self, record: MemoryRecord, embedding: np.ndarray) -> None:
        self._cache.add(record, embedding)
        self._bm25.add(record.id, record.tokens, kind_tag(record.kind))
        self._changed[record.id] = True

    def update(self, record: MemoryRecord) -> None:
        if record.id not in self._cache.records:
            raise StoreError(f"no record {record.id}")
        if tuple(record.tokens) != self._bm25.doc_tokens.get(record.id):
            self._bm25.add(record.id, record.tokens, kind_tag(record.kind))
        self._cache.replace(record)
        self._changed[record.id] = self._changed.get(record.id, False)

    def set_embedding(self, record_id: str, embedding: np.ndarray) -> None:
        self._cache.set_vector(record_id, embedding)
        self._changed[record_id] = True

    def get(self, record_id: str) -> MemoryRecord | None:
        return self._cache.records.get(record_id)

    def delete(self, record_id: str) -> None:
        if record_id not in self._cache.records:
            return
        self._cache.remove(record_id)
        self._bm25.remove(record_id)
        self._changed[record_id] = False

    def records(self, flt: RecordFilter | None = None) -> Iterator[MemoryRecord]:
        return self._cache.iter(flt)

    def __len__(self) -> int:
        return len(self._cache)

    def embeddings(self, ids: Sequence[str]) -> np.ndarray:
        return self._cache.embeddings(ids)

    # ---- search ---------------------------------------------------------
    def candidate_columns(self, ids: Sequence[str]) -> Columns:
        """What the recall stages read of these records, gathered from the cache's columns."""
        return self._cache.candidate_columns(ids)

    def vector_top_k(self, query: np.ndarray, k: int, flt: RecordFilter) -> list[tuple[str, float]]:
        return self._cache.vector_top_k(query, k, flt)

    def vector_top_k_many(self, queries: np.ndarray, k: int, flt: RecordFilter) -> list[list[tuple[str, float]]]:
        return self._cache.vector_top_k_many(queries, k, flt)

    def keyword_top_k(self, tokens: Sequence[str], k: int, flt: RecordFilter) -> list[tuple[str, float]]:
        return self._bm25.ranked(tokens, lambda i: flt.matches(self._cache.records[i]), k, kind_tags(flt))

    def backup_to(self, dest: str, passphrase: str | None = None) -> None:
        """A copy of the store at ``dest`` (0600). With ``passphrase`` the
        copy is encrypted under it (its own salt), whether or not this store
        is; without, the copy is as this store is (encrypted stays encrypted)."""
        if self.path is None:
            raise ValueError("this store lives in memory only; nothing to back up")
        self.commit()
        self.compact()
        if passphrase is None:
            private_copy(self.path, dest)
            return
        sealer = Sealer.new(passphrase)
        body = sealer.header + b"\n" + sealer.seal(self._snapshot().encode("utf-8"), b"snapshot") + b"\n"
        tmp = f"{dest}.partial"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, dest)

    # ---- audit log --------------------------------------------------------
    def append_log(self, entries: Iterable[dict[str, Any]]) -> None:
        self._log.extend(entries)

    def log(self) -> list[dict[str, Any]]:
        return list(self._log)

    def scrub_log(self, forgotten: set[str]) -> int:
        n = 0
        for i, e in enumerate(self._log):
            clean = scrub_entry(e, forgotten)
            if clean is not None:
                self._log[i] = clean
                n += 1
        if n:
            self._rewrite = True  # entries already on disk changed: only a rewrite takes the words out
        return n

    def erase_freed(self) -> None:
        """A forget rewrites the file now (the journal and the old snapshot
        held the words), and removes any temp copy a crash left."""
        self._rewrite = True
        self.compact()
        self._remove_stale_temps()

    def _remove_stale_temps(self) -> None:
        """``.name.*.tmp`` files are half-written snapshots from a crash; under
        the lock no other writer can own one."""
        if self.path is None:
            return
        p = Path(self.path)
        for tmp in p.parent.glob(f".{p.name}.*.tmp"):
            try:
                tmp.unlink()
            except FileNotFoundError:  # pragma: no cover - raced with nothing under the lock
                pass
