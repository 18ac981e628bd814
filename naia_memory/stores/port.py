"""The narrow port a store offers the engine.

Stores put and fetch records, answer vector and keyword top-k over an allowed
set, persist the entity graph and the decision log. Fusion, activation,
decay, gating and supersede stay in the engine, so every store reaches the
same cognitive level.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterable, Iterator, Protocol, Sequence, runtime_checkable

import numpy as np

from ..cognition.graph import EntityGraph
from ..contract import MemoryKind
from ..records import ACTIVE, MemoryRecord

SCHEMA_VERSION = 1


class StoreError(RuntimeError):
    pass


class IdTakenError(StoreError):
    """Another process wrote a memory under the id this one chose (same text,
    same time, same counter); nothing was stored, and a re-read shows it."""


class StaleViewError(StoreError):
    """Another process committed to the shared file after this one last read
    it, and this call was about to write from that older view (a consolidation
    that extracted while the other forgot a turn, a recall that strengthened a
    fact the other had superseded). Nothing was written; the next call reads
    the file again, and ``MemorySystem`` runs the call again on it."""


class EmbedderMismatchError(StoreError):
    """The store was written with another embedder; vectors are incomparable."""

    def __init__(self, path: str, stored: dict, given_name: str, given_dim: int):
        super().__init__(
            f"{path} holds {stored.get('dim')}-d vectors from embedder {stored.get('name')!r}, "
            f"but {given_name!r} makes {given_dim}-d vectors. Open it with the original embedder, or re-index: "
            f"MemorySystem.open_reindexing(path, embedder=...) / `naia-memory reindex {path} --embedder ...` "
            f"re-embeds every memory with the new embedder (contents, history and graph are kept)."
        )
        self.stored = stored
        self.given_name = given_name
        self.given_dim = given_dim


@dataclass(frozen=True)
class RecordFilter:
    project: str | None = None
    kinds: tuple[MemoryKind, ...] | None = None
    statuses: tuple[str, ...] | None = (ACTIVE,)
    created_before: datetime | None = None  # inclusive: a recall never sees the future
    valid_at: datetime | None = None
    topics: frozenset[str] | None = None  # routed recall: memories placed in these topics (unplaced ones pass)
    # only what may be evidence for a reflection: no reflection and no summary
    # (``MemoryRecord.derived``); every store applies it where it selects rows
    evidence: bool = False

    def matches(self, r: MemoryRecord) -> bool:
        if self.project is not None and r.project != self.project:
            return False
        if self.kinds is not None and r.kind not in self.kinds:
            return False
        if self.statuses is not None and r.status not in self.statuses:
            return False
        if self.created_before is not None and r.created_at > self.created_before:
            return False
        if self.valid_at is not None and not r.is_valid_at(self.valid_at):
            return False
        if self.evidence and r.derived:
            return False
        if self.topics is not None:
            path = r.path
            if path is not None and path[2] not in self.topics:
                return False
        return True


# what a decision-log entry may hold of a memory's words; a forget clears them
LOG_TEXT_FIELDS = ("candidate", "reason", "raw", "concept", "subject", "scope", "skill")  # the last four: Koog saves, skills
LOG_ID_FIELDS = ("fact_id", "target_id")
LOG_ID_LISTS = ("episode_ids", "ids", "reaffirmed")  # (an ADD's "doubts" name other facts: its text is its own)


def scrub_entry(entry: dict[str, Any], forgotten: set[str]) -> dict[str, Any] | None:
    """The entry without its text when it names a forgotten memory (ids and
    the operation stay: the log still says what happened, not what was said);
    None when it names none."""
    named = {entry.get(f) for f in LOG_ID_FIELDS} | {i for f in LOG_ID_LISTS for i in entry.get(f) or ()}
    if not named & forgotten or not any(entry.get(f) for f in LOG_TEXT_FIELDS):
        return None
    out = {k: v for k, v in entry.items() if k not in LOG_TEXT_FIELDS}
    out["forgotten"] = True
    return out


_KIND_TAGS = {k: i for i, k in enumerate(MemoryKind)}


def kind_tag(kind: MemoryKind) -> int:
    """A kind as the small int a store's BM25 index groups documents by."""
    return _KIND_TAGS[kind]


def kind_tags(flt: RecordFilter) -> list[int] | None:
    """The BM25 groups a filter allows (None: every kind)."""
    return None if flt.kinds is None else [_KIND_TAGS[k] for k in flt.kinds]


@runtime_checkable
class StoragePort(Protocol):
    path: str | None
    graph: EntityGraph

    def meta(self) -> dict[str, Any]: ...

    def bind_embedder(self, name: str, dim: int) -> None:
        """Record the embedder of a new store, or raise EmbedderMismatchError."""
        ...

    def put(self, record: MemoryRecord, embedding: np.ndarray) -> None: ...

    def update(self, record: MemoryRecord) -> None: ...

    def set_embedding(self, record_id: str, embedding: np.ndarray) -> None: ...

    def get(self, record_id: str) -> MemoryRecord | None: ...

    def delete(self, record_id: str) -> None: ...

    def records(self, flt: RecordFilter | None = None) -> Iterator[MemoryRecord]: ...

    def __len__(self) -> int: ...

    def embeddings(self, ids: Sequence[str]) -> np.ndarray: ...

    def vector_top_k(self, query: np.ndarray, k: int, flt: RecordFilter) -> list[tuple[str, float]]: ...

    def vector_top_k_many(self, queries: np.ndarray, k: int, flt: RecordFilter) -> list[list[tuple[str, float]]]:
        """``vector_top_k`` for each row of ``queries`` (a store may read its matrix once for all)."""
        ...

    def keyword_top_k(self, tokens: Sequence[str], k: int, flt: RecordFilter) -> list[tuple[str, float]]: ...

    def append_log(self, entries: Iterable[dict[str, Any]]) -> None: ...

    def log(self) -> list[dict[str, Any]]: ...

    def scrub_log(self, forgotten: set[str]) -> int:
        """Take the words out of every log entry that names a forgotten memory
        (``scrub_entry``); returns how many entries changed."""
        ...

    def erase_freed(self) -> None:
        """Make what was deleted leave the files (rewrite, merge, checkpoint),
        not only the index: called by forget after its commit."""
        ...

    def commit(self) -> None:
        """Make everything so far durable (atomic for file stores)."""
        ...

    def backup_to(self, dest: str) -> None:
        """Write a consistent copy of the store to ``dest``."""
        ...

    def close(self) -> None: ...
