"""Fuse candidate lists into one relevance score in [0, 1].

Relevance is the backbone of recall; the cognitive stages only adjust it
within bounds. Plain RRF (Cormack et al. 2009) gives near-flat scores
(1/61 vs 1/62), so later multipliers decide the order. Two fusions here keep
rank or score information:

- ``relative``: each run's scores are scaled to [0, 1] and combined with
  weights (the "relative score fusion" of hybrid search engines); a
  candidate absent from a run gets 0 there. Scores that are zero when
  nothing matches (BM25, graph activation) are divided by the run's best.
  Cosine is never zero for unrelated text (e5 puts unrelated pairs near
  0.75), so it is min-max scaled, over a span of at least ``span_floor``:
  otherwise two memories at 0.842 and 0.834 in a small store would score
  1 and 0. On the LoCoMo dev half the top-50 cosine span has median 0.043;
  a 0.05 floor costs at most 0.01 recall there (scripts/fusion_study.py).
- ``rrf``: weighted reciprocal rank fusion, rescaled so the best possible
  fused score (rank 1 in every run) is 1.

Scores are rounded to ``DECIMALS`` so last-bit differences of an embedder
between CPUs cannot flip near ties (ties then break on id).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

DECIMALS = 6
METHODS = ("relative", "rrf")

Run = Sequence[tuple[str, float]]


# runs scaled by min-max with a floor on the span; every other run by its best score
SPAN_FLOORS = {"vector": 0.05}


def _scaled(vals: np.ndarray, span_floor: float | None) -> np.ndarray:
    hi = vals.max()
    lo = min(vals.min(), hi - span_floor) if span_floor is not None else 0.0
    if hi <= lo:
        return np.ones(len(vals))
    return np.maximum(0.0, (vals - lo) / (hi - lo))


def scale(run: Run, span_floor: float | None = None) -> dict[str, float]:
    """[0, 1] scores: min-max over a span of at least ``span_floor``, or,
    without a floor, the ratio to the best score (for runs where 0 = no match)."""
    if not run:
        return {}
    return dict(zip((d for d, _ in run), _scaled(np.array([s for _, s in run], dtype=np.float64), span_floor).tolist()))


def _fused(runs: Mapping[str, Run], weights: Mapping[str, float], method: str, rrf_k: int,
           span_floors: Mapping[str, float], decimals: int | None) -> dict[str, float]:
    """One pass over the runs in numpy: each run's scores (rounded to
    ``decimals`` when given) become its contribution, summed per candidate in
    run order over the union of candidates (first-seen order). Python's
    ``round`` per score, twice, had been a twentieth of a search at 10k."""
    index: dict[str, int] = {}
    parts = []
    for name, run in runs.items():
        if run:
            rows = np.fromiter((index.setdefault(d, len(index)) for d, _ in run), dtype=np.int64, count=len(run))
            vals = np.fromiter((x for _, x in run), dtype=np.float64, count=len(run))
            parts.append((name, rows, np.round(vals, decimals) if decimals is not None else vals))
    out = np.zeros(len(index))
    for name, rows, vals in parts:
        w = weights.get(name, 1.0)
        part = w * _scaled(vals, span_floors.get(name)) if method == "relative" else w / (rrf_k + np.arange(1, len(vals) + 1))
        np.add.at(out, rows, part)
    if method == "relative":
        out /= sum(weights.get(n, 1.0) for n, _, _ in parts) or 1.0
    else:
        out /= sum(weights.get(n, 1.0) / (rrf_k + 1) for n, _, _ in parts) or 1.0
    if decimals is not None:
        out = np.round(out, decimals)
    return dict(zip(index, out.tolist()))


def relative_fusion(runs: Mapping[str, Run], weights: Mapping[str, float],
                    span_floors: Mapping[str, float] = SPAN_FLOORS) -> dict[str, float]:
    return _fused(runs, weights, "relative", 0, span_floors, None)


def rrf_fusion(runs: Mapping[str, Run], weights: Mapping[str, float], k: int = 60) -> dict[str, float]:
    return _fused(runs, weights, "rrf", k, {}, None)


def fuse(runs: Mapping[str, Run], weights: Mapping[str, float] | None = None, *, method: str = "relative",
         rrf_k: int = 60) -> dict[str, float]:
    """Relevance per candidate id, in [0, 1], rounded to ``DECIMALS`` (inputs too)."""
    weights = dict(weights or {})
    if any(w < 0 for w in weights.values()):
        raise ValueError("fusion weights must be non-negative")
    if method not in METHODS:
        raise ValueError(f"unknown fusion method {method!r}; use one of {METHODS}")
    if method == "rrf" and rrf_k < 0:
        raise ValueError("rrf_k must be >= 0")
    return _fused(runs, weights, method, rrf_k, SPAN_FLOORS, DECIMALS)
