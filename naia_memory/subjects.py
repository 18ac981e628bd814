"""Whose fact a candidate is: the user's, or a person they named.

``statements.read`` finds the subject a sentence states on its own ("My
brother Jake works at Tesla", "우리 언니는 은행 다녀"). What it cannot see
is what the memory already knows: that "mia" is the roommate the user told
about, so "mia got laid off" is hers, typed in lowercase as chat is. Facts
keep their subject as ``metadata["subject"]`` (``user`` or ``user/mia``);
these functions read it.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable

from .cognition.facts import FactCandidate
from .cognition.korean import ko_bare_name
from .cognition.tokenize import Tokenizer
from .records import MemoryRecord

SAID_OF_ONESELF = re.compile(r"^\s*(?:(?:i|i'm|i've|my)\b|(?:나|저|난|전|내가|제가)(?:\s|는|도|가))", re.I)


def split_subject(subject: str) -> tuple[str, str | None]:
    """A fact's ``metadata["subject"]`` as (whose memory, the person it is
    about): "user/mia" -> ("user", "mia"), "user" -> ("user", None)."""
    owner, _, who = subject.partition("/")
    return owner, who or None


def person_of(fact: MemoryRecord) -> str | None:
    """The person a fact is about ("user/mia" -> "mia"); None for the speaker's own."""
    return split_subject(str(fact.metadata.get("subject", "user")))[1]


def related(fact: MemoryRecord, subject: str, cand: FactCandidate) -> bool:
    """A fact the new one may update: the same subject's, or one that names the
    person the new one is about ("I live with a roommate, Kev" / "Kev moved out"),
    or, when the new one's subject was not found, whose person it names."""
    theirs = str(fact.metadata.get("subject", "user"))
    if theirs == subject:
        return True
    if cand.about and cand.about.lower() in fact.content.lower():
        return True
    who = person_of(fact)
    if cand.about or not who or who.lower() not in cand.content.lower():
        return False  # the new fact is about someone else ("Jake's girlfriend"), or does not name them
    # "나 요가 등록했어 민지 따라서": said of oneself, naming a friend; 민지's facts are hers
    return not SAID_OF_ONESELF.match(cand.source_sentence or cand.content)


def named_person(cand: FactCandidate, subject: str, project: str,
                 person: Callable[[str, str, str], str | None], tokenizer: Tokenizer) -> FactCandidate:
    """A sentence that opens with the name of someone the user has already
    told about is about them: "mia got laid off" after "my roommate mia
    works at the bakery", "지수 스벅 알바 관뒀대" after "친구 지수 스타벅스에서
    알바해". Read alone, a lowercase name (chat) or a name Kiwi tags as a
    common noun is not a subject; the memory knows it is one. ``person`` is
    ``MemoryIndex.person``: a name some fact, current or retired, is about (a
    person stays known after their job ended), looked up as written and as
    its first token ("지수가" is 지수), in O(1)."""
    if cand.about or SAID_OF_ONESELF.match(cand.source_sentence or cand.content):
        return cand
    first = re.match(r"\s*([^\s,.!?~]+)", cand.content)
    if not first:
        return cand
    word = re.sub(r"(['’]s)$", "", first.group(1))
    for name in dict.fromkeys((word, ko_bare_name(word), *tokenizer.tokens(word)[:1])):
        who = person(project, subject, name)
        if who is not None:
            return replace(cand, about=who)
    return cand


__all__ = ["SAID_OF_ONESELF", "named_person", "person_of", "related", "split_subject"]
