"""Forgetting curve, tiered by memory class, and strengthening on recall.

Retention follows the exponential form HGVM uses,
``strength = exp(-lambda * days_since_access)`` (HGVM, "Active Forgetting"),
with Ebbinghaus' reading of ``1/lambda`` as stability. Stability grows with
importance and with each recall (spacing effect), so what is important or used
fades slower. How much use may move a ranking is recall/adjust.py's business
(a bounded nudge: the reference system found an unbounded boost letting a fact
recalled 259 times win every query). The per-class rates below are ours (HGVM
names the classes, not the rates).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Sequence

import numpy as np

from ..contract import InvalidInput

SECONDS_PER_DAY = 86_400.0

# lambda per day; 0 means never decays. "permanent" = the user asked to keep it.
CLASS_DECAY_RATE: dict[str, float] = {
    "permanent": 0.0,
    "identity": 0.005,
    "preference": 0.01,
    "observation": 0.03,
    "episode": 0.03,
    "task_state": 0.2,
    "reflection": 0.01,
    "skill": 0.005,  # how a task went: kept as long as identity facts
}


@dataclass(frozen=True)
class DecayParams:
    importance_slowdown: float = 1.0  # stability *= 1 + slowdown * importance
    recall_stability_gain: float = 0.5  # stability *= 1 + gain * ln(1 + recalls)
    archive_threshold: float = 0.05


def days_between(earlier: datetime, later: datetime) -> float:
    return max(0.0, (later - earlier).total_seconds() / SECONDS_PER_DAY)


def decay_rate(memory_class: str, importance: float, recall_count: int, params: DecayParams = DecayParams()) -> float:
    """Effective lambda per day for one memory."""
    try:
        base = CLASS_DECAY_RATE[memory_class]
    except KeyError:
        raise InvalidInput(f"unknown memory class {memory_class!r}; known: {sorted(CLASS_DECAY_RATE)}") from None
    if base == 0.0:
        return 0.0
    stability = (1.0 + params.importance_slowdown * max(0.0, min(1.0, importance))) * (
        1.0 + params.recall_stability_gain * math.log1p(max(0, recall_count))
    )
    return base / stability


def retention(
    memory_class: str,
    importance: float,
    recall_count: int,
    last_accessed: datetime,
    now: datetime,
    params: DecayParams = DecayParams(),
) -> float:
    """Strength in [0, 1] at ``now``: exp(-lambda_eff * days since last access)."""
    lam = decay_rate(memory_class, importance, recall_count, params)
    return math.exp(-lam * days_between(last_accessed, now))


def retention_many(memory_classes: Sequence[str], importance: Sequence[float], recall_counts: Sequence[int],
                   last_accessed: Sequence[float], now: float, params: DecayParams = DecayParams()) -> np.ndarray:
    """``retention_of_classes`` with the classes by name (a decay pass over a store's records)."""
    names = tuple(dict.fromkeys(memory_classes))
    code = {c: i for i, c in enumerate(names)}
    return retention_of_classes(np.array([code[c] for c in memory_classes], dtype=np.int64), names, importance,
                                recall_counts, last_accessed, now, params)


def retention_of_classes(class_codes: np.ndarray, class_names: Sequence[str], importance: Sequence[float],
                         recall_counts: Sequence[float], last_accessed: Sequence[float], now: float,
                         params: DecayParams = DecayParams()) -> np.ndarray:
    """``retention`` for many memories at once (``last_accessed`` and ``now``
    as POSIX seconds; classes as codes into ``class_names``, as a store's
    record cache keeps them): the recall pipeline scores ~100 candidates per
    query, and a Python call per candidate was a third of its time."""
    try:
        rates = np.array([CLASS_DECAY_RATE[c] for c in class_names], dtype=np.float64)
    except KeyError as e:
        raise InvalidInput(f"unknown memory class {e.args[0]!r}; known: {sorted(CLASS_DECAY_RATE)}") from None
    base = rates[np.asarray(class_codes, dtype=np.int64)] if len(class_codes) else np.zeros(0, dtype=np.float64)
    imp = np.clip(np.asarray(importance, dtype=np.float64), 0.0, 1.0)
    uses = np.maximum(np.asarray(recall_counts, dtype=np.float64), 0.0)
    stability = (1.0 + params.importance_slowdown * imp) * (1.0 + params.recall_stability_gain * np.log1p(uses))
    days = np.maximum(0.0, (now - np.asarray(last_accessed, dtype=np.float64)) / SECONDS_PER_DAY)
    return np.exp(-(base / stability) * days)


def should_archive(strength: float, memory_class: str, params: DecayParams = DecayParams()) -> bool:
    return CLASS_DECAY_RATE.get(memory_class, 1.0) > 0.0 and strength < params.archive_threshold
