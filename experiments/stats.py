"""Paired comparisons for ablations: cluster bootstrap over conversations.

The difference of means (variant - baseline) over the same queries, with a
percentile confidence interval from resampling whole conversations (queries
of one conversation are not independent), and a two-sided bootstrap p-value.
With fewer than 5 clusters the queries themselves are resampled (said so in
``method``). The p-value comes from a paired sign-flip randomisation test on
the per-conversation mean differences (ties at zero carry no sign).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Mapping

import numpy as np


def paired_bootstrap(
    base: Mapping[str, tuple[str, float]],
    variant: Mapping[str, tuple[str, float]],
    *,
    n_boot: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict[str, float | int | str]:
    ids = sorted(set(base) & set(variant))
    if not ids:
        raise ValueError("no common units to compare")
    if set(base) != set(variant):
        raise ValueError(f"units differ between runs ({len(set(base) ^ set(variant))} unmatched): not a paired comparison")
    clusters: dict[str, list[float]] = defaultdict(list)
    for i in ids:
        clusters[base[i][0]].append(variant[i][1] - base[i][1])
    diffs = np.array([variant[i][1] - base[i][1] for i in ids])
    rng = np.random.default_rng(seed)
    if len(clusters) >= 5:
        method = "cluster bootstrap over conversations"
        groups = [np.array(v) for v in clusters.values()]
        sums = np.array([g.sum() for g in groups])
        sizes = np.array([len(g) for g in groups])
        idx = rng.integers(0, len(groups), size=(n_boot, len(groups)))
        boots = sums[idx].sum(axis=1) / sizes[idx].sum(axis=1)
    else:
        method = "bootstrap over queries"
        idx = rng.integers(0, len(diffs), size=(n_boot, len(diffs)))
        boots = diffs[idx].mean(axis=1)
    lo, hi = np.quantile(boots, [alpha / 2, 1 - alpha / 2])
    mean = float(diffs.mean())
    p = sign_flip_p(diffs if len(clusters) < 5 else np.array([np.mean(v) for v in clusters.values()]), n_boot, rng)
    return {
        "baseline": float(np.mean([base[i][1] for i in ids])), "variant": float(np.mean([variant[i][1] for i in ids])),
        "diff": mean, "ci_low": float(lo), "ci_high": float(hi), "p_value": p, "n_units": len(ids),
        "n_clusters": len(clusters), "method": method, "confidence": 1 - alpha,
    }


def sign_flip_p(diffs: np.ndarray, n_perm: int, rng: np.random.Generator) -> float:
    """Two-sided paired randomisation test: flip each unit's sign at random."""
    diffs = np.asarray(diffs, dtype=float)
    observed = abs(diffs.mean())
    if observed == 0.0:
        return 1.0
    signs = rng.choice([-1.0, 1.0], size=(n_perm, len(diffs)))
    perm = np.abs((signs * diffs).mean(axis=1))
    return float((1 + np.sum(perm >= observed - 1e-12)) / (n_perm + 1))
