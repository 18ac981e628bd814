"""Cognitive adjustment: bounded nudges on top of relevance.

Strength (the forgetting curve), use (recall count) and validity signals
move a memory's relevance by at most ``max_adjust`` (a share of its own
score), so no amount of recalling lifts an irrelevant memory above a
relevant one: a memory at relevance r can only pass one at r' when
r * (1 + max_adjust) > r' * (1 - max_adjust). With ``max_adjust`` = 0.1 a
cognitive signal decides only between memories within ~20 % of each other.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Signals:
    """What the cognitive stage knows about one candidate, all in plain numbers."""

    strength: float = 1.0  # forgetting-curve retention in [0, 1]
    recall_count: int = 0
    faded: bool = False  # archived by decay: reachable, ranked lower
    stale: bool = False  # an episode whose fact was superseded
    assistant: bool = False  # said by the assistant, not the user


@dataclass(frozen=True)
class AdjustWeights:
    decay: float = 0.1  # full fade costs this share
    use: float = 0.05  # gained at USE_SATURATION recalls, log-shaped below
    faded: float = 0.05
    assistant: float = 0.05
    max_adjust: float = 0.1
    stale_factor: float = 0.5  # validity, not cognition: outside the bound


USE_SATURATION = 20


def use_signal(recall_count: int) -> float:
    """0 for never recalled, 1 at USE_SATURATION recalls (spacing effect, log-shaped)."""
    return min(1.0, math.log1p(max(0, recall_count)) / math.log1p(USE_SATURATION))


def adjustment(sig: Signals, w: AdjustWeights, *, decay: bool = True, strengthen: bool = True) -> float:
    """Multiplier for relevance: 1 + clip(sum of signals, +-max_adjust), times the stale factor."""
    delta = 0.0
    if decay:
        delta -= w.decay * (1.0 - max(0.0, min(1.0, sig.strength)))
        if sig.faded:
            delta -= w.faded
    if strengthen:
        delta += w.use * use_signal(sig.recall_count)
    if sig.assistant:
        delta -= w.assistant
    delta = max(-w.max_adjust, min(w.max_adjust, delta))
    return (1.0 + delta) * (w.stale_factor if sig.stale else 1.0)


def adjustment_many(strength: np.ndarray, recall_count: np.ndarray, faded: np.ndarray, stale: np.ndarray,
                    assistant: np.ndarray, w: AdjustWeights, *, decay: bool = True, strengthen: bool = True) -> np.ndarray:
    """``adjustment`` over arrays of candidates (same formula, one numpy pass)."""
    delta = np.zeros(len(strength), dtype=np.float64)
    if decay:
        delta -= w.decay * (1.0 - np.clip(strength, 0.0, 1.0))
        delta -= np.where(faded, w.faded, 0.0)
    if strengthen:
        delta += w.use * np.minimum(1.0, np.log1p(np.maximum(recall_count, 0)) / math.log1p(USE_SATURATION))
    delta -= np.where(assistant, w.assistant, 0.0)
    delta = np.clip(delta, -w.max_adjust, w.max_adjust)
    return (1.0 + delta) * np.where(stale, w.stale_factor, 1.0)
