"""Reflection (HGVM): what keeps coming back across sessions becomes a
higher-order memory, linked to the memories that show it.

The offline pattern finder is deterministic and plain: a word the user's
memories name (their entities) in at least ``min_sessions`` different
sessions (and ``min_topics`` hierarchy topics, when they are placed) is a
recurring theme: a habit, a preference, a person, a project. Words that
are in too large a share of the memories say nothing ("today", "time") and
are skipped; a theme whose evidence is mostly another, stronger theme's is
the same theme and is dropped. The evidence is one memory per session,
newest sessions first. Counts are of statements: a fact and the turn it
came from say one thing once.

HGVM's rule, kept by the caller and checked here: a reflection is built
from observations, never from other reflections (``check_links`` refuses
any cited id that is not in the evidence offered, which the store selected
with ``RecordFilter(evidence=True)``). Pure functions; time comes in as data.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Mapping, Sequence

_HANGUL = re.compile(r"[가-힣]")
# a theme whose evidence is this share inside a stronger theme's is the same theme
SAME_THEME = 0.8


@dataclass(frozen=True)
class Evidence:
    id: str
    content: str
    session: str  # the session, or the day when the memory has none
    topic: str | None
    at: datetime
    words: tuple[str, ...]
    is_fact: bool = False
    statement: str = ""  # what was said: a fact and the turn it came from are one statement (default: the id)


@dataclass(frozen=True)
class Pattern:
    theme: str
    evidence: tuple[str, ...]  # ids, newest session first
    sessions: int
    topics: int
    first: datetime
    last: datetime
    text: str


def describe(theme: str, items: Sequence[Evidence], sessions: int) -> str:
    """The reflection's text, in the language most of its evidence is in, with
    two of the user's own sentences as examples."""
    first, last = min(i.at for i in items), max(i.at for i in items)
    ex = "; ".join(f'"{i.content.strip()[:120]}"' for i in items[:2])
    korean = sum(bool(_HANGUL.search(i.content)) for i in items) * 2 > len(items)
    if korean:
        return (f'반복되는 주제: "{theme}" — {first:%Y-%m-%d}부터 {last:%Y-%m-%d}까지 {sessions}개 세션에서 '
                f'거듭 나옴 (예: {ex})')
    return f'Recurring theme: "{theme}" came up in {sessions} sessions from {first:%Y-%m-%d} to {last:%Y-%m-%d} (e.g. {ex})'


def _pick(items: Sequence[Evidence], limit: int) -> list[Evidence]:
    """One memory per session (a fact before the turn it came from, the newest
    within the session), newest sessions first, then the rest."""
    by_session: dict[str, list[Evidence]] = {}
    for it in sorted(items, key=lambda i: (not i.is_fact, -i.at.timestamp(), i.id)):
        by_session.setdefault(it.session, []).append(it)
    order = sorted(by_session, key=lambda s: (-max(i.at for i in by_session[s]).timestamp(), s))
    first = [by_session[s][0] for s in order]
    rest = sorted((i for s in order for i in by_session[s][1:]), key=lambda i: (-i.at.timestamp(), i.id))
    return (first + rest)[:limit]


def find_patterns(items: Sequence[Evidence], *, min_sessions: int, min_topics: int = 1, max_share: float = 0.2,
                  per_pattern: int = 8, limit: int = 5) -> list[Pattern]:
    """Recurring themes, strongest first (most sessions, then most memories, then the word)."""
    by_word: dict[str, list[Evidence]] = {}
    for it in items:
        for w in set(it.words):
            by_word.setdefault(w, []).append(it)
    said = {i.statement or i.id for i in items}
    cap = max(max_share * len(said), 2 * min_sessions)  # a small memory has no background to compare with
    found = []
    for w, its in by_word.items():
        sessions = {i.session for i in its}
        topics = {i.topic for i in its if i.topic is not None}
        n = len({i.statement or i.id for i in its})
        if len(sessions) < min_sessions or n > cap or (min_topics > 1 and len(topics) < min_topics):
            continue
        found.append((len(sessions), n, w, its, len(topics)))
    found.sort(key=lambda f: (-f[0], -f[1], f[2]))
    out: list[Pattern] = []
    taken: list[set[str]] = []
    for n_sessions, _, w, its, n_topics in found:
        ids = {i.id for i in its}
        if any(len(ids & t) >= SAME_THEME * len(ids) for t in taken):
            continue
        taken.append(ids)
        chosen = _pick(its, per_pattern)
        out.append(Pattern(theme=w, evidence=tuple(i.id for i in chosen), sessions=n_sessions, topics=n_topics,
                           first=min(i.at for i in its), last=max(i.at for i in its),
                           text=describe(w, chosen, n_sessions)))
        if len(out) >= limit:
            break
    return out


def check_links(cited: Sequence[str], offered: Mapping[str, Evidence], *, min_sessions: int) -> list[str]:
    """Why a proposed reflection's evidence does not hold (empty: it holds):
    every cited id must be a memory offered as evidence (never a reflection or
    a summary, never one made up), and together they must span the sessions."""
    problems = [f"cites {i}, which was not offered as evidence" for i in cited if i not in offered]
    if not cited:
        problems.append("cites no evidence")
    sessions = {offered[i].session for i in cited if i in offered}
    if cited and len(sessions) < min_sessions:
        problems.append(f"its evidence spans {len(sessions)} session(s), fewer than {min_sessions}")
    return problems


__all__ = ["Evidence", "Pattern", "SAME_THEME", "check_links", "describe", "find_patterns"]
