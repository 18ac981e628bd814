"""Reciprocal Rank Fusion (Cormack, Clarke & Buettcher, SIGIR 2009), k = 60."""
from __future__ import annotations

from typing import Mapping, Sequence

from .bm25 import rank


def rrf(runs: Sequence[Sequence[tuple[str, float]]], k: int = 60, weights: Sequence[float] | None = None) -> list[tuple[str, float]]:
    """Fuse ranked lists: score(d) = sum_i w_i / (k + rank_i(d)), ranks from 1."""
    if weights is not None and len(weights) != len(runs):
        raise ValueError("weights must match runs one to one")
    fused: dict[str, float] = {}
    for i, run in enumerate(runs):
        w = 1.0 if weights is None else weights[i]
        for r, (doc_id, _score) in enumerate(run, start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + w / (k + r)
    return rank(fused)


def from_scores(scores: Mapping[str, float], k: int | None = None) -> list[tuple[str, float]]:
    return rank(scores, k)
