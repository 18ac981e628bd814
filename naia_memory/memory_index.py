"""Key lookups the engine keeps beside the store, rebuilt on open.

Why: consolidation used to find its work and its comparison set by scanning
every record (every episode to find the unconsolidated ones, every fact to
find those of the subject), so its cost per turn grew with the memory. These
maps answer "which episodes wait", "which facts carry this attribute",
"which memories name this entity", "is this word someone a fact is
about" and "what was the last turn kept of this conversation" in O(answer).
"""
from __future__ import annotations

from datetime import datetime
from typing import Iterable

from .contract import MemoryKind
from .records import MemoryRecord
from .subjects import split_subject


class MemoryIndex:
    def __init__(self, records: Iterable[MemoryRecord] = ()) -> None:
        self.rebuild(records)

    def rebuild(self, records: Iterable[MemoryRecord]) -> None:
        """From scratch, in place (the engine's parts share this object)."""
        self._entities: dict[str, set[str]] = {}
        self._attributes: dict[tuple[str, str], set[str]] = {}
        # (project, owner, name lower-cased) -> {fact id: the name as written}; "user/mia" is mia, the user's.
        # Retired facts count: a person stays known after their job ended.
        self._people: dict[tuple[str, str, str], dict[str, str]] = {}
        self.pending: set[str] = set()  # user and assistant episodes not yet consolidated
        # (project, session) -> (said at, id, content) of the conversation's latest turn kept: the turn before
        # the next one, for a process that did not hear it (the store was opened since)
        self._last_kept: dict[tuple[str, str], tuple[datetime, str, str]] = {}
        for r in records:
            self.add(r)

    def add(self, r: MemoryRecord) -> None:
        for e in r.entities:
            self._entities.setdefault(e, set()).add(r.id)
        if r.kind is MemoryKind.FACT and r.attribute:
            self._attributes.setdefault((r.project, r.attribute), set()).add(r.id)
        if (key := _person_key(r)) is not None:
            self._people.setdefault(key[0], {})[r.id] = key[1]
        if r.kind is MemoryKind.EPISODE and not r.consolidated:
            self.pending.add(r.id)
        if r.kind is MemoryKind.EPISODE and r.session is not None and r.supersedes is None:  # (an edit is dated when made)
            key = (r.project, r.session)
            was = self._last_kept.get(key)
            if was is None or r.created_at >= was[0]:  # a tie: the one added later (the store's order)
                self._last_kept[key] = (r.created_at, r.id, r.content)

    def remove(self, r: MemoryRecord) -> None:
        for e in r.entities:
            ids = self._entities.get(e)
            if ids is not None:
                ids.discard(r.id)
                if not ids:
                    del self._entities[e]
        if r.attribute:
            ids = self._attributes.get((r.project, r.attribute))
            if ids is not None:
                ids.discard(r.id)
        if (key := _person_key(r)) is not None and key[0] in self._people:
            named = self._people[key[0]]
            named.pop(r.id, None)
            if not named:
                del self._people[key[0]]
        self.pending.discard(r.id)
        if r.session is not None:
            key = (r.project, r.session)
            was = self._last_kept.get(key)
            if was is not None and was[1] == r.id:  # forgotten: the conversation carries nothing into its next turn
                del self._last_kept[key]

    def last_kept_turn(self, project: str, session: str) -> str | None:
        """The latest turn kept of a conversation, or None."""
        was = self._last_kept.get((project, session))
        return was[2] if was is not None else None

    def entity(self, e: str) -> set[str]:
        return self._entities.get(e, set())

    def with_attribute(self, project: str, attribute: str) -> set[str]:
        return self._attributes.get((project, attribute), set())

    def person(self, project: str, owner: str, name: str) -> str | None:
        """The person ``name`` is (as a fact about them wrote it), among those
        ``owner`` told about in ``project``; None if no fact is about them."""
        named = self._people.get((project, owner, name.lower()))
        return next(iter(named.values())) if named else None


def _person_key(r: MemoryRecord) -> tuple[tuple[str, str, str], str] | None:
    subject = r.metadata.get("subject") if r.kind is MemoryKind.FACT else None
    if not isinstance(subject, str):
        return None
    owner, who = split_subject(subject)
    return ((r.project, owner, who.lower()), who) if who else None
