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

from ..cognition.bm25 import BM25Index
from ..cognition.graph import EntityGraph
from ..records import MemoryRecord
from .cache import RecordCache, check_embedder
from .port import SCHEMA_VERSION, RecordFilter, StoreError

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
        self._cache = RecordCache()
        self._bm25 = BM25Index()
        self._log: list[dict[str, Any]] = []
        self._dirty = False
        if self.path is not None and Path(self.path).exists():
            self._load(Path(self.path))

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
        dim = (self._meta.get("embedder") or {}).get("dim")
        items = doc.get("records", [])
        self._cache.reset_vectors(len(items), dim or 0)
        for item in items:
            item = dict(item)
            vec = item.pop("embedding", None)
            rec = MemoryRecord.from_json(item)
            if vec is None or dim is None:
                raise StoreError(f"{path}: record {rec.id} has no embedding or the store has no embedder entry")
            self._cache.add(rec, decode_vector(vec, dim))
            self._bm25.add(rec.id, rec.tokens)
        self.graph = EntityGraph.from_json(doc.get("graph", []))
        self._log = list(doc.get("log", []))

    def _snapshot(self) -> str:
        c = self._cache
        records = []
        for rid in c.ids:
            d = c.records[rid].to_json()
            d["embedding"] = encode_vector(c.vectors[c.row[rid]])
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

    def close(self) -> None:
        self.commit()

    # ---- metadata -----------------------------------------------------
    def meta(self) -> dict[str, Any]:
        return dict(self._meta)

    def bind_embedder(self, name: str, dim: int) -> None:
        if check_embedder(self.path or "<memory>", self._meta.get("embedder"), name, dim):
            self._meta["embedder"] = {"name": name, "dim": int(dim)}
            self._cache.reset_vectors(0, dim)
            self._dirty = True

    def rebind_embedder(self, name: str, dim: int) -> None:
        """For re-indexing: forget the old vectors' embedder and shape."""
        self._meta["embedder"] = {"name": name, "dim": int(dim)}
        self._cache.reset_vectors(len(self._cache), dim)
        self._dirty = True

    # ---- records --------------------------------------------------------
    def put(self, record: MemoryRecord, embedding: np.ndarray) -> None:
        self._cache.add(record, embedding)
        self._bm25.add(record.id, record.tokens)
        self._dirty = True

    def update(self, record: MemoryRecord) -> None:
        if record.id not in self._cache.records:
            raise StoreError(f"no record {record.id}")
        if tuple(record.tokens) != self._bm25.doc_tokens.get(record.id):
            self._bm25.add(record.id, record.tokens)
        self._cache.records[record.id] = record
        self._dirty = True

    def set_embedding(self, record_id: str, embedding: np.ndarray) -> None:
        self._cache.set_vector(record_id, embedding)
        self._dirty = True

    def get(self, record_id: str) -> MemoryRecord | None:
        return self._cache.records.get(record_id)

    def delete(self, record_id: str) -> None:
        if record_id not in self._cache.records:
            return
        self._cache.remove(record_id)
        self._bm25.remove(record_id)
        self._dirty = True

    def records(self, flt: RecordFilter | None = None) -> Iterator[MemoryRecord]:
        return self._cache.iter(flt)

    def __len__(self) -> int:
        return len(self._cache)

    def embeddings(self, ids: Sequence[str]) -> np.ndarray:
        return self._cache.embeddings(ids)

    # ---- search ---------------------------------------------------------
    def vector_top_k(self, query: np.ndarray, k: int, flt: RecordFilter) -> list[tuple[str, float]]:
        return self._cache.vector_top_k(query, k, flt)

    def keyword_top_k(self, tokens: Sequence[str], k: int, flt: RecordFilter) -> list[tuple[str, float]]:
        return filtered_top_k(self._bm25.scores(tokens), k, lambda i: flt.matches(self._cache.records[i]))

    def backup_to(self, dest: str) -> None:
        import shutil

        if self.path is None:
            raise ValueError("this store lives in memory only; nothing to back up")
        self._dirty = True
        self.commit()
        shutil.copyfile(self.path, dest)

    # ---- audit log --------------------------------------------------------
    def append_log(self, entries: Iterable[dict[str, Any]]) -> None:
        self._log.extend(entries)
        self._dirty = True

    def log(self) -> list[dict[str, Any]]:
        return list(self._log)


def filtered_top_k(scores: dict[str, float], k: int, keep) -> list[tuple[str, float]]:
    """Best ``k`` of ``scores`` that pass ``keep``, ties broken by id, without
    sorting everything when most candidates pass."""
    width = max(4 * k, 64)
    while True:
        top = heapq.nsmallest(width, scores.items(), key=lambda kv: (-kv[1], kv[0]))
        hits = [(i, s) for i, s in top if keep(i)][:k]
        if len(hits) == k or width >= len(scores):
            return hits
        width *= 4
