"""The floor: stores nothing, recalls nothing. Every experiment reports it."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Mapping, Sequence

from ..contract import ConsolidationReport, EncodeResult, MemoryKind, RecallResult, Role


class NoMemoryProvider:
    name = "none"

    def __init__(self, **_ignored: Any):
        pass

    def encode(self, *, content: str, role: Role | str = Role.USER, session: str | None = None, project: str = "default",
               now: datetime | None = None, metadata: Mapping[str, Any] | None = None) -> EncodeResult:
        if not isinstance(content, str) or not content.strip():
            raise ValueError("content must be a non-empty string")
        return EncodeResult(False, None, "no-memory baseline stores nothing")

    def recall(self, *, query: str, top_k: int = 10, project: str = "default", now: datetime | None = None,
               kinds: Sequence[MemoryKind] | None = None) -> RecallResult:
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query must be a non-empty string")
        if not isinstance(top_k, int) or top_k <= 0:
            raise ValueError(f"top_k must be a positive int, got {top_k!r}")
        return RecallResult(query=query, hits=())

    def consolidate(self, *, now: datetime | None = None) -> ConsolidationReport:
        return ConsolidationReport(0, ())

    def forget(self, *, memory_id: str | None = None, project: str | None = None) -> int:
        return 0

    def close(self) -> None:
        pass
