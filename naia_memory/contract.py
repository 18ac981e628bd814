"""The one contract every memory backend answers to, ours and the peers'.

The harness only ever sees ``MemoryProvider``; optional abilities are separate
``@runtime_checkable`` Protocols so an experiment can ask ``isinstance(p,
SupportsDecay)`` and record "unsupported" instead of catching
``NotImplementedError`` (the shape of mteb's ``models_protocols.py``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from types import MappingProxyType
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable


class MemoryKind(str, Enum):
    FACT = "fact"
    EPISODE = "episode"
    REFLECTION = "reflection"
    SKILL = "skill"  # an outcome of something the agent did (procedural memory)


class InvalidInput(ValueError):
    """A value refused at the door (an empty query, an unknown role, a
    status that cannot be edited): the servers answer 400 for this, and only
    this; any other ValueError is a bug and reported as one (500). Still a
    ``ValueError``, so callers that catch that keep working."""


class InvalidArgument(InvalidInput, TypeError):
    """An argument of the wrong type (a string for ``now``, a list for a
    turn): refused like any bad value, so one ``except ValueError`` covers
    every refusal at the door; still a ``TypeError`` for callers who catch that."""


class UnknownMemoryError(KeyError):
    """No memory has that id (in the caller's project): the servers answer 404
    for this, and only this; any other KeyError is a bug and reported as one."""


class Role(str, Enum):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


def _frozen_map(m: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(m or {}))


@dataclass(frozen=True)
class ImportanceScore:
    """The gate's verdict on one utterance: three axes plus utility."""

    importance: float
    surprise: float
    emotion: float
    utility: float
    role_weight: float
    combined: float
    cues: tuple[str, ...] = ()


@dataclass(frozen=True)
class EncodeResult:
    stored: bool
    id: str | None
    reason: str
    importance: ImportanceScore | None = None


@dataclass(frozen=True)
class RecallHit:
    id: str
    kind: MemoryKind
    content: str
    score: float
    created_at: datetime
    updated_at: datetime
    provenance: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=lambda: _frozen_map(None))


@dataclass(frozen=True)
class RecallResult:
    query: str
    hits: tuple[RecallHit, ...]
    timings_ms: Mapping[str, float] = field(default_factory=lambda: _frozen_map(None))

    @property
    def facts(self) -> tuple[RecallHit, ...]:
        return tuple(h for h in self.hits if h.kind is MemoryKind.FACT)

    @property
    def episodes(self) -> tuple[RecallHit, ...]:
        return tuple(h for h in self.hits if h.kind is MemoryKind.EPISODE)

    def contents(self) -> list[str]:
        return [h.content for h in self.hits]

    def to_run(self, query_id: str) -> dict[str, dict[str, float]]:
        """ranx/beir-style run so one evaluator scores every provider."""
        return {query_id: {h.id: float(h.score) for h in self.hits}}


class DecisionOp(str, Enum):
    ADD = "ADD"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    NOOP = "NOOP"
    UNDECIDED = "UNDECIDED"
    SKIP = "SKIP"  # a sentence that is not a fact (a question, greeting, hypothetical ...), with the reason


@dataclass(frozen=True)
class Decision:
    """One consolidation decision, logged with the distance to the nearest memory (AIDA)."""

    op: DecisionOp
    candidate: str
    fact_id: str | None
    target_id: str | None
    distance: float | None
    reason: str
    at: datetime
    episode_ids: tuple[str, ...] = ()
    raw: str | None = None
    doubts: tuple[str, ...] = ()  # an ADD that reads as a change of one of these facts, which the rules could not tell


@dataclass(frozen=True)
class ConsolidationReport:
    episodes_processed: int
    decisions: tuple[Decision, ...]

    def count(self, op: DecisionOp) -> int:
        return sum(1 for d in self.decisions if d.op is op)


@runtime_checkable
class MemoryProvider(Protocol):
    """Core contract: keyword-only, typed; ``now`` defaults to the real clock."""

    name: str

    def encode(
        self,
        *,
        content: str,
        role: Role | str = Role.USER,
        session: str | None = None,
        project: str = "default",
        now: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> EncodeResult: ...

    def recall(
        self,
        *,
        query: str,
        top_k: int = 10,
        project: str = "default",
        now: datetime | None = None,
        kinds: Sequence[MemoryKind] | None = None,
    ) -> RecallResult: ...

    def consolidate(self, *, now: datetime | None = None) -> ConsolidationReport: ...

    def forget(self, *, memory_id: str | None = None, project: str | None = None) -> int: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Turn:
    """One turn of a history handed to ``encode_many``."""

    content: str
    role: Role | str = Role.USER
    session: str | None = None
    now: datetime | None = None
    metadata: Mapping[str, Any] | None = None


_TURN_KEYS = frozenset(("content", "role", "session", "now", "metadata"))


def as_turn(t: "Turn | Mapping[str, Any]") -> Turn:
    if isinstance(t, Turn):
        return t
    if not isinstance(t, Mapping):
        raise InvalidArgument(f"a turn is a Turn or a mapping with {sorted(_TURN_KEYS)}, got {type(t).__name__}")
    unknown = sorted(set(t) - _TURN_KEYS)
    if unknown or "content" not in t:
        raise InvalidInput(f"a turn needs 'content' and may have {sorted(_TURN_KEYS - {'content'})}; got keys {sorted(t)}")
    return Turn(**t)


@runtime_checkable
class SupportsBatch(Protocol):
    def encode_many(self, *, turns: Sequence[Turn | Mapping[str, Any]], project: str = "default") -> list[EncodeResult]:
        """``encode`` for each turn in order: one embedder batch, one commit."""
        ...

    def recall_many(self, *, queries: Sequence[str], top_k: int = 10, project: str = "default",
                    now: datetime | None = None) -> list[RecallResult]:
        """``recall`` for each query in order, the queries embedded up front."""
        ...


@runtime_checkable
class SupportsDecay(Protocol):
    def apply_decay(self, *, now: datetime | None = None) -> int:
        """Archive what has faded; returns how many were archived."""
        ...


@runtime_checkable
class SupportsHistory(Protocol):
    def history(self, *, memory_id: str) -> list[RecallHit]:
        """The chain of versions of a fact, oldest first."""
        ...

    def recall_at(self, *, query: str, at: datetime, top_k: int = 10, project: str = "default") -> RecallResult:
        """What was believed at time ``at`` (validity intervals)."""
        ...


@runtime_checkable
class SupportsImportance(Protocol):
    def score_importance(self, *, content: str, role: Role | str = Role.USER, project: str = "default") -> ImportanceScore: ...


@runtime_checkable
class SupportsBackup(Protocol):
    def backup(self, *, path: str) -> str: ...


@runtime_checkable
class SupportsGraph(Protocol):
    def neighbors(self, *, entity: str, limit: int = 10) -> list[tuple[str, float]]: ...


CAPABILITIES: dict[str, type] = {
    "decay": SupportsDecay,
    "history": SupportsHistory,
    "importance": SupportsImportance,
    "backup": SupportsBackup,
    "graph": SupportsGraph,
    "batch": SupportsBatch,
}


def capabilities_of(provider: object) -> dict[str, bool]:
    return {name: isinstance(provider, proto) for name, proto in CAPABILITIES.items()}


def decision_json(d: Decision) -> dict[str, Any]:
    """A decision as a decision-log entry (what every store's log keeps)."""
    return {"op": d.op.value, "candidate": d.candidate, "fact_id": d.fact_id, "target_id": d.target_id,
            "distance": d.distance, "reason": d.reason, "at": d.at.isoformat(), "episode_ids": list(d.episode_ids), "raw": d.raw,
            **({"doubts": list(d.doubts)} if d.doubts else {})}
