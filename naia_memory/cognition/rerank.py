"""Optional reranker stage; the default changes nothing (a cross-encoder is injected)."""
from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable


@runtime_checkable
class Reranker(Protocol):
    name: str

    def rerank(self, query: str, candidates: Sequence[tuple[str, str, float]]) -> list[tuple[str, float]]:
        """candidates: (id, content, score) -> ranked (id, score)."""
        ...


class NoopReranker:
    name = "noop"

    def rerank(self, query: str, candidates: Sequence[tuple[str, str, float]]) -> list[tuple[str, float]]:
        return [(i, s) for i, _c, s in candidates]
