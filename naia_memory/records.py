"""Domain records the engine keeps in a store (mutable, unlike boundary types)."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from typing import Any, Callable

from .contract import InvalidArgument, MemoryKind

ACTIVE = "active"
SUPERSEDED = "superseded"
ARCHIVED = "archived"
STATUSES = (ACTIVE, SUPERSEDED, ARCHIVED)

# memories the engine writes about other memories (HGVM): a verified topic
# summary and a reflection; ``metadata["subtype"]`` names them
SUMMARY = "consolidation_summary"
REFLECTION_PATTERN = "reflection_pattern"
DERIVED_SUBTYPES = (SUMMARY, REFLECTION_PATTERN)
# where a placed memory sits in the HGVM hierarchy: [domain, category, topic]
PATH_KEY = "path"


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def ensure_aware(ts: datetime | None) -> datetime:
    """Naive datetimes are taken as UTC so comparisons never raise."""
    if ts is None:
        return utc_now()
    if not isinstance(ts, datetime):
        raise InvalidArgument(f"expected a datetime for `now`, got {type(ts).__name__}")
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=timezone.utc)


def content_id(seed: str, key: bytes | None = None) -> str:
    """``key``: an encrypted store's id key, so the id says nothing of the text to one without the passphrase."""
    return hashlib.blake2b(seed.encode("utf-8"), digest_size=8, key=key or b"").hexdigest()


@dataclass
class MemoryRecord:
    id: str
    kind: MemoryKind
    content: str
    created_at: datetime
    updated_at: datetime
    last_accessed: datetime
    project: str = "default"
    session: str | None = None
    role: str = "user"
    tokens: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    importance: float = 0.5
    memory_class: str = "observation"
    recall_count: int = 0
    status: str = ACTIVE
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    superseded_by: str | None = None
    supersedes: str | None = None
    provenance: list[str] = field(default_factory=list)
    attribute: str | None = None
    value: str | None = None
    consolidated: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)

    def is_valid_at(self, at: datetime) -> bool:
        start = self.valid_from or self.created_at
        if start > at:
            return False
        return self.valid_to is None or at < self.valid_to

    @property
    def subtype(self) -> str | None:
        s = self.metadata.get("subtype")
        return str(s) if s is not None else None

    @property
    def path(self) -> tuple[str, str, str] | None:
        """(domain, category, topic) when the hierarchy placed it; read in one place."""
        p = self.metadata.get(PATH_KEY)
        return (str(p[0]), str(p[1]), str(p[2])) if isinstance(p, (list, tuple)) and len(p) == 3 else None

    @property
    def derived(self) -> bool:
        """Written by the engine about other memories (a summary, a reflection):
        never evidence for a reflection, whatever its kind says."""
        return self.kind is MemoryKind.REFLECTION or self.subtype in DERIVED_SUBTYPES

    def to_json(self) -> dict[str, Any]:
        # Field by field, not dataclasses.asdict: asdict deep-copies every list
        # and dict, which made a journal commit cost 0.35 ms per record.
        d = {name: getattr(self, name) for name in _FIELDS}
        d["kind"] = self.kind.value
        for k in _TIMES:
            v = d[k]
            d[k] = v.isoformat() if v is not None else None
        for k in _LISTS:
            d[k] = list(d[k])
        d["metadata"] = _plain(self.metadata)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "MemoryRecord":
        d = dict(d)
        d["kind"] = MemoryKind(d["kind"])
        for k in ("created_at", "updated_at", "last_accessed", "valid_from", "valid_to"):
            if d.get(k) is not None:
                d[k] = datetime.fromisoformat(d[k])
        return cls(**d)


def grounds(r: MemoryRecord) -> list[str]:
    """The memories a derived one stands on: a summary's facts, a reflection's evidence."""
    if r.kind is MemoryKind.REFLECTION or r.subtype == REFLECTION_PATTERN:
        return list(r.metadata.get("evidence") or ())
    return list(r.metadata.get("summarizes") or ()) if r.subtype == SUMMARY else []


def changed_grounds(r: MemoryRecord, get: "Callable[[str], MemoryRecord | None]",
                    at: datetime | None = None) -> dict[str, "MemoryRecord | None"]:
    """The grounds of ``r`` that no longer hold (replaced, corrected,
    forgotten; at ``at``, when given, not valid then), by id. Faded grounds
    still hold."""
    out = {}
    for i in grounds(r):
        g = get(i)
        if g is None or (g.status == SUPERSEDED if at is None else not g.is_valid_at(at)):
            out[i] = g
    return out


def outgrown(r: MemoryRecord, get: "Callable[[str], MemoryRecord | None]", at: datetime | None = None) -> bool:
    """A derived memory one of whose grounds no longer holds. It is ended at
    the next run that retires such memories; until then, and when that run is
    switched off, recall must not answer with it."""
    return r.derived and bool(changed_grounds(r, get, at))


def ended_with(r: MemoryRecord, changed: "list[MemoryRecord | None]", now: datetime) -> datetime:
    """When a derived memory stopped holding: when the first of its changed
    grounds ended (``now`` for one that is gone), never before it began
    itself; a run dated earlier than the change (time passed in going
    backwards) must not end it before it was true."""
    ends = [g.valid_to if g is not None and g.valid_to is not None else now for g in changed] or [now]
    return max(min(ends), r.valid_from or r.created_at)


def predecessors(r: MemoryRecord, get: "Callable[[str], MemoryRecord | None]", limit: int | None = None) -> list[MemoryRecord]:
    """The versions ``r`` superseded, newest first, following ``supersedes``
    links through ``get`` (a store's); stops at a missing link, a cycle or ``limit``."""
    out: list[MemoryRecord] = []
    seen = {r.id}
    prev = get(r.supersedes) if r.supersedes else None
    while prev is not None and prev.id not in seen and (limit is None or len(out) < limit):
        seen.add(prev.id)
        out.append(prev)
        prev = get(prev.supersedes) if prev.supersedes else None
    return out


_FIELDS = tuple(f.name for f in fields(MemoryRecord))
_TIMES = ("created_at", "updated_at", "last_accessed", "valid_from", "valid_to")
_LISTS = ("tokens", "entities", "provenance")


def _plain(metadata: dict[str, Any]) -> dict[str, Any]:
    """A copy the caller may keep: JSON-shaped metadata is copied through JSON
    (C speed); anything else falls back to a deep copy."""
    if not metadata:
        return {}
    try:
        return json.loads(json.dumps(metadata, ensure_ascii=False))
    except (TypeError, ValueError):
        import copy

        return copy.deepcopy(metadata)
