"""Heuristic contradiction rules: which fact does a new statement update?

A fact is filed under an *attribute* (Koog's concept: job, residence, diet,
...), single- or multi-valued (Koog's SingleFact / MultipleFacts). A new
statement about a single-valued attribute with a different value supersedes
the old fact; a list-valued attribute keeps every value; a negation of the
same value deletes (supersedes without successor); a reaffirmation is a NOOP;
a refinement (old value contained in the new one) keeps both. Questions and
hypotheticals are never facts, so they never update anything.

Everything here is pure: callers pass the text and its tokens.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence
from .tokenize import stem_en


@dataclass(frozen=True)
class Attribute:
    name: str
    multi: bool
    patterns: tuple[str, ...]
    predicate_words: tuple[str, ...] = ()
    memory_class: str = "identity"

    @property
    def labels(self) -> tuple[str, ...]:
        """Words a question about this attribute uses, indexed with each fact of
        it: "What is the user's job?" finds "I'm freelancing as a UX designer now"."""
        return LABELS.get(self.name, ())


LABELS: dict[str, tuple[str, ...]] = {
    "diet": ("diet", "food", "식단", "식습관"),
    "residence": ("residence", "live", "home", "city", "거주", "집", "도시"),
    "job": ("job", "occupation", "work", "career", "직업", "직장"),
    "relationship": ("relationship", "partner", "연애", "관계"),
    "favorite_color": ("favorite", "color", "색"),
    "favorite_food": ("favorite", "food", "음식"),
    "age": ("age", "old", "나이"),
    "name": ("name", "이름"),
    "pets": ("pet", "animal", "반려동물"),
    "hobby": ("hobby", "free time", "취미"),
    "language": ("language", "speak", "언어"),
    "likes": ("like", "preference", "좋아하"),
}


ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute(
        "diet", False,
        (r"채식", r"비건", r"고기\s*(를|는)?\s*(안|못)\s*먹", r"vegetarian", r"vegan", r"pescatarian", r"\beat meat\b"),
        ("먹", "eat"), "preference",
    ),
    Attribute(
        "residence", False,
        (r"(에|에서|로)\s*(살아|살고|살아요|삽니다|살았|거주)", r"이사", r"\blive[sd]? in\b", r"\bliving in\b", r"\bmoved to\b", r"\brelocated\b", r"\bmoving to\b"),
        ("살", "거주", "이사", "가", "live", "living", "moved", "move", "moving", "relocated", "city"), "identity",
    ),
    Attribute(
        "job", False,
        (r"(회사|직장|스타트업|은행|병원|학교|기업|출판사|사무실|공장|가게|학원|연구소|에이전시)\S*\s*(\S+\s*)?(다녀|다니|다녔|일해|일하|근무|옮겼|옮겨|취직|입사|들어갔|그만두|그만뒀|퇴사)",
         r"(직업|직장)(은|이)", r"이직", r"퇴사", r"취직", r"\bwork(s|ing|ed)? (at|for|as)\b", r"\bmy job\b", r"\bemployed\b",
         r"\bjoined\b", r"\bquit (my|the)\b", r"\bnew job\b",
         # Korean "work at X" for any X, and the words that end a job whatever it was
         r"에서\s*(일해|일하|일합|일했|근무)", r"백수", r"실직", r"해고", r"권고사직", r"\blaid off\b", r"\bgot fired\b",
         r"\blost my job\b", r"\bunemployed\b", r"\bi(?:'m| am) an? (engineer|designer|developer|teacher|nurse|doctor|student|lawyer|accountant|chef|manager|writer|artist)"),
        ("회사", "직장", "다니", "일하", "근무", "옮기", "취직", "입사", "그만두", "퇴사", "이직", "직업", "들어가",
         "work", "working", "worked", "job", "company", "joined", "quit", "employed", "new"), "identity",
    ),
    Attribute(
        "relationship", False,
        (r"결혼", r"이혼", r"여자\s?친구", r"남자\s?친구", r"여친", r"남친", r"애인", r"싱글", r"사귀", r"연애", r"헤어졌", r"헤어짐",
         r"\bmarried\b", r"\bdivorced\b", r"\bsingle\b", r"\bgirlfriend\b", r"\bboyfriend\b", r"\bengaged\b",
         r"\bseeing someone\b", r"\bdating\b", r"\bin a relationship\b", r"\bbroke up\b", r"\bsplit up\b"),
        ("하", "got", "get"), "identity",
    ),
    Attribute(
        "favorite_color", False,
        (r"(좋아하는|최애)\s*색", r"색깔", r"favou?rite colou?r", r"\bcolou?r is\b"),
        ("좋아하", "좋", "색", "색깔", "최애", "favorite", "favourite", "color", "colour"), "preference",
    ),
    Attribute(
        "favorite_food", False,
        (r"(좋아하는|최애)\s*음식", r"favou?rite food"),
        ("좋아하", "좋", "음식", "최애", "favorite", "favourite", "food"), "preference",
    ),
    Attribute(
        "age", False,
        (r"\d+\s*살", r"\d+\s*대\s*(남성|여성|남자|여자|이다|야|예요|입니다)", r"나이", r"\b\d+ years old\b", r"\bi(?:'m| am) \d+\b"),
        ("살", "나이", "대", "years", "old"), "identity",
    ),
    Attribute(
        "name", False,
        (r"이름은", r"이름이", r"\bmy name is\b", r"\bcall me\b"),
        ("이름", "name", "call"), "identity",
    ),
    Attribute(
        "pets", True,
        (r"키워", r"키우", r"키웠", r"반려", r"\bpet\b", r"\b(have|has|got) an? (dog|cat|puppy|kitten|parrot|hamster)\b"),
        ("키우", "반려", "have", "got", "pet"), "identity",
    ),
    Attribute(
        "hobby", True,
        (r"취미", r"\bhobb(y|ies)\b", r"\bin my free time\b"),
        ("취미", "hobby", "free", "time"), "preference",
    ),
    Attribute(
        "language", True,
        (r"할\s*줄\s*(알|안)", r"\bspeak\b", r"\bfluent\b"),
        ("하", "줄", "알", "speak", "fluent"), "identity",
    ),
    Attribute(
        "likes", True,
        (r"좋아해", r"좋아하", r"좋아요", r"싫어", r"\blove\b", r"\blike\b", r"\benjoy\b", r"\bhate\b", r"\bprefer\b"),
        ("좋아하", "좋", "싫", "싫어하", "love", "like", "enjoy", "hate", "prefer"), "preference",
    ),
)
_BY_NAME = {a.name: a for a in ATTRIBUTES}

GENERIC_WORDS = frozenset(
    "지금 이제 요즘 새로 최근 다시 현재 원래 예전 전 작년 올해 얼마 되 있 하 않 아니 그리고 그래서 근데 정말 진짜 "
    "now currently recently new anymore still last year ago actually really since longer i'm i've don't doesn't not never no "
    "stopped quit left being 또 더 이상 그만두 그만 끊 않 안 못".split()
)
NEGATION = re.compile(r"(안\s|못\s|않|아니|없어|없다|없습|끊었|끊어|그만|더\s*이상|no longer|\bnot\b|n't\b|\bnever\b|\bstopped\b|\bquit\b|anymore)", re.IGNORECASE)
QUESTION = re.compile(r"(\?|니\s*$|냐\s*$|까\s*$|나요\s*$|지요\s*$|죠\s*$|^(do|does|did|is|are|am|was|were|have|has|can|could|would|will|should)\b)", re.IGNORECASE)
HYPOTHETICAL = re.compile(r"(만약|만일|혹시|다면|이라면|면 어떨|으면 좋겠|했으면|할까\s|싶어|싶다|고민|\bif i\b|\bif we\b|\bwould\b|\bmight\b|\bmaybe\b|\bthinking about\b|\bconsidering\b|\bwish\b|\bsuppose\b)", re.IGNORECASE)
THIRD_PARTY = re.compile(
    r"^\s*(?:(?:우리|내|제)\s*)?(언니|오빠|형|누나|동생|엄마|아빠|어머니|아버지|남편|아내|친구|동료|여자\s?친구|남자\s?친구|여친|남친|아들|딸|상사|사촌)(?:는|은|가|이|도)\s"
    r"|^\s*(?:my|our)\s+(sister|brother|mom|mother|dad|father|friend|wife|husband|partner|son|daughter|colleague|boss|cousin|roommate)\b",
    re.IGNORECASE)
PAST_REFERENCE = re.compile(r"(어릴\s*때|어렸을\s*때|예전에|옛날에|학생\s*때|그때는|\bused to\b|\bwhen i was\b|\bas a (kid|child)\b|\bback in \d{4}\b|\byears ago\b)", re.IGNORECASE)
CHANGE_SPLIT = re.compile(r"(는데|지만|고\s+지금은|고\s+이제|지금은|이제는|요즘은|\bbut\b|\bnow\b|\bhowever\b|\bthese days\b)", re.IGNORECASE)


def detect_attribute(text: str) -> Attribute | None:
    """First attribute whose pattern matches (the list is ordered specific -> general)."""
    t = text.lower()
    for attr in ATTRIBUTES:
        if any(re.search(p, t) for p in attr.patterns):
            return attr
    return None


def attribute(name: str) -> Attribute:
    return _BY_NAME[name]


def is_attribute(name: str | None) -> bool:
    return name in _BY_NAME


def is_question(text: str) -> bool:
    return QUESTION.search(text.strip()) is not None


def is_hypothetical(text: str) -> bool:
    return HYPOTHETICAL.search(text) is not None


def is_negated(text: str) -> bool:
    return NEGATION.search(text) is not None


def third_party(text: str) -> str | None:
    """The relation a statement is about ("언니", "sister"), or None if about the speaker."""
    m = THIRD_PARTY.search(text)
    return (m.group(1) or m.group(2)).replace(" ", "").lower() if m else None


def is_past_reference(text: str) -> bool:
    """A statement about how things were long ago, not a change of the present."""
    return PAST_REFERENCE.search(text) is not None


def is_statement(text: str) -> bool:
    """A sentence that can become a fact: neither a question nor a hypothetical."""
    return bool(text.strip()) and not is_question(text) and not is_hypothetical(text)


# the tokenizer stems English ("anymore" -> "anymor"): compare stems with stems
_GENERIC_STEMS = frozenset(GENERIC_WORDS) | {stem_en(w) for w in GENERIC_WORDS if w.isascii()}


def value_tokens(text: str, tokens: Sequence[str], attr: Attribute | None, tokenize=None) -> frozenset[str]:
    """The value part of a statement: its last clause after a change marker,
    minus the attribute's predicate words and generic time/negation words."""
    parts = [p for p in CHANGE_SPLIT.split(text) if p and not CHANGE_SPLIT.fullmatch(p)]
    if len(parts) > 1 and tokenize is not None:
        tokens = tokenize(parts[-1])
    drop = _GENERIC_STEMS | set(attr.predicate_words if attr else ())
    drop |= {stem_en(w) for w in (attr.predicate_words if attr else ()) if w.isascii()}
    return frozenset(t for t in tokens if t not in drop)


def _overlap(new: frozenset[str], old: frozenset[str]) -> frozenset[str]:
    """New value tokens that match an old one; Korean compounds match by
    containment ("채식" ~ "채식주의자")."""
    return frozenset(n for n in new if any(n == o or (min(len(n), len(o)) >= 2 and (n in o or o in n)) for o in old))


@dataclass(frozen=True)
class Verdict:
    op: str  # "supersede" | "delete" | "reaffirm" | "refine" | "add"
    target_id: str | None
    reason: str
    # an "add" of a statement that reads as a change but names no fact the rules can tie it to: the facts it
    # may be about, nearest first, for the user to settle (``MemorySystem.doubts``)
    doubts: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExistingFact:
    id: str
    attribute: str | None
    values: frozenset[str]


def judge(
    new_text: str,
    new_attr: Attribute | None,
    new_values: frozenset[str],
    existing: Sequence[ExistingFact],
) -> Verdict:
    """Decide how a new statement relates to the active facts of its subject.

    ``existing`` should be the active facts in the same project, newest first.
    """
    if new_attr is None:
        return Verdict("add", None, "no known attribute")
    if is_past_reference(new_text):
        return Verdict("add", None, f"past {new_attr.name}, not a change of the present")
    same = [f for f in existing if f.attribute == new_attr.name]
    if not same:
        return Verdict("add", None, f"first {new_attr.name} fact")
    negated = is_negated(new_text)
    for f in same:
        overlap = _overlap(new_values, f.values)
        if negated and (overlap or not new_values) and (not new_values or overlap == new_values):
            return Verdict("delete", f.id, f"negates {new_attr.name}={sorted(f.values)}")
        if not negated and new_values and new_values <= f.values:
            return Verdict("reaffirm", f.id, f"restates {new_attr.name}")
    if negated:
        if new_attr.multi:
            return Verdict("add", None, f"negative {new_attr.name} fact about another value")
        # a change phrased with a negation ("quit X, now at Y") still updates the slot
    for f in same:
        if f.values and f.values < new_values and not negated:
            return Verdict("refine", f.id, f"adds detail to {new_attr.name}")
    if new_attr.multi:
        return Verdict("add", None, f"{new_attr.name} is list-valued")
    if not new_values:
        return Verdict("add", None, f"{new_attr.name} statement without a value")
    return Verdict("supersede", same[0].id, f"{new_attr.name} changed")
