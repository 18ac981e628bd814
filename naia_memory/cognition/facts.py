"""Heuristic fact extraction: user statements -> atomic fact candidates.

Only the user's own turns are sources (AIDA's lesson: an assistant turn read
as a fact launders the model's words into "memory"). Questions, hypotheticals
and fillers are not facts.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from . import contradiction
from .importance import IMPORTANCE_CUES, _FIRST_PERSON, asks_to_keep, utility
from .statements import read

# "user: ...", "Caroline: ..." (a chat log's speaker label), not part of what was said
SPEAKER_PREFIX = re.compile(r"^\s*(?:(?i:user|other|assistant|speaker\s*\d|사용자)|[A-Z][a-z]+|[가-힣]{2,4})\s*:\s+")
TASK_CUES = ("하는 중", "작업 중", "막혀", "마감", "working on", "stuck on", "deadline", "today i need")


@dataclass(frozen=True)
class FactCandidate:
    content: str
    attribute: str | None
    memory_class: str
    source_sentence: str
    about: str | None = None  # a third party the fact is about ("sister"); None = the speaker


def strip_speaker(text: str) -> str:
    return SPEAKER_PREFIX.sub("", text).strip()


def speaker_in(metadata: Mapping[str, Any] | None) -> str | None:
    """The speaker a turn's metadata names, if it names one as text."""
    s = (metadata or {}).get("speaker")
    return s if isinstance(s, str) and s else None


def said_text(text: str, speaker: str | None = None) -> str:
    """What was said, without who said it. A transcript line ("Jean-Luc
    Picard: ...") names its speaker; with the speaker given as metadata any
    name shape is taken off, so it is never a content word for the gate nor
    an entity of every turn they speak; without, the usual prefixes are."""
    if speaker:
        head = text.lstrip()
        if head.startswith(f"{speaker}:"):
            return head[len(speaker) + 1:].strip()
    return strip_speaker(text)


def memory_class_of(sentence: str, attr: contradiction.Attribute | None) -> str:
    low = sentence.lower()
    if asks_to_keep(sentence):
        return "permanent"
    if any(c in low for c in TASK_CUES):
        return "task_state"
    if attr is not None:
        return attr.memory_class
    return "observation"


def _is_informative(sentence: str) -> bool:
    low = f" {sentence.lower()} "
    if _FIRST_PERSON.search(sentence):
        return True
    if contradiction.detect_attribute(sentence) is not None:
        return True
    return any(c in low for cues in IMPORTANCE_CUES.values() for c in cues)


@dataclass(frozen=True)
class Extraction:
    """The facts a turn holds, and each sentence that is not one with why
    (logged as a SKIP decision: a refusal is a decision, not a silence)."""

    facts: tuple[FactCandidate, ...]
    skipped: tuple[tuple[str, str], ...]  # (sentence, reason)


def extract(text: str, role: str, split_sentences: Callable[[str], Sequence[str]], tokenizer,
            speaker: str | None = None) -> Extraction:
    """Every sentence that states something about the speaker or a person they
    name becomes a fact candidate (``statements.read`` says which and about
    whom); questions, greetings, thanks, fillers, requests, hypotheticals and
    small talk are skipped with that reason."""
    if role != "user":
        return Extraction((), ())
    body = said_text(text, speaker)
    facts: list[FactCandidate] = []
    skipped: list[tuple[str, str]] = []
    last_was_fact = False
    for sent in split_sentences(body):
        s = sent.strip()
        if not s:
            continue
        r = read(s, tokenizer)
        if not r.is_fact:
            skipped.append((s, r.kind))
            last_was_fact = False
            continue
        if not r.content:
            skipped.append((s, "filler"))  # nothing but cue and function words
            last_was_fact = False
            continue
        if last_was_fact and r.content <= {r.predicate}:
            # "ok new favorite: birria tacos. I'm obsessed": a sentence with nothing but its verb leans on the one
            # before; alone, "I'm obsessed" would be a fact about nothing, and it would answer "what am I obsessed with?"
            prev = facts[-1]
            merged = f"{prev.content} {s}"
            attr = contradiction.attribute(prev.attribute) if prev.attribute else contradiction.detect_attribute(merged)
            facts[-1] = FactCandidate(content=merged, attribute=attr.name if attr else None,
                                      memory_class=prev.memory_class if prev.attribute else memory_class_of(merged, attr),
                                      source_sentence=merged, about=prev.about)
            continue
        last_was_fact = True
        attr = contradiction.detect_attribute(s)
        facts.append(FactCandidate(content=s, attribute=attr.name if attr else None, memory_class=memory_class_of(s, attr),
                                   source_sentence=s, about=r.subject))
    return Extraction(tuple(facts), tuple(skipped))


def extract_facts(text: str, role: str, split_sentences: Callable[[str], Sequence[str]], min_words: int = 2,
                  speaker: str | None = None) -> list[FactCandidate]:
    """The earlier rule (first person, a known attribute or an importance cue),
    kept to compare with ``extract``."""
    if role != "user":
        return []
    body = said_text(text, speaker)
    out: list[FactCandidate] = []
    for sent in split_sentences(body):
        s = sent.strip()
        if not s or utility(s) == 0.0 or len(s.split()) < min_words and len(s) < 6:
            continue
        if not contradiction.is_statement(s) or not _is_informative(s):
            continue
        attr = contradiction.detect_attribute(s)
        out.append(FactCandidate(content=s, attribute=attr.name if attr else None, memory_class=memory_class_of(s, attr),
                                 source_sentence=s, about=contradiction.third_party(s)))
    return out
