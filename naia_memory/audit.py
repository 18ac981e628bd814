"""The user's view of their memory (AIDA's audit controls): every memory with
where it came from, and a decision log that can be queried, so a threshold
is tuned from real decisions rather than guessed.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable

from .contract import InvalidArgument
from .records import MemoryRecord, ensure_aware

_ID_FIELDS = ("fact_id", "target_id", "target", "new")
_ID_LISTS = ("episode_ids", "ids", "doubts")


def names(entry: dict[str, Any], memory_id: str) -> bool:
    """True when a log entry is about ``memory_id``."""
    return any(entry.get(f) == memory_id for f in _ID_FIELDS) or any(memory_id in (entry.get(f) or ()) for f in _ID_LISTS)


def query_log(entries: Iterable[dict[str, Any]], *, op: str | Iterable[str] | None = None, since: datetime | None = None,
              until: datetime | None = None, reason: str | None = None, min_distance: float | None = None,
              max_distance: float | None = None, memory_id: str | None = None) -> list[dict[str, Any]]:
    """Entries that pass every given condition, in log order. ``op`` is one
    operation or several (case folded), ``reason`` a case-folded substring,
    the distance bounds inclusive (entries without a distance fail them),
    ``since``/``until`` inclusive bounds on the entry's time."""
    if op is not None and not isinstance(op, str) and not (
            isinstance(op, (list, tuple, set, frozenset)) and all(isinstance(o, str) for o in op)):
        raise InvalidArgument(f"op must be an operation name or a list of them, got {op!r}")
    for name, v in (("reason", reason), ("memory_id", memory_id)):
        if v is not None and not isinstance(v, str):
            raise InvalidArgument(f"{name} must be a string, got {type(v).__name__}")
    for name, v in (("min_distance", min_distance), ("max_distance", max_distance)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise InvalidArgument(f"{name} must be a number, got {type(v).__name__}")
    ops = None if op is None else {op.upper()} if isinstance(op, str) else {o.upper() for o in op}
    lo = ensure_aware(since) if since is not None else None
    hi = ensure_aware(until) if until is not None else None
    want = reason.lower() if reason is not None else None
    out = []
    for e in entries:
        if ops is not None and str(e.get("op", "")).upper() not in ops:
            continue
        if lo is not None or hi is not None:
            at = e.get("at")
            if at is None:
                continue
            t = ensure_aware(datetime.fromisoformat(at))
            if (lo is not None and t < lo) or (hi is not None and t > hi):
                continue
        if want is not None and want not in str(e.get("reason") or "").lower():
            continue
        d = e.get("distance")
        if (min_distance is not None or max_distance is not None) and d is None:
            continue
        if (min_distance is not None and d < min_distance) or (max_distance is not None and d > max_distance):
            continue
        if memory_id is not None and not names(e, memory_id):
            continue
        out.append(e)
    return out


def describe(record: MemoryRecord, sources: Iterable[MemoryRecord | None], log: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """One memory as its owner reads it: the memory, the turns it came from
    (what was said, by whom, when) and every logged decision about it."""
    body = record.to_json()
    body.pop("tokens", None)
    return {
        "memory": body,
        "sources": [{"id": s.id, "content": s.content, "role": s.role, "said_at": s.created_at.isoformat(),
                     "session": s.session} for s in sources if s is not None],
        "decisions": [e for e in log if names(e, record.id)],
    }
