"""How a new statement stands to the value an old fact names, read from the
words alone: kept beside it, denied, wound up, changed by itself, outgrown
(named as a time that is over), rescheduled, replaced on the same weekday,
moved within the same thing or to a time slot of it.

``updates.decide`` asks these once it knows which fact a statement is
about; each is a reading of the language with tests of its own
(``tests/test_statements_updates.py``). Pure: two readings in, a yes or no
(or the word that did it) out.
"""
from __future__ import annotations

import re

from .statements import CLAUSE_BREAK, Reading
from .tokenize import has_hangul


def overlap(new: frozenset[str], old: frozenset[str]) -> frozenset[str]:
    """New tokens that match an old one; Hangul compounds match by containment
    ("채식" ~ "채식주의자"), English stems only exactly ("art" is not in "start")."""
    return frozenset(n for n in new if n in old or any(
        min(len(n), len(o)) >= 2 and (n in o or o in n) and has_hangul(n) and has_hangul(o) for o in old))


# Korean light verbs: 영어 잘해 and 중국어 했었는데 share 하, not a topic
LIGHT_VERBS = frozenset("하 되 있 없 이 보 주".split())


# "..., keeping the sapphire for travel", "the accord stays my daily", "갤럭시는 그대로 쓰고": a value said to stay
_KEPT = re.compile(r"\b(keep|keeps|keeping|kept|stays?|staying|remains?)\b|그대로|유지", re.I)


def value_words(old: Reading) -> list[str]:
    """The words that name an old fact's value: its content but its verb."""
    return [t for t in old.content if t != old.predicate and len(t) >= 2]


def in_clause(word: str, clause: str) -> bool:
    """A content token in a clause: Hangul by containment (particles attach to
    it), an English stem only at the start of a word ("art" is not in "start")."""
    return word in clause if has_hangul(word) else re.search(rf"\b{re.escape(word)}", clause) is not None


def kept(new: Reading, old: Reading) -> bool:
    """A clause of the new statement says a thing the old fact names stays:
    what the statement brings is one more, beside it. The old fact's own
    words, not its predicate, must be in that clause."""
    words = value_words(old)
    for clause in CLAUSE_BREAK.split(new.text.lower()):
        if clause and _KEPT.search(clause) and any(in_clause(w, clause) for w in words):
            return True
        # the thing that stays is the clause's subject: "checking stays at wells", a noun of the old fact (even where
        # the rough parse took it for the verb), not its verb as a gerund ("running stays at 5k" after "I run")
        if clause and any(re.search(rf"\b{re.escape(w)}\w*\s+(stays?|remains?|is staying)\b", clause)
                          for w in old.content if not has_hangul(w) and len(w) >= 3
                          and re.search(rf"\b(my|our|the|a|an)\s+{re.escape(w)}", old.text.lower())):
            return True
    return False


def denied(new: Reading, old: Reading) -> bool:
    """A clause that denies (a verb's negation, no ending cue of its own) names
    the old fact twice over: "쿠팡 알바 안 나가요" after "주말마다 쿠팡 물류센터 알바
    뛰어요", "연세치과는 넘 멀어서 안 가요". Not "no sugar no milk, just black
    coffee" (the denial and the old words are in different clauses), nor "절대
    못 끊어" (a denied ending restates)."""
    words = value_words(old)
    return any(sum(in_clause(w, clause) for w in words) >= 2 for clause in new.denials)


def denies_own_verb(new: Reading, old: Reading) -> bool:
    """A clause denies the old fact's own verb ("헬스장 바뀌어서 이제 안 가", "don't go there anymore"),
    or the statement's verb is the fact's (Kiwi's stem: "이제 안 다녀" after "헬스장 다녀"): the user
    stopped, whatever else changed. The caller asks only of a statement that denies something."""
    verb = old.predicate
    if not verb:
        return False
    if has_hangul(verb):
        pattern = rf"(안|못)\s*{re.escape(verb)}|{re.escape(verb)}[가-힣]*\s*(않|못\s*하)"
    else:
        pattern = rf"(\b(not|never|no longer|dont|doesnt|cant|wont|didnt)|n't|n’t)\s+(\w+\s+)?{re.escape(verb)}"
    return new.predicate == verb or any(re.search(pattern, clause) for clause in new.denials)


def wound_up(new: Reading, old: Reading) -> bool:
    """정리 (to wind up) said of a thing the old fact names: "스마트스토어 정리하고"
    after "퇴근하고 스마트스토어 운영해" ends it; alone, 정리 is tidying ("방 정리했어")."""
    if "정리" not in new.text:
        return False
    words = [w for w in value_words(old) if has_hangul(w)]
    # its object (no particle, or 을/를/은/는/도), in a form that is done: not "책 정리 봉사", not "블로그에 정리해"
    return any(re.search(rf"{re.escape(w)}(을|를|은|는|도)?\s*((싹|다|전부)\s*)?정리(하고|했|함|해\s*버)", new.text) for w in words)


# a verb a thing does to itself ("ymca switched to 5am openings", "스포애니 24시간으로 바뀌었어")
_EN_ITSELF = re.compile(r"^\W*(?:the |my |our )?([\w'-]+)(?: [\w'-]+)?\s+(?:just |finally |now )?(switched|changed|moved|raised|lowered|"
                        r"added|extended|cut|updated|renovated|remodeled|started|upgraded|expanded|reduced|increased)\b", re.I)
_KO_ITSELF = re.compile(r"(바뀌었|바뀜|바뀌어|바꼈|변경됐|변경되었|달라졌|늘었|줄었|올랐|내렸)")
_KO_BY_ME = re.compile(r"(바꿨|바꿔|바꿈|갈아|옮겼|옮김|넘어)")


def itself_changed(new: Reading, old: Reading) -> str | None:
    """The old fact's own thing opens the sentence and does the changing: the
    gym changed its hours, the user still goes there. Returns that word."""
    words = value_words(old)
    if has_hangul(new.text):
        first = new.text.split()[0] if new.text.split() else ""
        hit = next((w for w in words if w in first), None)
        return hit if hit and _KO_ITSELF.search(new.text) and not _KO_BY_ME.search(new.text) else None
    m = _EN_ITSELF.match(new.text)
    if m is None:
        return None
    return next((w for w in words if m.group(1).lower().startswith(w)), None)


_EN_FUNCTION = frozenset("the and for with from that this was were are has have had but not you your our its".split())


def outgrown(new: Reading, old: Reading) -> bool:
    """The old value is named as a time that is over, to compare the present
    with: "키토 때보다 훨씬 덜 괴로움" (than when on keto), "아반떼 탈 때랑 완전
    다름", "a better fade than tony ever gave me", "than when I was at X".
    ("work was super busy" is no such comparison: a past tense alone is not.)"""
    text = new.text.lower()
    if "때" not in text and "than" not in text:  # called per known fact on the consolidation path: no pattern to build
        return False
    words = value_words(old)
    words += re.findall(r"[가-힣]{2,}", old.text)  # Kiwi can split a name it does not know ("키토" -> 키/토)
    words += [w for w in re.findall(r"[a-z][a-z0-9-]{2,}", old.text.lower()) if w not in _EN_FUNCTION]  # "tony", not its stem
    for w in words:
        if has_hangul(w):
            # not "필라테스 시작할 때보다": compared with when it began, it goes on
            m = re.search(rf"{re.escape(w)}[가-힣]*(?:\s+([가-힣]+))?\s*때(?:보다|랑|와|하고|에\s*비하)", text)
            if m and not (m.group(1) and re.match(r"(시작|처음|입사|등록|가입|다니기|배우기)", m.group(1))):
                return True
        elif re.search(rf"\bthan\s+{re.escape(w)}\w*\s+ever\b|\bthan\s+(?:when\s+i\s+(?:was|had)|back\s+(?:at|with|when))\b[^.,;!?]*\b{re.escape(w)}", text):
            return True
    return False


_EN_DAYS = r"mon(day)?s?|tues?(day)?s?|wed(nesday)?s?|thu(rs)?(day)?s?|fri(day)?s?|sat(urday)?s?|sun(day)?s?|mornings?|evenings?|nights?|afternoons?|weekends?|weekdays?"
_SCHEDULE = {False: re.compile(rf"\b({_EN_DAYS}|\d{{1,2}}(:\d\d)?\s*(am|pm)|\d+\s*(x|times) a week)\b", re.I),
             True: re.compile(r"(?<![가-힣])([월화수목금토일]{2,3}(?![가-힣])|[월화수목금토일]요일|아침|저녁|오전|오후|새벽|주말|평일|\d{1,2}\s*시(?!간)|주\s*\d\s*회)")}


def rescheduled(new: Reading, old: Reading) -> bool:
    """The same activity at other days or hours ("필라테스 월수 아침반" after
    "필라테스 화목 저녁 7시 반"; "spanish on wednesdays" after "my spanish class is
    monday nights"): a schedule is one value at a time. Needs a shared word
    besides the schedule, and no cue of one more ("also on fridays")."""
    ko = has_hangul(new.text)
    when_new = {m.group(0).lower().rstrip("s") for m in _SCHEDULE[ko].finditer(new.text)}
    when_old = {m.group(0).lower().rstrip("s") for m in _SCHEDULE[ko].finditer(old.text)}
    return bool(when_new and when_old and not when_new & when_old and not new.additive and overlap(new.content, old.content))


# a move inside something that stays: "사업부 안에서 다른 파트로 옮겼어요", "same team at microsoft"
WITHIN = re.compile(r"((회사|사내|팀|부서|사업부|본부|학교|센터|지점)\s*(안|내|내부)에서|같은\s*(회사|팀|부서|건물|학교|센터|지점)"
                     r"|\bwithin (the|my|our) (company|team|department|org|organi[sz]ation|division|school)\b"
                     r"|\bsame (company|team|department|building|school|gym|office|branch)\b)", re.I)


# a slot of a place's timetable ("새벽반", "the early-morning lane", "the 6am class"), not when something happened
_TIME_SLOT = {False: re.compile(r"\b(early[- ]morning|morning|evening|night|lunchtime|weekend|weekday|\d{1,2}\s*(am|pm))\s+"
                               r"(lane|class|slot|shift|session|group|team|league|crew)\b", re.I),
              True: re.compile(r"(아침|저녁|새벽|오전|오후|주말|평일|점심|[월화수목금토일]{2,3})\s*(반|타임|부|수업|클래스|레인)(?=으로|로|에서|에|을|를|이|은|는|도|[^가-힣]|$)")}


_WEEKDAY = {False: re.compile(r"\b(mon|tue|wed|thu|fri|sat|sun)(?:day|s?day|nesday|rsday|urday|s|rs)?s?\b", re.I),
            True: re.compile(r"([월화수목금토일])요일")}
_DAYTIME = {False: re.compile(r"\b(morning|afternoon|evening|night)s?\b", re.I), True: re.compile(r"(아침|오전|점심|오후|저녁|밤|새벽)")}


def same_weekday(new: Reading, old: Reading) -> bool:
    """Another place for the same activity on the same weekday ("토요일
    아침엔 무료급식소에서 배식 봉사해" after "토요일마다 유기견 보호소 봉사 가"): a
    slot of the week holds one value, unless "also" or the hours differ; the
    activity must be named in both (a word besides the day)."""
    ko = has_hangul(new.text)
    days = {m.group(1).lower() for m in _WEEKDAY[ko].finditer(new.text)}
    if not (days and days & {m.group(1).lower() for m in _WEEKDAY[ko].finditer(old.text)}) or new.additive:
        return False
    hours_new = {m.group(1).lower() for m in _DAYTIME[ko].finditer(new.text)}
    hours_old = {m.group(1).lower() for m in _DAYTIME[ko].finditer(old.text)}
    if hours_new and hours_old and not hours_new & hours_old:  # Saturday mornings and Saturday evenings both hold
        return False
    days_words = {t for t in new.content if _WEEKDAY[ko].search(t) or re.match(r"(mon|tue|wed|thu|fri|sat|sun|[월화수목금토일]요일)", t)}
    return bool(overlap(new.content, old.content) - days_words - set(LIGHT_VERBS))  # the activity may be the verb


def to_a_time(new: Reading, old: Reading) -> bool:
    """A move to a time slot of the same place ("체육센터 새벽반으로 옮겼어요" after
    "구민체육센터에서 수영해요"): the old fact named no time, so the place stays;
    another aspect. (When it named one, ``rescheduled`` replaces it.)"""
    ko = has_hangul(new.text)
    return bool(_TIME_SLOT[ko].search(new.text) and not _SCHEDULE[ko].search(old.text)
                and overlap(new.content, old.content) - {old.predicate})


__all__ = ["LIGHT_VERBS", "WITHIN", "denied", "in_clause", "itself_changed", "kept", "outgrown", "overlap", "rescheduled",
           "same_weekday", "to_a_time", "value_words", "wound_up"]
