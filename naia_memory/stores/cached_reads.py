"""The read side both file stores share: every read is answered from memory.

The JSON and SQLite stores keep the same in-memory state (a ``RecordCache`` of
records, vectors and columns; a ``BM25Index`` of the engine's tokens) and differ
only in how a change reaches the disk. What reads that state is the same code,
here, so the two cannot drift apart (the parity tests hold them to the same
rankings).
"""
from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np

from ..cognition.bm25 import BM25Index
from ..records import MemoryRecord
from ..recall.columns import Columns
from .cache import RecordCache
from .port import RecordFilter, kind_tags


class CachedReads:
    _cache: RecordCache
    _bm25: BM25Index

    def id_key(self) -> bytes | None:
        """The key memory ids are hashed with: an encrypted store's (see ``crypto.Sealer.id_key``), else None."""
        sealer = getattr(self, "_sealer", None)
        return sealer.id_key if sealer is not None else None

    def get(self, record_id: str) -> MemoryRecord | None:
        return self._cache.records.get(record_id)

    def records(self, flt: RecordFilter | None = None) -> Iterator[MemoryRecord]:
        return self._cache.iter(flt)

    def __len__(self) -> int:
        return len(self._cache)

    def embeddings(self, ids: Sequence[str]) -> np.ndarray:
        return self._cache.embeddings(ids)

    def candidate_columns(self, ids: Sequence[str]) -> Columns:
        """What the recall stages read of these records, gathered from the cache's columns."""
        return self._cache.candidate_columns(ids)

    def vector_top_k(self, query: np.ndarray, k: int, flt: RecordFilter) -> list[tuple[str, float]]:
        return self._cache.vector_top_k(query, k, flt)

    def vector_top_k_many(self, queries: np.ndarray, k: int, flt: RecordFilter) -> list[list[tuple[str, float]]]:
        return self._cache.vector_top_k_many(queries, k, flt)

    def keyword_top_k(self, tokens: Sequence[str], k: int, flt: RecordFilter) -> list[tuple[str, float]]:
        return self._bm25.ranked(tokens, lambda i: flt.matches(self._cache.records[i]), k, kind_tags(flt))
