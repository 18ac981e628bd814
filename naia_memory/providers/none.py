"""The floor: stores nothing, recalls nothing. Every experiment reports it."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Mapping, Sequence

from ..validate import check_content, check_query
from ..contract import ConsolidationReport, EncodeResult, MemoryKind, RecallResult, Role


class NoMemoryProvider:
    name = "none"

    def __init__(self, **_ignored: Any):
        pass

    def encode(self, *, content: str, role: Role | str = Role.USER, session: str | None = None, project: str = "default",
               now: datetime | None = None, metadata: Mapping[str, Any] | None = None) -> EncodeResult:
        check_content(content)
        return EncodeResult(False, None, "no-memory baseline stores nothing")

    def recall(self, *, query: str, top_k: int = 10, project: str = "default", now: datetime | None = None,
               kinds: Sequence[MemoryKind] | None = None) -> RecallResult:
        check_query(query, top_k)
        return RecallResult(query=query, hits=())

    def consolidate(self, *, now: datetime | None = None) -> ConsolidationReport:
        return ConsolidationReport(0, ())

    def forget(self, *, memory_id: str | None = None, project: str | None = None) -> int:
        return 0

    def close(self) -> None:
        pass
