"""An approximate nearest-neighbour index (faiss HNSW) for stores past a size.

Exact cosine over the in-memory matrix is the default: at 100k memories of
384 dimensions it costs ~7 ms on two cores (README, latency floor) and is
always right. Past ``hnsw_from`` rows a graph index (HNSW, Malkov &
Yashunin 2018) answers in well under a millisecond; it only proposes
candidates, which are then filtered and scored exactly against the matrix,
so a filter never hides a memory the graph found and scores stay exact.

HNSW cannot delete, so a removed or re-embedded memory's label is marked
dead and skipped; the graph is rebuilt once dead labels pass a quarter of
it. faiss is optional (``pip install 'naia-memory[ann]'``).
"""
from __future__ import annotations

import functools
import logging
from typing import Sequence

import numpy as np

log = logging.getLogger("naia_memory")

VECTOR_INDEXES = ("auto", "exact", "hnsw")
AUTO_HNSW_FROM = 200_000  # "auto": exact below this (fast enough, see README), HNSW above when faiss is installed


def faiss_available() -> bool:
    """Whether faiss is installed, without importing it: every store asks on
    open, and importing faiss there cost time and log lines for nothing."""
    import importlib.util

    return importlib.util.find_spec("faiss") is not None


@functools.lru_cache(maxsize=1)
def _say_exact_once() -> None:
    """Said once a process: a run that opens a store per conversation would say it on every one."""
    log.info("vector_index='auto': faiss is not installed, so search stays exact at every size")


def resolve_hnsw_from(vector_index: str, hnsw_from: int | None) -> int | None:
    """The row count from which a store uses HNSW, or None for exact always.
    An explicit "hnsw" without faiss is an error, not a quiet exact search."""
    if vector_index not in VECTOR_INDEXES:
        raise ValueError(f"unknown vector_index {vector_index!r}; use one of {VECTOR_INDEXES}")
    if hnsw_from is not None and hnsw_from < 1:
        raise ValueError("hnsw_from must be >= 1")
    if vector_index == "exact":
        return None
    if vector_index == "hnsw":
        if not faiss_available():
            raise ImportError("vector_index='hnsw' needs faiss: pip install 'naia-memory[ann]'")
        return hnsw_from if hnsw_from is not None else 1
    if not faiss_available():
        _say_exact_once()
        return None
    return hnsw_from if hnsw_from is not None else AUTO_HNSW_FROM


class HnswIndex:
    """faiss ``IndexHNSWFlat`` over inner products, keyed by record id."""

    def __init__(self, dim: int, *, m: int = 32, ef_construction: int = 80, ef_search: int = 128):
        import faiss

        self.dim = dim
        self._params = (m, ef_construction, ef_search)
        self._index = faiss.IndexHNSWFlat(dim, m, faiss.METRIC_INNER_PRODUCT)
        self._index.hnsw.efConstruction = ef_construction
        self._index.hnsw.efSearch = ef_search
        self._ids: list[str | None] = []  # faiss label -> record id, None once removed
        self._label: dict[str, int] = {}
        self.dead = 0

    def __len__(self) -> int:
        return len(self._label)

    def add_many(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        if not len(ids):
            return
        for rid in ids:
            if rid in self._label:
                self.remove(rid)
            self._label[rid] = len(self._ids)
            self._ids.append(rid)
        self._index.add(np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(ids), self.dim))

    def remove(self, rid: str) -> None:
        label = self._label.pop(rid, None)
        if label is not None:
            self._ids[label] = None
            self.dead += 1

    @property
    def stale(self) -> bool:
        """Dead labels past a quarter of the graph: time to rebuild it."""
        return self.dead > max(1024, len(self._ids) // 4)

    def search(self, query: np.ndarray, width: int) -> list[str]:
        """About ``width`` live ids nearest to ``query`` (approximate order)."""
        want = min(len(self._ids), width + self.dead)
        if want <= 0:
            return []
        self._index.hnsw.efSearch = max(self._params[2], want)
        _, labels = self._index.search(np.asarray(query, dtype=np.float32).reshape(1, self.dim), want)
        ids = self._ids
        return [rid for lab in labels[0].tolist() if lab >= 0 and (rid := ids[lab]) is not None]


__all__ = ["AUTO_HNSW_FROM", "HnswIndex", "VECTOR_INDEXES", "faiss_available", "resolve_hnsw_from"]
