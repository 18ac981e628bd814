"""Maximal Marginal Relevance (Carbonell & Goldstein, SIGIR 1998).

score = lambda * rel(d) - (1 - lambda) * max_{s in selected} sim(d, s);
relevance is min-max normalised first so the two terms share a scale. The
returned score is the MMR objective at selection time, which never rises from
one pick to the next, so the list stays sorted by its own scores.
"""
from __future__ import annotations

from typing import Callable, Sequence


def mmr(
    candidates: Sequence[tuple[str, float]],
    similarity: Callable[[str, str], float],
    k: int,
    lam: float = 0.7,
) -> list[tuple[str, float]]:
    if not candidates:
        return []
    rel = dict(candidates)
    lo, hi = min(rel.values()), max(rel.values())
    span = hi - lo
    norm = {d: (s - lo) / span if span > 0 else 1.0 for d, s in rel.items()}
    remaining = [d for d, _ in candidates]
    selected: list[tuple[str, float]] = []
    while remaining and len(selected) < k:
        best, best_val = None, float("-inf")
        for d in remaining:
            redundancy = max((similarity(d, s) for s, _ in selected), default=0.0)
            val = lam * norm[d] - (1.0 - lam) * redundancy
            if val > best_val or (val == best_val and best is not None and d < best):
                best, best_val = d, val
        selected.append((best, best_val))
        remaining.remove(best)
    return selected


def mmr_matrix(candidates: Sequence[tuple[str, float]], sim: "np.ndarray", k: int, lam: float = 0.7) -> list[tuple[str, float]]:
    """``mmr`` over a precomputed similarity matrix (row i = candidates[i]):
    the same picks and scores, with the redundancy term kept as a running
    maximum in numpy instead of re-scanning the selected set per candidate."""
    import numpy as np

    if not candidates:
        return []
    ids = [d for d, _ in candidates]
    rel = np.array([s for _, s in candidates], dtype=np.float64)
    lo, hi = rel.min(), rel.max()
    norm = (rel - lo) / (hi - lo) if hi > lo else np.ones_like(rel)
    redundancy = np.zeros(len(ids))  # nothing selected yet: no redundancy
    free = np.ones(len(ids), dtype=bool)
    selected: list[tuple[str, float]] = []
    while free.any() and len(selected) < k:
        vals = np.where(free, lam * norm - (1.0 - lam) * redundancy, -np.inf)
        best_val = vals.max()
        ties = np.flatnonzero(vals == best_val)
        j = min(ties, key=lambda t: ids[t])
        selected.append((ids[j], float(best_val)))
        free[j] = False
        row = np.asarray(sim[j], dtype=np.float64)
        redundancy = row if len(selected) == 1 else np.maximum(redundancy, row)
    return selected
