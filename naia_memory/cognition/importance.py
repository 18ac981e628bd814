"""Importance gate: importance, surprise and emotion, plus utility and role.

Scores are cue-based so they are explainable and free: the matched cues are
returned with the score. ``surprise`` is passed in (computed by the caller
from the nearest existing memories) to keep this module pure.
"""
from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from ..contract import ImportanceScore, InvalidInput

ROLE_WEIGHTS: dict[str, float] = {"user": 1.0, "assistant": 0.6, "system": 0.3, "tool": 0.4}

# Each cue family adds to importance once, however many of its cues match.
IMPORTANCE_CUES: dict[str, tuple[str, ...]] = {
    "work": ("회사", "직장", "직업", "일해", "일하", "근무", "취직", "이직", "퇴사", "스타트업", "출근", "전공", "학교", "대학",
             "job", "work", "company", "office", "career", "startup", "employ", "school", "study", "college"),
    "home": ("이사", "살아", "살고", "거주", "집", "동네", "move", "moved", "live", "living", "house", "apartment", "home"),
    "family": ("가족", "엄마", "아빠", "부모", "아내", "남편", "아들", "딸", "형", "누나", "언니", "오빠", "동생", "결혼", "여자친구", "남자친구", "아이",
               "family", "mother", "father", "mom", "dad", "wife", "husband", "son", "daughter", "married", "kid", "child", "partner"),
    "health": ("알레르기", "병원", "아파", "건강", "채식", "비건", "다이어트", "운동", "allergic", "allergy", "hospital", "sick", "health", "vegetarian", "vegan", "diet"),
    "preference": ("좋아", "싫어", "선호", "취미", "즐겨", "관심", "favorite", "favourite", "love", "like", "hate", "prefer", "hobby", "enjoy"),
    "identity": ("이름", "나이", "생일", "살이", "대 ", "남성", "여성", "name", "birthday", "years old", "born"),
    "possession": ("키워", "키우", "강아지", "고양이", "반려", "차를", "pet", "dog", "cat", "own", "bought"),
    "plan": ("계획", "예정", "목표", "준비", "할 거", "plan", "going to", "goal", "will"),
}
EXPLICIT_KEEP_CUES = ("기억해", "잊지 마", "잊지마", "꼭 기억", "remember this", "remember that", "don't forget", "never forget")
EMOTION_CUES = ("행복", "기뻐", "기쁘", "슬퍼", "슬프", "화나", "화가", "짜증", "우울", "신나", "설레", "무서", "걱정", "불안", "사랑", "최고", "최악", "감동",
                "ㅠ", "ㅜ", "happy", "sad", "angry", "upset", "excited", "scared", "worried", "anxious", "love", "hate", "amazing", "terrible", "awful")
FILLER_WORDS = frozenset(
    "안녕 안녕하세요 반가워 반가워요 반갑습니다 네 응 어 아 음 오 예 그래 그래요 그렇구나 그렇군요 맞아 맞아요 좋아요 ㅋㅋ ㅎㅎ ㅋ ㅎ 감사합니다 고마워 고마워요 알겠어 알겠어요 잘가 잘자 "
    "hi hello hey ok okay yes yeah yep no nope thanks thank bye sure cool nice great hmm uh um lol".split()
)
_FIRST_PERSON = re.compile(r"(^|\s)(나는|난|내가|나도|저는|전|제가|저도|내|제|우리|나|저)(\s|$)|\b(i|i'm|my|me|mine|we|our)\b", re.IGNORECASE)
_WORD = re.compile(r"[가-힣]+|[A-Za-z']+|\d+")
# a Korean self-description: one noun and the copula, the subject dropped as
# Korean does ("간호사예요", "프리랜서야", "개발자입니다": I am a ...); one word,
# so the gate would drop it for want of content. Said of a thing it is a
# reaction or a pointer instead ("대박이야", "이거야"), which these words open.
_KO_COPULA_SELF = re.compile(r"^\s*(?:(?:저|나|난|전)\s+)?(?!(?:뭐|누구|어디|언제|왜|대박|최고|짱|별로|이거|그거|저거|이게|그게|저게|"
                             r"여기|거기|오늘|내일|지금|진짜|정말|완전|아침|점심|저녁|다행|당연)[가-힣]*?(?:이에요|예요|이야|야|입니다|임))"
                             r"[가-힣A-Za-z0-9]+(?:이에요|예요|이야|야|입니다|이다|임)[\s.!~ㅎㅋ^]*$")


@dataclass(frozen=True)
class ImportanceConfig:
    w_importance: float = 0.5
    w_surprise: float = 0.3
    w_emotion: float = 0.2
    base_importance: float = 0.2
    first_person_bonus: float = 0.2
    per_family: float = 0.3
    emotion_per_cue: float = 0.35
    exclamation: float = 0.15
    content_words_for_full_utility: int = 3
    role_weights: Mapping[str, float] = field(default_factory=lambda: dict(ROLE_WEIGHTS))


def utility(text: str, cfg: ImportanceConfig = ImportanceConfig()) -> float:
    """0 for greetings and fillers, rising with the number of content words."""
    words = [w.lower() for w in _WORD.findall(text)]
    content = [w for w in words if w not in FILLER_WORDS and not re.fullmatch(r"[ㅋㅎㅠㅜ]+", w)]
    if not content:
        return 0.0
    return min(1.0, len(content) / cfg.content_words_for_full_utility)


def _cue_pattern(cues: tuple[str, ...]) -> re.Pattern[str]:
    """One compiled alternation per cue family; English cues match at a word start."""
    parts = [rf"\b{re.escape(c)}" if re.fullmatch(r"[a-z' ]+", c) else re.escape(c) for c in cues]
    return re.compile("|".join(parts))


_FAMILY_PATTERNS = {f: _cue_pattern(c) for f, c in IMPORTANCE_CUES.items()}
_KEEP_PATTERN = _cue_pattern(EXPLICIT_KEEP_CUES)
# A keep cue is a request only when it is one: not asked ("do you remember that movie?",
# "너 그거 기억해?"), not negated or said of oneself ("I don't remember that restaurant",
# "I can never remember this word", "I never forget a face"). Each of these pinned a turn for good.
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
# "remember this, okay?", "꼭 기억해, 알았지?": a tag asks for agreement, the sentence is still a request
_TAG = re.compile(r"[,\s]*\b(okay|ok|right|alright|yeah|got it|will you|would you)\s*[?？]+\s*$|[,\s]*(알았지|알겠지|알지|응|알았죠|알겠죠)\s*[?？]+\s*$")
# what makes a cue not a request, read just before it: asked ("do you remember"), negated
# ("don't remember", "can never remember"), or the speaker's own recall ("I'll remember that")
_ASKED_EN = re.compile(r"\b(do|did|don't|didn't)\s+(you|u|ya)\s+(still\s+|even\s+)?$")
_NOT_EN = re.compile(r"\b(don't|do not|didn't|did not|can't|cannot|can not|couldn't|never|not|won't|hardly|barely)\s+(\w+\s+){0,2}$")
_SELF_EN = re.compile(r"\b(i|we|i'll|we'll|i'd|i will)\s+(\w+\s+){0,2}$")
_ASKED_KO = re.compile(r"기억(해|하니|하냐|하지|나|남)\s*[?？]|기억\s*(안|못)")


def asks_to_keep(text: str) -> bool:
    """Whether some sentence of ``text`` asks for it to be kept ("remember
    this", "기억해 줘", "don't forget ..."): a cue that is neither asked about
    nor the speaker telling what they do or do not recall."""
    for sentence in _SENTENCE.findall(f" {text.lower()} "):
        s = _TAG.sub("", f" {sentence.strip()} ")
        if "?" in s or "？" in s or _ASKED_KO.search(s):
            continue
        for cue in _KEEP_PATTERN.finditer(s):
            before = s[max(0, cue.start() - 40):cue.start()]
            if cue.group(0) in ("don't forget", "never forget"):  # the negation is the request itself
                if not _SELF_EN.search(before):
                    return True
                continue
            if not (_ASKED_EN.search(before) or _NOT_EN.search(before) or _SELF_EN.search(before)):
                return True
    return False
_EMOTION_PATTERNS = tuple(_cue_pattern((c,)) for c in EMOTION_CUES)


def importance_axis(text: str, cfg: ImportanceConfig = ImportanceConfig()) -> tuple[float, tuple[str, ...]]:
    text_l = f" {text.lower()} "
    if asks_to_keep(text):
        return 1.0, ("explicit-keep",)
    families = tuple(sorted(f for f, pat in _FAMILY_PATTERNS.items() if pat.search(text_l)))
    score = cfg.base_importance + cfg.per_family * len(families)
    if _FIRST_PERSON.search(text):
        score += cfg.first_person_bonus
        families = families + ("first-person",)
    elif _KO_COPULA_SELF.match(text):  # "간호사예요": who the speaker is, the subject dropped
        score += cfg.first_person_bonus
        families = families + ("self-description",)
    return min(1.0, score), families


def emotion_axis(text: str, cfg: ImportanceConfig = ImportanceConfig()) -> float:
    text_l = f" {text.lower()} "
    hits = sum(1 for pat in _EMOTION_PATTERNS if pat.search(text_l))
    score = cfg.emotion_per_cue * hits + (cfg.exclamation if "!" in text else 0.0)
    return min(1.0, score)


def lexical_surprise(tokens: Sequence[str], neighbours: Sequence[Sequence[str]]) -> float:
    """1 - the highest Jaccard overlap with any nearby memory (1.0 when none)."""
    mine = set(tokens)
    if not mine:
        return 0.0
    best = 0.0
    for other in neighbours:
        o = set(other)
        if o:
            best = max(best, len(mine & o) / len(mine | o))
    return 1.0 - best


def score(
    text: str,
    role: str,
    surprise: float,
    cfg: ImportanceConfig = ImportanceConfig(),
    overrides: Mapping[str, float] | None = None,
) -> ImportanceScore:
    """Combine the axes: role_weight * utility * (wi*I + ws*S + we*E).

    ``overrides`` lets a caller pin any axis (e.g. ``{"importance": 1.0}``).
    """
    imp, cues = importance_axis(text, cfg)
    emo = emotion_axis(text, cfg)
    util = utility(text, cfg)
    role_w = cfg.role_weights.get(str(role), 0.5)
    axes = {"importance": imp, "surprise": float(surprise), "emotion": emo, "utility": util, "role_weight": role_w}
    if overrides is not None and not isinstance(overrides, Mapping):
        raise InvalidInput(f"importance overrides must be a mapping of axis to number, got {overrides!r}")
    for key, val in (overrides or {}).items():
        if key not in axes:
            raise InvalidInput(f"unknown importance override {key!r}; use one of {sorted(axes)}")
        # a number, finite: NaN silently gated the turn, inf was stored and written as a non-standard "Infinity"
        if isinstance(val, bool) or not isinstance(val, numbers.Real) or not math.isfinite(val):
            raise InvalidInput(f"importance override {key}={val!r} must be a finite number")
        if key == "role_weight" and val < 0:
            raise InvalidInput(f"importance override role_weight={val} must not be negative")
        if key != "role_weight" and not 0.0 <= val <= 1.0:
            raise InvalidInput(f"importance override {key}={val} outside [0, 1]")
        axes[key] = float(val)
    combined = axes["role_weight"] * axes["utility"] * (
        cfg.w_importance * axes["importance"] + cfg.w_surprise * axes["surprise"] + cfg.w_emotion * axes["emotion"]
    )
    return ImportanceScore(combined=round(combined, 6), cues=cues, **axes)


def passes_gate(s: ImportanceScore, threshold: float) -> bool:
    return s.combined >= threshold

