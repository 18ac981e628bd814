"""Engine switches: every stage can be turned off, so an ablation is a config change."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from .cognition.decay import DecayParams
from .cognition.importance import ImportanceConfig


@dataclass(frozen=True)
class EngineConfig:
    # encode
    gate: bool = True
    gate_threshold: float = 0.15
    # consolidation
    consolidation: bool = True
    dedup_jaccard: float = 0.7
    # recall stages
    vector: bool = True
    bm25: bool = True
    graph: bool = True
    decay: bool = True
    strengthen: bool = True
    mmr: bool = True
    reranker: bool = False
    rrf_k: int = 60
    candidate_k: int = 50
    graph_weight: float = 0.5
    graph_decay: float = 0.5
    graph_hops: int = 2
    mmr_lambda: float = 0.7
    min_strength: float = 0.0
    decay_weight: float = 0.3  # share of the score that fades with strength
    fact_weight: float = 1.0
    episode_weight: float = 1.0
    stale_episode_weight: float = 0.3  # episodes whose fact was superseded
    importance: ImportanceConfig = field(default_factory=ImportanceConfig)
    decay_params: DecayParams = field(default_factory=DecayParams)

    SWITCHES = ("gate", "consolidation", "vector", "bm25", "graph", "decay", "strengthen", "mmr", "reranker")

    @classmethod
    def from_mapping(cls, m: Mapping[str, Any] | None) -> "EngineConfig":
        """Build from a plain mapping (Hydra), rejecting unknown keys loudly."""
        m = dict(m or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(m) - known)
        if unknown:
            raise ValueError(f"unknown engine setting(s) {unknown}; known: {sorted(known)}")
        if "importance" in m and isinstance(m["importance"], Mapping):
            m["importance"] = ImportanceConfig(**m["importance"])
        if "decay_params" in m and isinstance(m["decay_params"], Mapping):
            m["decay_params"] = DecayParams(**m["decay_params"])
        cfg = cls(**m)
        if not (cfg.vector or cfg.bm25):
            raise ValueError("at least one of `vector` and `bm25` must be on: recall needs candidates")
        return cfg
