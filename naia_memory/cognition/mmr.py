"""Maximal Marginal Relevance (Carbonell & Goldstein, SIGIR 1998).

score = lambda * rel(d) - (1 - lambda) * max_{s in selected} sim(d, s);
relevance is min-max normalised first so the two terms share a scale. The
redundancy is taken as at least 0: a candidate unlike everything picked
gains nothing from it (a negative cosine had made the next pick's score rise
above the last). So the returned score, the MMR objective at selection time,
never rises from one pick to the next, and the list stays sorted by it.
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
            redundancy = max([0.0, *(similarity(d, s) for s, _ in selected)])
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
    gain = lam * ((rel - lo) / (hi - lo) if hi > lo else np.ones_like(rel))
    sim = np.asarray(sim, dtype=np.float64)
    redundancy = np.zeros(len(ids))  # nothing selected yet: no redundancy
    vals = np.empty(len(ids))
    taken: list[int] = []
    selected: list[tuple[str, float]] = []
    while len(selected) < min(k, len(ids)):
        np.subtract(gain, (1.0 - lam) * redundancy, out=vals)
        vals[taken] = -np.inf
        j = int(vals.argmax())
        best_val = vals[j]
        if np.count_nonzero(vals == best_val) > 1:  # ties: the smallest id, as ``mmr`` picks
            j = min(np.flatnonzero(vals == best_val).tolist(), key=lambda t: ids[t])
        selected.append((ids[j], float(best_val)))
        taken.append(j)
        np.maximum(redundancy, sim[j], out=redundancy)  # from 0: unlike what was picked is no bonus
    return selected
