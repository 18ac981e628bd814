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
from typing import Callable, Mapping, Sequence

_HANGUL = re.compile(r"[가-힣]")
# a theme whose evidence is this share inside a stronger theme's is the same theme
SAME_THEME = 0.8
# a person's theme is a word they use at least this many times as often as everyone else
DISTINCT = 2.0
# words that say how something went, not what it was about (English stems as the
# tokenizer gives them, Korean stems as Kiwi gives them): never a theme by themselves
HOW_WORDS = frozenset("""
good great nice cool fine amaz awesom wonder fantast incred beauti love like enjoy fun happi glad sure sorri
thank thanks hey wow yeah yes oh ok okay lol haha realli much mani lot lots way thing things stuff time times
day days see look looks sound sounds take takes make made get got go went come came say said tell told know
think feel want need keep give put let seem mean tri use work well also even still just right new old big
littl bit kind sort pretti super total definit absolut especi actual probabl mayb someth anyth everyth
people peopl person everyon someon one two first last next week year today tonight yesterday tomorrow
took found gave left felt thought knew up down out back show appreci moment inspir
좋 하 되 있 없 같 보 가 오 주 알 모르 생각 진짜 정말 너무 완전 그냥 많 적 크 작 거 것 수 때 날 오늘 어제 내일 사람
""".split())


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


def describe(theme: str, items: Sequence[Evidence], sessions: int, who: str | None = None) -> str:
    """The reflection's text, in the language most of its evidence is in, with
    two of the speaker's own sentences as examples; ``who``: whose theme it
    is when it is not the user's (a named person, a conversation's speaker)."""
    first, last = min(i.at for i in items), max(i.at for i in items)
    ex = "; ".join(f'"{i.content.strip()[:120]}"' for i in items[:2])
    korean = sum(bool(_HANGUL.search(i.content)) for i in items) * 2 > len(items)
    if korean:
        whose = f"{who}의 " if who else ""
        return (f'{whose}반복되는 주제: "{theme}" — {first:%Y-%m-%d}부터 {last:%Y-%m-%d}까지 {sessions}개 세션에서 '
                f'거듭 나옴 (예: {ex})')
    whose = f" for {who}" if who else ""
    return f'Recurring theme{whose}: "{theme}" came up in {sessions} sessions from {first:%Y-%m-%d} to {last:%Y-%m-%d} (e.g. {ex})'


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
                  per_pattern: int = 8, limit: int = 5, who: str | None = None,
                  shown: Callable[[str, Sequence[Evidence]], str] | None = None,
                  others: Mapping[str, float] | None = None) -> list[Pattern]:
    """Recurring themes, strongest first (most sessions, then most memories, then
    the word). ``shown``: the word as the text says it (the index keeps stems).
    ``others``: the share of everyone else's statements holding each word (a
    conversation's other speakers): a word this person uses no more than
    ``DISTINCT`` times as often as they do ("great", "thanks") is theirs too."""
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
        if others is not None and n / len(said) <= DISTINCT * others.get(w, 0.0):
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
                           text=describe(shown(w, chosen) if shown else w, chosen, n_sessions, who)))
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


__all__ = ["DISTINCT", "Evidence", "HOW_WORDS", "Pattern", "SAME_THEME", "check_links", "describe", "find_patterns"]
