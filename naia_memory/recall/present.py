"""A question about how things are now is answered by the latest word on it.

"What's my job right now?" after "I work at Kaiser", "Got laid off" and
"I'm doing travel nursing with Aya now": all three are about the job and
close to the question; the newest tells the present. When the update rules
miss a change (no cue they know), both facts stay current and only their
order in time says which holds. So a question in the present tense about
the user (no speaker named, no past tense, no date) ranks the relevant
memories newer-first within a bounded share of relevance; questions about
the past or about someone by name are left alone.

Tense is read from the grammar, not from topics: English auxiliaries and
time words; in Korean, time words and the retrospective 었었 (from Kiwi),
since spoken Korean drops the subject and a question that names no one is
about the one asking.
"""
from __future__ import annotations

import re
from datetime import datetime
from typing import Mapping, Sequence

import numpy as np

from ..cognition.tokenize import has_hangul

_EN_NOW = re.compile(r"\b(now|right now|currently|current|these days|nowadays|still|anymore|any more|at the moment|lately|today)\b", re.I)
_EN_PAST = re.compile(r"\b(did|was|were|had|used to|ago|last (week|month|year|time)|yesterday|before|back (then|when)|first|originally|previous|previously|earlier|in \d{4})\b", re.I)
# present-tense auxiliaries (relative_time reads them too: a weekday said in the present is the coming one)
EN_PRESENT = re.compile(r"\b(am|is|are|do|does|have|has)\b|'s\b|'m\b|'re\b", re.I)
_EN_USER = re.compile(r"\b(i|i'm|me|my|mine|myself)\b", re.I)

_KO_PAST = re.compile(r"(예전|옛날|전에|작년|지난|처음|원래|그때|년\s*전|달\s*전|어제)")
# "before my interview tomorrow", "내일 출근 전에": a time ahead, not one that is over
# ("will" and "plans" are left out: "Where did Will work?", "What were my plans last year?")
_AHEAD = re.compile(r"\b(tomorrow|(?<!the\s)next|'ll|going to|gonna|upcoming|coming up)\b|내일|모레|다음\s*(주|달|번|에)|예정|할 거|갈 거|려고", re.I)


def asks_about_now(query: str, morphs: Sequence[tuple[str, str]] = ()) -> bool:
    """True for a question about the speaker's present state ("what team do I
    play on now?", "요즘 회사 어디 다녀?", "do I still have my RAV4?"), False
    for the past ("what did I drive before?", "처음 다닌 회사가 어디였지?")."""
    if has_hangul(query):
        if _KO_PAST.search(query):
            return False
        # the retrospective 었었/았었 tells of the past; a plain 었 in a question is
        # as often "what was it again?" ("무슨 팀이었지?") as a past tense
        return not any(t == "EP" and f in ("었었", "았었") for f, t in morphs)  # spoken Korean drops the subject: an unnamed question is about the one asking
    if _EN_PAST.search(query) and not _EN_NOW.search(query):
        return False
    if not _EN_USER.search(query):
        return False
    return bool(_EN_NOW.search(query) or EN_PRESENT.search(query))


def asks_about_past(query: str, morphs: Sequence[tuple[str, str]] = ()) -> bool:
    """True for a question about how things were ("when did Jon lose his job as
    a banker?", "what did I drive before?", "처음 다닌 회사가 어디였었지?"), by
    the same grammar ``asks_about_now`` reads, for anyone: a past tense or a
    time that is over, and no word for now. What was said then answers it,
    whether or not a later statement replaced it."""
    if _AHEAD.search(query):
        return False
    if has_hangul(query):
        return bool(_KO_PAST.search(query)) or any(t == "EP" and f in ("었었", "았었") for f, t in morphs)
    return bool(_EN_PAST.search(query)) and not _EN_NOW.search(query)


class NewerFirst:
    """Scales relevance by ``1 + weight * recency``, recency in [0, 1] from the
    oldest to the newest candidate: a newer memory passes an older one only
    when they are within ``weight`` of each other in relevance. Kept as an
    object so a memory that inherits another's relevance (a retired fact's turn
    answered by its successor) is scaled for its own time, not the old one's."""

    def __init__(self, when: Mapping[str, datetime], weight: float) -> None:
        stamps = [t.timestamp() for t in when.values()]
        self.weight = weight
        self.lo, self.hi = (min(stamps), max(stamps)) if stamps else (0.0, 0.0)

    @classmethod
    def of_stamps(cls, stamps: np.ndarray, weight: float) -> "NewerFirst":
        """The same scale from POSIX seconds (the recall pipeline's arrays)."""
        self = cls.__new__(cls)
        self.weight = weight
        self.lo, self.hi = (float(stamps.min()), float(stamps.max())) if len(stamps) else (0.0, 0.0)
        return self

    def factors(self, stamps: np.ndarray) -> np.ndarray:
        """``factor`` for many POSIX times at once (same arithmetic)."""
        if self.weight <= 0 or self.hi <= self.lo:
            return np.ones(len(stamps))
        return 1.0 + self.weight * np.minimum(1.0, np.maximum(0.0, (stamps - self.lo) / (self.hi - self.lo)))

    def factor(self, t: datetime) -> float:
        if self.weight <= 0 or self.hi <= self.lo:
            return 1.0
        return 1.0 + self.weight * min(1.0, max(0.0, (t.timestamp() - self.lo) / (self.hi - self.lo)))

    def apply(self, rel: Mapping[str, float], when: Mapping[str, datetime]) -> dict[str, float]:
        return {i: s * self.factor(when[i]) for i, s in rel.items()}


def newer_first(rel: Mapping[str, float], when: Mapping[str, datetime], weight: float) -> dict[str, float]:
    """``NewerFirst`` over the candidates themselves."""
    return NewerFirst({i: when[i] for i in rel}, weight).apply(rel, when)


__all__ = ["NewerFirst", "asks_about_now", "asks_about_past", "newer_first"]
