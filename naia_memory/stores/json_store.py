"""LocalStore: the whole memory in one JSON file the user can open, back up
and delete. Search runs in memory (numpy cosine, an inverted BM25 index).

Writes are atomic: the new snapshot goes to a temporary file in the same
folder, is fsync'd, then renamed over the old one, so a crash leaves either
the old file or the new one, never half of one. Embeddings are stored as
base64 of little-endian float32 (2 KiB for 384-d), not 384 decimal strings.
"""
from __future__ import annotations

import base64
import heapq
import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from ..cognition.bm25 import BM25Index, rank
from ..cognition.graph import EntityGraph
from ..records import MemoryRecord
from .port import SCHEMA_VERSION, EmbedderMismatchError, RecordFilter, StoreError

DEFAULT_PATH = Path("~/.naia/memory/naia-memory.json")
FORMAT = "naia-memory"


def default_path() -> Path:
    return DEFAULT_PATH.expanduser()


def encode_vector(v: np.ndarray) -> str:
    return base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(s: str, dim: int) -> np.ndarray:
    v = np.frombuffer(base64.b64decode(s), dtype="<f4")
    if v.shape != (dim,):
        raise StoreError(f"stored vector has {v.shape[0]} values, expected {dim}")
    return v.astype(np.float32)


def atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
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


class LocalStore:
    """JSON-file store. ``path=None`` keeps everything in memory (experiments)."""

    def __init__(self, path: str | os.PathLike | None = ..., *, autosave: bool = True):
        if path is ...:
            path = default_path()
        self.path = str(Path(path).expanduser()) if path is not None else None
        self.autosave = autosave
        self.graph = EntityGraph()
        self._meta: dict[str, Any] = {"format": FORMAT, "schema_version": SCHEMA_VERSION, "embedder": None}
        self._records: dict[str, MemoryRecord] = {}
        self._row: dict[str, int] = {}
        self._ids: list[str] = []
        self._buf = np.zeros((0, 0), dtype=np.float32)  # capacity-doubling buffer
        self._bm25 = BM25Index()
        self._log: list[dict[str, Any]] = []
        self._dirty = False
        if self.path is not None and Path(self.path).exists():
            self._load(Path(self.path))

    @property
    def _vecs(self) -> np.ndarray:
        return self._buf[: len(self._ids)]

    def _reset_vectors(self, n: int, dim: int) -> None:
        self._buf = np.zeros((max(n, 16), dim), dtype=np.float32)

    # ---- persistence -------------------------------------------------
    def _load(self, path: Path) -> None:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise StoreError(f"{path} is not valid JSON ({e}); the file was left untouched") from e
        if doc.get("format") != FORMAT:
            raise StoreError(f"{path} is not a naia-memory store (format={doc.get('format')!r})")
        if doc.get("schema_version", 0) > SCHEMA_VERSION:
            raise StoreError(f"{path} has schema {doc['schema_version']}, newer than this library ({SCHEMA_VERSION})")
        self._meta = {k: v for k, v in doc.items() if k not in ("records", "graph", "log")}
        emb = self._meta.get("embedder") or {}
        dim = emb.get("dim")
        vecs = []
        for item in doc.get("records", []):
            item = dict(item)
            vec = item.pop("embedding", None)
            rec = MemoryRecord.from_json(item)
            self._records[rec.id] = rec
            self._row[rec.id] = len(self._ids)
            self._ids.append(rec.id)
            if vec is None or dim is None:
                raise StoreError(f"{path}: record {rec.id} has no embedding or the store has no embedder entry")
            vecs.append(decode_vector(vec, dim))
            self._bm25.add(rec.id, rec.tokens)
        self._reset_vectors(len(vecs), dim or 0)
        if vecs:
            self._buf[: len(vecs)] = np.stack(vecs)
        self.graph = EntityGraph.from_json(doc.get("graph", []))
        self._log = list(doc.get("log", []))

    def _snapshot(self) -> str:
        records = []
        for rid in self._ids:
            d = self._records[rid].to_json()
            d["embedding"] = encode_vector(self._vecs[self._row[rid]])
            records.append(d)
        doc = dict(self._meta)
        doc["saved_at"] = datetime.now(timezone.utc).isoformat()
        doc["records"] = records
        doc["graph"] = self.graph.to_json()
        doc["log"] = self._log
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))

    def commit(self) -> None:
        if self.path is None or not self._dirty:
            return
        atomic_write_text(Path(self.path), self._snapshot())
        self._dirty = False

    def mark_dirty(self) -> None:
        self._dirty = True

    def close(self) -> None:
        self.commit()

    # ---- metadata -----------------------------------------------------
    def meta(self) -> dict[str, Any]:
        return dict(self._meta)

    def bind_embedder(self, name: str, dim: int) -> None:
        stored = self._meta.get("embedder")
        if stored is None:
            self._meta["embedder"] = {"name": name, "dim": int(dim)}
            self._reset_vectors(0, dim)
            self._dirty = True
            return
        if int(stored["dim"]) != int(dim):
            raise EmbedderMismatchError(self.path or "<memory>", stored, name, dim)
        if stored.get("name") != name:
            # Same dimension, other model: still incomparable vectors.
            raise EmbedderMismatchError(self.path or "<memory>", stored, name, dim)

    def rebind_embedder(self, name: str, dim: int) -> None:
        """For re-indexing: forget the old vectors' embedder and shape."""
        self._meta["embedder"] = {"name": name, "dim": int(dim)}
        self._reset_vectors(len(self._ids), dim)
        self._dirty = True

    # ---- records --------------------------------------------------------
    def put(self, record: MemoryRecord, embedding: np.ndarray) -> None:
        if record.id in self._records:
            raise StoreError(f"duplicate id {record.id}")
        vec = np.asarray(embedding, dtype=np.float32).reshape(1, -1)
        if self._buf.shape[1] != vec.shape[1]:
            raise StoreError(f"vector of dim {vec.shape[1]} does not fit store of dim {self._buf.shape[1]}")
        n = len(self._ids)
        if n == self._buf.shape[0]:
            grown = np.zeros((max(16, 2 * n), self._buf.shape[1]), dtype=np.float32)
            grown[:n] = self._buf[:n]
            self._buf = grown
        self._buf[n] = vec[0]
        self._records[record.id] = record
        self._row[record.id] = n
        self._ids.append(record.id)
        self._bm25.add(record.id, record.tokens)
        self._dirty = True

    def update(self, record: MemoryRecord) -> None:
        old = self._records.get(record.id)
        if old is None:
            raise StoreError(f"no record {record.id}")
        if tuple(record.tokens) != self._bm25.doc_tokens.get(record.id):
            self._bm25.add(record.id, record.tokens)
        self._records[record.id] = record
        self._dirty = True

    def set_embedding(self, record_id: str, embedding: np.ndarray) -> None:
        self._buf[self._row[record_id]] = np.asarray(embedding, dtype=np.float32)
        self._dirty = True

    def get(self, record_id: str) -> MemoryRecord | None:
        return self._records.get(record_id)

    def delete(self, record_id: str) -> None:
        if record_id not in self._records:
            return
        row = self._row.pop(record_id)
        last = self._ids[-1]
        if last != record_id:
            self._ids[row] = last
            self._row[last] = row
            self._buf[row] = self._buf[len(self._ids) - 1]
        self._ids.pop()
        del self._records[record_id]
        self._bm25.remove(record_id)
        self._dirty = True

    def records(self, flt: RecordFilter | None = None) -> Iterator[MemoryRecord]:
        for rid in list(self._ids):
            r = self._records[rid]
            if flt is None or flt.matches(r):
                yield r

    def __len__(self) -> int:
        return len(self._ids)

    def embeddings(self, ids: Sequence[str]) -> np.ndarray:
        if not ids:
            return np.zeros((0, self._vecs.shape[1]), dtype=np.float32)
        return self._vecs[[self._row[i] for i in ids]]

    # ---- search ---------------------------------------------------------
    def vector_top_k(self, query: np.ndarray, k: int, flt: RecordFilter) -> list[tuple[str, float]]:
        """Score every row with one matrix product, then walk down the ranking
        until ``k`` rows pass the filter (no per-record Python scan up front)."""
        n = len(self._ids)
        if n == 0 or k <= 0:
            return []
        sims = self._vecs @ np.asarray(query, dtype=np.float32)
        width = min(n, max(4 * k, 64))
        while True:
            top = np.argpartition(-sims, width - 1)[:width] if width < n else np.arange(n)
            top = top[np.lexsort((np.array([self._ids[i] for i in top]), -sims[top]))]
            hits = [(self._ids[i], float(sims[i])) for i in top if flt.matches(self._records[self._ids[i]])][:k]
            if len(hits) == k or width >= n:
                return hits
            width = min(n, width * 4)

    def keyword_top_k(self, tokens: Sequence[str], k: int, flt: RecordFilter) -> list[tuple[str, float]]:
        scores = self._bm25.scores(tokens)
        width = max(4 * k, 64)
        while True:
            top = heapq.nsmallest(width, scores.items(), key=lambda kv: (-kv[1], kv[0]))
            hits = [(i, s) for i, s in top if flt.matches(self._records[i])][:k]
            if len(hits) == k or width >= len(scores):
                return hits
            width *= 4

    # ---- audit log --------------------------------------------------------
    def append_log(self, entries: Iterable[dict[str, Any]]) -> None:
        self._log.extend(entries)
        self._dirty = True

    def log(self) -> list[dict[str, Any]]:
        return list(self._log)
