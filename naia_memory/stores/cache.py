"""The in-process hot copy every store keeps: records by id and their vectors
in one contiguous float32 matrix (AIDA's "numpy cosine beats a vector DB at
human scale"), so filters, gets and exact cosine top-k cost no I/O.
"""
from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np

from ..records import MemoryRecord
from .port import EmbedderMismatchError, RecordFilter, StoreError


class RecordCache:
    def __init__(self) -> None:
        self.records: dict[str, MemoryRecord] = {}
        self.ids: list[str] = []
        self.row: dict[str, int] = {}
        self.buf = np.zeros((0, 0), dtype=np.float32)  # capacity-doubling

    @property
    def vectors(self) -> np.ndarray:
        return self.buf[: len(self.ids)]

    @property
    def dim(self) -> int:
        return int(self.buf.shape[1])

    def reset_vectors(self, n: int, dim: int) -> None:
        self.buf = np.zeros((max(n, 16), dim), dtype=np.float32)

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, record: MemoryRecord, vec: np.ndarray) -> None:
        if record.id in self.records:
            raise StoreError(f"duplicate id {record.id}")
        vec = np.asarray(vec, dtype=np.float32).reshape(-1)
        if self.dim != vec.shape[0]:
            raise StoreError(f"vector of dim {vec.shape[0]} does not fit store of dim {self.dim}")
        n = len(self.ids)
        if n == self.buf.shape[0]:
            grown = np.zeros((max(16, 2 * n), self.dim), dtype=np.float32)
            grown[:n] = self.buf[:n]
            self.buf = grown
        self.buf[n] = vec
        self.records[record.id] = record
        self.row[record.id] = n
        self.ids.append(record.id)

    def set_vector(self, record_id: str, vec: np.ndarray) -> None:
        self.buf[self.row[record_id]] = np.asarray(vec, dtype=np.float32)

    def remove(self, record_id: str) -> None:
        row = self.row.pop(record_id)
        last = self.ids[-1]
        if last != record_id:
            self.ids[row] = last
            self.row[last] = row
            self.buf[row] = self.buf[len(self.ids) - 1]
        self.ids.pop()
        del self.records[record_id]

    def iter(self, flt: RecordFilter | None = None) -> Iterator[MemoryRecord]:
        for rid in list(self.ids):
            r = self.records[rid]
            if flt is None or flt.matches(r):
                yield r

    def embeddings(self, ids: Sequence[str]) -> np.ndarray:
        if not ids:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.vectors[[self.row[i] for i in ids]]

    def vector_top_k(self, query: np.ndarray, k: int, flt: RecordFilter) -> list[tuple[str, float]]:
        """One matrix product scores every row; then walk down the ranking
        until ``k`` rows pass the filter (ties broken by id)."""
        n = len(self.ids)
        if n == 0 or k <= 0:
            return []
        sims = self.vectors @ np.asarray(query, dtype=np.float32)
        width = min(n, max(4 * k, 64))
        while True:
            top = np.argpartition(-sims, width - 1)[:width] if width < n else np.arange(n)
            top = top[np.lexsort((np.array([self.ids[i] for i in top]), -sims[top]))]
            hits = [(self.ids[i], float(sims[i])) for i in top if flt.matches(self.records[self.ids[i]])][:k]
            if len(hits) == k or width >= n:
                return hits
            width = min(n, width * 4)


def check_embedder(path: str, stored: dict | None, name: str, dim: int) -> bool:
    """True when the store is new (no embedder yet); raises on a mismatch."""
    if stored is None:
        return True
    if int(stored["dim"]) != int(dim) or stored.get("name") != name:
        raise EmbedderMismatchError(path, stored, name, dim)
    return False
