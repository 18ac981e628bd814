"""What the recall stages read of each candidate, as arrays.

The signal and adjustment stages used to walk ~80 candidate records per
query in Python (role, class, importance, use count, times, speaker, is it a
question). A store that keeps a record cache (JSON, SQLite) holds these
fields as columns beside its vector matrix and gathers them for the
candidates in one fancy index each (``RecordCache.candidate_columns``); any
other store's records are read into the same arrays here (``of_records``).
``row_fields`` is the one definition both use, so the two cannot disagree.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

import numpy as np

from ..cognition.contradiction import is_question
from ..contract import MemoryKind
from ..records import ARCHIVED, MemoryRecord


@lru_cache(maxsize=1 << 16)
def asks(content: str) -> bool:
    """True when the memory's text is a question (its last sentence asks).
    Cached: the same texts come back query after query, and a cache column
    is refilled whenever its record changes (a recall's strengthening)."""
    return is_question(content)


def speaker_of(r: MemoryRecord) -> str | None:
    """Who said it: an explicit ``speaker``, else a named ``subject`` (not "user")."""
    s = r.metadata.get("speaker") or r.metadata.get("subject")
    return str(s) if s else None


# (importance, uses, last accessed, stamp, archived, stale, assistant, asks, fact, class, speaker, attribute)
Row = tuple[float, float, float, float, bool, bool, bool, bool, bool, str, "str | None", "str | None"]


def row_fields(r: MemoryRecord) -> Row:
    return (float(r.importance), float(r.recall_count), r.last_accessed.timestamp(),
            (r.valid_from or r.created_at).timestamp(), r.status == ARCHIVED, "stale_fact" in r.metadata,
            r.role == "assistant", asks(r.content), r.kind is MemoryKind.FACT, r.memory_class, speaker_of(r),
            r.attribute)


@dataclass(frozen=True)
class Columns:
    """Row i is candidate i. Strings come as small codes with their names
    (``*_names[code]``; code 0 of speakers and attributes is "none")."""

    importance: np.ndarray
    uses: np.ndarray
    last: np.ndarray  # POSIX seconds
    stamp: np.ndarray  # valid_from, else created_at, POSIX seconds
    archived: np.ndarray
    stale: np.ndarray  # an episode whose fact was superseded
    assistant: np.ndarray
    asks: np.ndarray
    fact: np.ndarray
    memory_class: np.ndarray
    speaker: np.ndarray
    attribute: np.ndarray
    class_names: Sequence[str]
    speaker_names: Sequence[str | None]
    attribute_names: Sequence[str | None]

    def __len__(self) -> int:
        return len(self.importance)

    def speakers(self) -> set[str]:
        """The speakers among the candidates."""
        names = self.speaker_names
        return {names[c] for c in np.unique(self.speaker).tolist() if names[c]}

    def spoken_by(self, who: Iterable[str]) -> np.ndarray:
        return _codes_in(self.speaker, self.speaker_names, set(who))

    def filed_under(self, attributes: Iterable[str]) -> np.ndarray:
        return self.fact & _codes_in(self.attribute, self.attribute_names, set(attributes))

    @classmethod
    def of_records(cls, rs: Sequence[MemoryRecord]) -> "Columns":
        rows = [row_fields(r) for r in rs]
        classes: dict[str, int] = {}
        speakers: dict[str | None, int] = {None: 0}
        attrs: dict[str | None, int] = {None: 0}
        cols = list(zip(*rows)) if rows else [()] * 12
        return cls(
            importance=np.array(cols[0], dtype=np.float64), uses=np.array(cols[1], dtype=np.float64),
            last=np.array(cols[2], dtype=np.float64), stamp=np.array(cols[3], dtype=np.float64),
            archived=np.array(cols[4], dtype=bool), stale=np.array(cols[5], dtype=bool),
            assistant=np.array(cols[6], dtype=bool), asks=np.array(cols[7], dtype=bool), fact=np.array(cols[8], dtype=bool),
            memory_class=np.array([classes.setdefault(c, len(classes)) for c in cols[9]], dtype=np.int32),
            speaker=np.array([speakers.setdefault(s, len(speakers)) for s in cols[10]], dtype=np.int32),
            attribute=np.array([attrs.setdefault(a, len(attrs)) for a in cols[11]], dtype=np.int32),
            class_names=tuple(classes), speaker_names=tuple(speakers), attribute_names=tuple(attrs))


def _codes_in(codes: np.ndarray, names: Sequence[str | None], wanted: set[str]) -> np.ndarray:
    table = np.array([n is not None and n in wanted for n in names], dtype=bool)
    return table[codes] if len(codes) else np.zeros(0, dtype=bool)


__all__ = ["Columns", "asks", "row_fields", "speaker_of"]
