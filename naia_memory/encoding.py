"""Encoding: one turn becomes an episode, if it passes the importance gate.

A turn is scored (importance, emotion, surprise against its nearest
memories), indexed with the turn before it when it answers or is short
(``recall/context.py``), stamped with the time windows it names, and stored
with its vector. The only state is the last turn per (project, session);
a conversation this process has not heard yet (the store was opened since:
a server restarted) starts from its latest turn kept in the store.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .cognition import importance as imp
from .cognition.facts import said_text, speaker_in
from .cognition.tokenize import Tokenizer
from .config import EngineConfig
from .contract import EncodeResult, ImportanceScore, MemoryKind, Turn
from .memory_index import MemoryIndex
from .recall.context import carried_context, index_text
from .recall.relative_time import to_json
from .recall.when import event_windows
from .records import ACTIVE, MemoryRecord
from .stores.port import RecordFilter, StoragePort


class Encoder:
    def __init__(self, *, store: StoragePort, tokenizer: Tokenizer, config: EngineConfig, index: MemoryIndex,
                 new_id: Callable[[str, str, datetime, str], str],
                 place: Callable[[MemoryRecord, np.ndarray], None] | None = None,
                 unplace: Callable[[MemoryRecord, np.ndarray], None] | None = None):
        self.place = place  # the hierarchy gives a new memory its path before it is stored
        self.unplace = unplace  # ... and takes it back when the store refuses it
        self.store = store
        self.tokenizer = tokenizer
        self.config = config
        self.index = index
        self.new_id = new_id
        self.last_turn: dict[tuple[str, str], str] = {}  # (project, session) -> the turn before, gated or not
        self.enabled = True  # False: memory is off, nothing enters (the host turns it on)
        self.incognito: set[tuple[str, str]] = set()  # (project, session): conversations nothing is kept from
        self.once_incognito: frozenset[tuple[str, str]] = frozenset()  # ... and those ever kept out: no turn before from the store

    def refused(self, session: str | None, project: str) -> str | None:
        """Why a turn must not enter at all (memory off, an incognito
        conversation), or None. Checked before anything reads the turn: it is
        not embedded, scored, or carried as the next turn's context."""
        if not self.enabled:
            return "memory is off"
        if session is not None and (project, session) in self.incognito:
            return "incognito conversation"
        return None

    def turn_before(self, key: tuple[str, str], heard: Mapping[tuple[str, str], str] | None = None) -> str | None:
        """The turn before the next one of a conversation: the last one this
        process heard (gated or not), else the latest one the store kept. A
        turn the gate dropped just before the store was reopened is kept
        nowhere (that is what the gate is for), so a restart can only go back
        to the latest kept one."""
        heard = self.last_turn if heard is None else heard
        if key in heard:
            return heard[key]
        # a conversation once kept out carries nothing from before it (what it answers was said while incognito)
        return None if key in self.once_incognito else self.index.last_kept_turn(*key)

    def score_importance(self, content: str, role_s: str, project: str,
                         overrides: Mapping[str, float] | None = None, speaker: str | None = None) -> ImportanceScore:
        """Importance, emotion and surprise (novelty against the five nearest
        memories by words), the gate's inputs; on what was said, not on who
        said it (``speaker``: the metadata's, taken off the text)."""
        return self._score(said_text(content, speaker), role_s, project, overrides)

    def _score(self, body: str, role_s: str, project: str, overrides: Mapping[str, float] | None) -> ImportanceScore:
        tokens = self.tokenizer.tokens(body)
        flt = RecordFilter(project=project, statuses=(ACTIVE,))
        neighbours = [self.store.get(i) for i, _ in self.store.keyword_top_k(tokens, 5, flt)] if tokens else []
        surprise = imp.lexical_surprise(tokens, [n.tokens for n in neighbours if n is not None])
        return imp.score(body, role_s, surprise, self.config.importance, overrides)

    def index_texts(self, items: Sequence[Turn], project: str) -> tuple[list[str | None], list[str | None]]:
        """What each turn will be embedded as (itself, or with the turn before
        it in its session), worked out before any is stored, and each one's
        turn before (what ``encode`` is then given, so a retry after catching
        up with another process indexes it the same way)."""
        last = dict(self.last_turn)
        out: list[str | None] = []
        before: list[str | None] = []
        for t in items:
            if self.refused(t.session, project):
                out.append(None)  # never embedded
                before.append(None)
                continue
            key = (project, t.session) if t.session is not None else None
            previous = self.turn_before(key, last) if key else None
            context = None
            if key and self.config.context:
                context = carried_context(previous, t.content, self.tokenizer, self.config.context_short_tokens)
            if key:
                last[key] = t.content
            out.append(index_text(t.content, context))
            before.append(previous)
        return out, before

    def encode(self, content: str, role_s: str, session: str | None, project: str, now: datetime,
                metadata: Mapping[str, Any] | None, importance: Mapping[str, float] | None,
                vector: Callable[[str], np.ndarray], previous: str | None = None) -> EncodeResult:
        """``previous``: the turn before, as the call found it when it began
        (``turn_before``); a retry passes the same one."""
        why_not = self.refused(session, project)
        if why_not:
            return EncodeResult(False, None, why_not, None)
        body = said_text(content, speaker_in(metadata))
        score = self._score(body, role_s, project, importance)
        turn_key = (project, session) if session is not None else None
        context = None
        if turn_key and self.config.context:
            context = carried_context(previous, content, self.tokenizer, self.config.context_short_tokens)
        if turn_key:
            self.last_turn[turn_key] = content
        if self.config.gate and not imp.passes_gate(score, self.config.gate_threshold):
            return EncodeResult(False, None, f"gated: combined {score.combined:.3f} < {self.config.gate_threshold}", score)
        keep = "explicit-keep" in score.cues and role_s == "user"  # only the user's own words pin a memory
        md = {"importance": score.combined, "cues": list(score.cues), **dict(metadata or {})}
        if context:
            md["context"] = context
        when = event_windows(body, now)
        if when:  # "yesterday", said on 8 May: the event was on 7 May
            md["when"] = to_json(when)
        text = index_text(content, context)
        rec = MemoryRecord(
            id=self.new_id("ep", content, now, project), kind=MemoryKind.EPISODE, content=content, created_at=now, updated_at=now,
            last_accessed=now, project=project, session=session, role=role_s,
            tokens=self.tokenizer.tokens(text), entities=sorted(set(self.tokenizer.nouns(body))),
            importance=max(score.importance, score.emotion), memory_class="permanent" if keep else "episode",
            valid_from=now, metadata=md,
        )
        vec = vector(text)
        if self.place is not None:
            self.place(rec, vec)
        try:
            self.store.put(rec, vec)
        except BaseException:  # refused (an id another process took, a full disk): not a member of its topic
            if self.unplace is not None:
                self.unplace(rec, vec)
            raise
        self.index.add(rec)
        return EncodeResult(True, rec.id, "stored", score)
