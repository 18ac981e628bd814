"""Verified topic summaries (HGVM, "verified consolidation"): write one text
for a topic's facts and check it against them before it is kept.

HGVM's rule is that a summary is a claim about its sources and must be
checked like one: what the sources say and the summary leaves out
(missing), what the summary says differently (altered), and what it says
that a newer fact has replaced (contradicted). Any of the three rejects it.

Offline, the summary is extractive (the facts themselves, oldest first), so
the check can be exact; a model's summary paraphrases, so the check looks
for each source's value words and content words, numbers that no source
holds, and values the sources' predecessors held. Pure functions: the
caller passes the texts and a tokenizer's ``words``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

Words = Callable[[str], list[str]]

# a paraphrase keeps at least this share of a source's content words
MIN_WORD_SHARE = 0.5
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


@dataclass(frozen=True)
class Source:
    """One fact a summary stands for; ``stale`` are values its predecessors held
    (what the user said before, and replaced)."""

    id: str
    content: str
    values: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def extractive_summary(sources: Sequence[Source]) -> str:
    """The facts themselves, one per sentence, oldest first: nothing is
    rewritten, so nothing can be altered. (Not the topic's label: its words
    come from every memory ever placed there, replaced ones too.)"""
    return " ".join(s.content.rstrip(" .") + "." for s in sources)


def verify(summary: str, sources: Sequence[Source], words: Words) -> list[str]:
    """Problems with ``summary`` as a summary of ``sources`` (empty: accepted).
    Each names its kind (missing / altered / contradicted) and the source."""
    problems: list[str] = []
    text = _norm(summary)
    have = set(words(summary))
    for s in sources:
        if _norm(s.content).rstrip(" .") in text:
            continue  # said word for word
        lost = [v for v in s.values if v and not (set(words(v)) <= have or _norm(v) in text)]
        own = set(words(s.content))
        share = len(own & have) / len(own) if own else 1.0
        if lost:
            problems.append(f"missing: {s.id} ({', '.join(lost)} is not in the summary)")
        elif share < MIN_WORD_SHARE:
            problems.append(f"missing: {s.id} ({share:.0%} of its words are in the summary)")
    said = " ".join(_norm(s.content) for s in sources)
    for n in sorted(set(_NUMBER.findall(summary)) - set(_NUMBER.findall(said))):
        problems.append(f"altered: {n} is in no source")
    current = set().union(*(set(words(s.content)) for s in sources)) if sources else set()
    for s in sources:
        for old in s.stale:
            old_words = set(words(old)) - current
            if old_words and old_words <= have:
                problems.append(f"contradicted: says {old!r}, which {s.id} replaced")
    return problems


__all__ = ["MIN_WORD_SHARE", "Source", "extractive_summary", "verify"]
