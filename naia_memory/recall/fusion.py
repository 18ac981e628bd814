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

DECIMALS = 6
METHODS = ("relative", "rrf")

Run = Sequence[tuple[str, float]]


# runs scaled by min-max with a floor on the span; every other run by its best score
SPAN_FLOORS = {"vector": 0.05}


def scale(run: Run, span_floor: float | None = None) -> dict[str, float]:
    """[0, 1] scores: min-max over a span of at least ``span_floor``, or,
    without a floor, the ratio to the best score (for runs where 0 = no match)."""
    if not run:
        return {}
    vals = [s for _, s in run]
    hi = max(vals)
    lo = min(min(vals), hi - span_floor) if span_floor is not None else 0.0
    if hi <= lo:
        return {d: 1.0 for d, _ in run}
    return {d: max(0.0, (s - lo) / (hi - lo)) for d, s in run}


def relative_fusion(runs: Mapping[str, Run], weights: Mapping[str, float],
                    span_floors: Mapping[str, float] = SPAN_FLOORS) -> dict[str, float]:
    total = sum(weights.get(n, 1.0) for n, r in runs.items() if r) or 1.0
    out: dict[str, float] = {}
    for name, run in runs.items():
        w = weights.get(name, 1.0)
        for d, s in scale(run, span_floors.get(name)).items():
            out[d] = out.get(d, 0.0) + w * s
    return {d: s / total for d, s in out.items()}


def rrf_fusion(runs: Mapping[str, Run], weights: Mapping[str, float], k: int = 60) -> dict[str, float]:
    best = sum(weights.get(n, 1.0) / (k + 1) for n, r in runs.items() if r) or 1.0
    out: dict[str, float] = {}
    for name, run in runs.items():
        w = weights.get(name, 1.0)
        for rank, (d, _s) in enumerate(run, start=1):
            out[d] = out.get(d, 0.0) + w / (k + rank)
    return {d: s / best for d, s in out.items()}


def fuse(runs: Mapping[str, Run], weights: Mapping[str, float] | None = None, *, method: str = "relative",
         rrf_k: int = 60) -> dict[str, float]:
    """Relevance per candidate id, in [0, 1], rounded to ``DECIMALS``."""
    weights = dict(weights or {})
    runs = {n: [(d, round(float(x), DECIMALS)) for d, x in run] for n, run in runs.items()}
    if any(w < 0 for w in weights.values()):
        raise ValueError("fusion weights must be non-negative")
    if method == "relative":
        fused = relative_fusion(runs, weights)
    elif method == "rrf":
        if rrf_k < 0:
            raise ValueError("rrf_k must be >= 0")
        fused = rrf_fusion(runs, weights, rrf_k)
    else:
        raise ValueError(f"unknown fusion method {method!r}; use one of {METHODS}")
    return {d: round(s, DECIMALS) for d, s in fused.items()}
