"""Relative time expressions resolved against when they were said.

"I went to a support group yesterday", said on 8 May 2023, is about 7 May;
"지난달에 이사했어", said in June, is about May. A memory keeps those windows
(``metadata["when"]``, set at encode from the turn's own time), so "What did
Caroline do on May 7, 2023?" can match the turn told a day later, and a
question with its own relative expression ("what did I do last week?") is
resolved against the moment it is asked.

Only expressions with a fixed calendar reading are resolved: day words
(yesterday, 어제, 그저께), named weeks, weekends, months and years relative to
now (last week, 지난주, 지난달, 작년, next month), "N days/weeks/months/years
ago" (N일/주/달/개월/년 전) and a past weekday (last Friday, 지난 금요일).
Vague ones ("recently", "요즘", "a while ago") have no window and are left to
the text match. Windows are UTC, end exclusive, a calendar week starts on
Monday (ISO 8601).
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Callable

from ..cognition.tokenize import has_hangul
from .present import EN_PRESENT

Window = tuple[datetime, datetime]

_NUM_EN = {"one": 1, "a": 1, "an": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "few": 3}
# a range reads as its upper end, as "두 달 전" did inside "한두 달 전" before a number was read whole
_NUM_KO = {"한": 1, "두": 2, "세": 3, "네": 4, "다섯": 5, "여섯": 6, "일곱": 7, "여덟": 8, "아홉": 9, "열": 10, "열한": 11,
           "열두": 12, "한두": 2, "두세": 3, "두어": 2, "서너": 4, "세네": 4, "몇": 3,
           "일": 1, "이": 2, "삼": 3, "사": 4, "오": 5, "육": 6, "칠": 7, "팔": 8, "구": 9, "십": 10}
# native day counts (이틀 two days, 보름 half a month) and 하루 one day
_KO_DAYS = {"하루": 1, "이틀": 2, "사흘": 3, "나흘": 4, "닷새": 5, "엿새": 6, "이레": 7, "열흘": 10, "보름": 15}
_WEEKDAYS_EN = {d: i for i, d in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))}
_WEEKDAYS_KO = {d: i for i, d in enumerate(("월요일", "화요일", "수요일", "목요일", "금요일", "토요일", "일요일"))}


def _day0(t: datetime) -> datetime:
    """Midnight of the speaker's own calendar day, in the speaker's offset (a naive
    time is UTC): "어제" said at 08:30 in Seoul is the day before that Seoul day,
    not before the UTC day, which was still the evening before."""
    t = t if t.tzinfo else t.replace(tzinfo=timezone.utc)
    return t.replace(hour=0, minute=0, second=0, microsecond=0)


def _safe(make, *args) -> "Window | None":
    """A window, or None where it falls outside the calendar ("4500 years ago",
    "December 9999": a crash of encode and recall before)."""
    try:
        return make(*args)
    except (ValueError, OverflowError):
        return None


def _days(start: datetime, n: int) -> Window:
    return start, start + timedelta(days=n)


def _month(y: int, m: int, shift: int = 0, tz=timezone.utc) -> Window:
    idx = y * 12 + (m - 1) + shift
    y0, m0 = divmod(idx, 12)
    y1, m1 = divmod(idx + 1, 12)
    return datetime(y0, m0 + 1, 1, tzinfo=tz), datetime(y1, m1 + 1, 1, tzinfo=tz)


def _year(y: int, tz=timezone.utc) -> Window:
    return datetime(y, 1, 1, tzinfo=tz), datetime(y + 1, 1, 1, tzinfo=tz)


def _week(day: datetime, shift: int) -> Window:
    monday = day - timedelta(days=day.weekday()) + timedelta(weeks=shift)
    return _days(monday, 7)


def _weekend(day: datetime, shift: int) -> Window:
    """-1: the Saturday-Sunday before this week's; 0: this week's; +1: the coming one."""
    saturday = day - timedelta(days=day.weekday()) + timedelta(days=5)
    if shift < 0 or (shift > 0 and day.weekday() >= 5):
        saturday += timedelta(weeks=shift)
    return _days(saturday, 2)


def _past_weekday(day: datetime, wd: int) -> Window:
    back = (day.weekday() - wd) % 7 or 7
    return _days(day - timedelta(days=back), 1)


def _ago(day: datetime, n: int, unit: str, vague: bool = False) -> Window:
    if vague:  # "a few days ago", "몇 주 전": somewhere in the last 2n units
        span = {"day": 1, "week": 7, "month": 30, "year": 365}[unit] * n
        return day - timedelta(days=2 * span), day
    if unit == "day":
        return _days(day - timedelta(days=n), 1)
    if unit == "week":  # "two weeks ago": that week, give or take
        return _days(day - timedelta(days=7 * n + 3), 7)
    if unit == "month":
        return _month(day.year, day.month, -n, day.tzinfo)
    return _year(day.year - n, day.tzinfo)


_UNIT_EN = {"day": "day", "week": "week", "month": "month", "year": "year"}
_UNIT_KO = {"일": "day", "주": "week", "주일": "week", "달": "month", "개월": "month", "년": "year"}

_EN = re.compile(
    r"\b(?:(?P<dby>the\s+day\s+before\s+yesterday)|(?P<yday>yesterday|last\s+night)"
    r"|(?P<today>today|tonight|this\s+(?:morning|afternoon|evening))|(?P<tmr>tomorrow)"
    r"|(?P<srel>last|this|next|past)\s+(?P<season>spring|summer|autumn|fall|winter)"
    r"|(?P<rel>last|this|next|past)\s+(?P<span>week(?:end)?|month|year)"
    r"|(?:(?<!\w)(?<![A-Za-z]-)(?P<n>\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple\s+of|few)\s+(?P<unit>day|week|month|year)s?\s+ago)"
    r"|(?:in\s+(?:about\s+|another\s+)?(?P<fn>a\s+few|a\s+couple\s+of|\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple\s+of|few)"
    r"\s+(?P<funit>day|week|month|year)s?(?!\s+(?:ago|later|before|after|earlier)))"
    r"|(?:(?<!\w)(?<![A-Za-z]-)(?P<fn2>\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple\s+of|few)\s+(?P<funit2>day|week|month|year)s?"
    r"\s+from\s+(?:now|today))"
    r"|(?:last|this\s+past)\s+(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|(?:on\s+)?(?P<lwwd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)\s+(?:of\s+)?last\s+week)\b",
    re.I)
# 주 as a week, not the start of another noun (주문 an order, 주제 a topic, 주소 an address, 주차 parking ...)
_KO_WEEK = r"주(?![문제소차식택유장요사민변위석류목력행최연])"  # 지난주의, 지난주인데, 지난주입니다 are weeks
_KO = re.compile(
    # a season, with the year or the turn that places it (작년 여름, 올 여름, 지난 겨울); before 작년 and 올해 alone
    r"(?<![가-힣])(?P<srel>재작년|작년|지난해|올해|올|내년|지난|저번|이번|다음)\s*(?P<season>봄|여름|가을|겨울)"
    r"|(?P<dby>그저께|그제|엊그제)|(?P<yday>어제|어젯밤)|(?P<today>오늘(?!날))|(?P<dat>내일\s*모레|모레)|(?P<tmr>내일)"
    r"|(?P<lwrel>지난|저번)\s*" + _KO_WEEK + r"\s*(?P<lwwd>월요일|화요일|수요일|목요일|금요일|토요일|일요일)"
    r"|(?P<rel2>지지난|다다음)\s*(?P<span2>주말|" + _KO_WEEK + r"|달)"
    r"|(?P<rel>지난|저번|이번|다음)\s*(?P<span>주말|" + _KO_WEEK + r"|달)"
    r"|(?P<lastmonth>지난달|저번달)|(?P<twoyears>재작년)|(?P<lastyear>작년|지난해)|(?P<thisyear>올해)|(?P<nextyear>내년)"
    r"|(?:(?P<n>(?<![가-힣])(?<!월\s)(?:열한|열두|한두|두세|두어|서너|세네|한|두|세|네|다섯|여섯|일곱|여덟|아홉|열|몇)|(?<!\d)(?<!월)(?<!월\s)\d+)\s*(?P<unit>주일|일|주|달|개월|년)\s*(?:전|前))"
    # 일주일 전, 삼 년 전: a Sino-Korean numeral, only before a week, a month or a year (이 일 is "this matter")
    r"|(?:(?<![가-힣])(?P<sn>일|이|삼|사|오|육|칠|팔|구|십)\s*(?P<sunit>주일|주|개월|년)\s*(?:전|前))"
    r"|(?:(?<![가-힣])(?P<kd>하루|이틀|사흘|나흘|닷새|엿새|이레|열흘|보름)\s*(?:전|前))"
    # ahead: 3일 뒤, 일주일 후, 이틀 있다가 (read only where the sentence is not in the past: "3년 후에 결혼했어"
    # counts from another event)
    r"|(?:(?P<fn>(?<![가-힣])(?<!월\s)(?:열한|열두|한두|두세|두어|서너|세네|한|두|세|네|다섯|여섯|일곱|여덟|아홉|열|몇)|(?<!\d)(?<!월)(?<!월\s)\d+)\s*(?P<funit>주일|일|주|달|개월|년)\s*(?:뒤|후|있다가|있으면))"
    r"|(?:(?<![가-힣])(?P<fsn>일|이|삼|사|오|육|칠|팔|구|십)\s*(?P<fsunit>주일|주|개월|년)\s*(?:뒤|후|있다가|있으면))"
    r"|(?:(?<![가-힣])(?P<fkd>하루|이틀|사흘|나흘|닷새|엿새|이레|열흘|보름)\s*(?:뒤|후|있다가|있으면))"
    r"|(?:지난|저번)\s*(?P<wd>월요일|화요일|수요일|목요일|금요일|토요일|일요일)")


def _span(day: datetime, rel: str, span: str) -> Window:
    shift = {"last": -1, "past": -1, "지난": -1, "저번": -1, "this": 0, "이번": 0, "next": 1, "다음": 1,
             "지지난": -2, "다다음": 2}[rel.lower()]
    span = span.lower()
    if span in ("week", "주"):
        return _week(day, shift)
    if span in ("weekend", "주말"):
        return _weekend(day, shift)
    if span in ("month", "달"):
        return _month(day.year, day.month, shift, day.tzinfo)
    return _year(day.year + shift, day.tzinfo)


# per language: (pattern, numbers, units, weekdays, vague numbers)
_LANGS = (
    (_EN, _NUM_EN, _UNIT_EN, _WEEKDAYS_EN, ("few", "couple of")),
    (_KO, _NUM_KO, _UNIT_KO, _WEEKDAYS_KO, ("몇",)),
)


def _ahead(day: datetime, n: int, unit: str, vague: bool = False) -> Window:
    """``_ago`` mirrored: "in 3 days", "2주 뒤"."""
    if vague:  # "in a few days", "몇 주 뒤": somewhere in the next 2n units
        span = {"day": 1, "week": 7, "month": 30, "year": 365}[unit] * n
        return day, day + timedelta(days=2 * span + 1)
    if unit == "day":
        return _days(day + timedelta(days=n), 1)
    if unit == "week":
        return _days(day + timedelta(days=7 * n - 3), 7)
    if unit == "month":
        return _month(day.year, day.month, n, day.tzinfo)
    return _year(day.year + n, day.tzinfo)


_SEASONS = {"spring": 3, "봄": 3, "summer": 6, "여름": 6, "autumn": 9, "fall": 9, "가을": 9, "winter": 12, "겨울": 12}


def _season(day: datetime, rel: str, season: str) -> Window:
    """Meteorological seasons of the northern hemisphere (the Korean calendar's):
    spring March-May, summer June-August, autumn September-November, winter
    December-February. "last": the latest one already over; "this": the one
    under way, else this year's; "next": the first not yet begun; 작년 / 올해 /
    내년: that calendar year's (its winter the one that begins in its December)."""
    first = _SEASONS[season.lower()]
    rel = rel.lower()

    def span(year: int) -> Window:  # the season that begins in ``year``
        return _month(year, first, 0, day.tzinfo)[0], _month(year, first, 3, day.tzinfo)[0]

    if rel in ("재작년", "작년", "지난해", "올해", "올", "내년"):
        return span(day.year + {"재작년": -2, "작년": -1, "지난해": -1, "올해": 0, "올": 0, "내년": 1}[rel])
    cands = [span(y) for y in range(day.year - 2, day.year + 2)]
    if rel in ("last", "past", "지난", "저번"):
        return [w for w in cands if w[1] <= day][-1]
    if rel in ("next", "다음"):
        return [w for w in cands if w[0] > day][0]
    under_way = [w for w in cands if w[0] <= day < w[1]]  # "this": the one we are in, else this year's
    return under_way[0] if under_way else span(day.year if not (first == 12 and day.month <= 2) else day.year - 1)


def _window(g: dict, day: datetime, nums: dict, units: dict, weekdays: dict, vague: tuple[str, ...]) -> Window | None:
    """The window one match names; Korean-only groups (지난달, 작년 ...) are absent from English matches."""
    if g.get("dby"):
        return _days(day - timedelta(days=2), 1)
    if g.get("yday"):
        return _days(day - timedelta(days=1), 1)
    if g.get("today"):
        return _days(day, 1)
    if g.get("tmr"):
        return _days(day + timedelta(days=1), 1)
    if g.get("dat"):  # 모레, 내일모레: the day after tomorrow
        return _days(day + timedelta(days=2), 1)
    if g.get("lwwd"):  # "지난주 화요일", "on Tuesday last week": that weekday of last week
        monday = day - timedelta(days=day.weekday() + 7)
        return _days(monday + timedelta(days=weekdays[g["lwwd"].lower()]), 1)
    if g.get("season"):
        return _season(day, g["srel"], g["season"])
    if g.get("rel2"):  # 지지난주, 다다음 달: two back, two ahead
        return _span(day, g["rel2"], g["span2"])
    if g.get("rel"):
        return _span(day, g["rel"], g["span"])
    if g.get("twoyears"):
        return _year(day.year - 2, day.tzinfo)
    if g.get("lastmonth"):
        return _month(day.year, day.month, -1, day.tzinfo)
    for key, shift in (("lastyear", -1), ("thisyear", 0), ("nextyear", 1)):
        if g.get(key):
            return _year(day.year + shift, day.tzinfo)
    if g.get("unit"):
        n = re.sub(r"\s+", " ", g["n"].lower())
        return _ago(day, int(n) if n.isdigit() else nums[n], units[g["unit"].lower()], vague=n in vague)
    if g.get("sunit"):
        return _ago(day, nums[g["sn"]], units[g["sunit"]])
    if g.get("kd"):
        return _ago(day, _KO_DAYS[g["kd"]], "day")
    if g.get("fkd"):
        return _ahead(day, _KO_DAYS[g["fkd"]], "day")
    for num, unit in (("fn", "funit"), ("fn2", "funit2"), ("fsn", "fsunit")):
        if g.get(unit):
            n = re.sub(r"^a (?=few|couple)", "", re.sub(r"\s+", " ", g[num].lower()))
            return _ahead(day, int(n) if n.isdigit() else nums[n], units[g[unit].lower()], vague=n in vague)
    if g.get("wd"):
        return _past_weekday(day, weekdays[g["wd"].lower()])
    return None


# tense, for what a bare weekday or "in 3 days" means: English past auxiliaries, common irregular pasts and
# -ed forms; Korean: a syllable closed by ㅆ (했, 갔, 었, 봤, 됐 ...), the past's mark, other than 있 (to be) and
# 겠 (will, might)
_EN_PAST_SAID = re.compile(r"\b(was|were|did|had|been|went|came|got|made|saw|said|told|took|gave|left|met|ate|bought|"
                           r"ago|yesterday)\b", re.I)
_EN_ED = re.compile(r"\b(\w{2,}ed)\b", re.I)
# words that end in -ed and are no past ("I need to ...", "indeed", "a hundred"), from the English lexicon (-eed
# verbs, adjectives in -ed), not from any suite
_NOT_PAST_ED = frozenset("""need feed seed speed bleed breed weed deed greed heed steed indeed proceed succeed exceed
    bed red shed sled embed hundred sacred naked wicked rugged ragged crooked beloved wretched kindred""".split())
# an -ed word after a present "be" or a degree word is an adjective: "I'm so tired", "she's married", "I feel stuck"
_ADJECTIVE_BEFORE = re.compile(r"(\b(am|is|are|feel|feels|seem|seems|get|gets|so|very|really|too|pretty|kinda)"
                               r"|'m|'s|'re)\s+$", re.I)


# a present that looks ahead without an auxiliary: "I need to see the dentist on Friday", "gonna call her on Monday"
_EN_AHEAD = re.compile(r"\b(need|needs|want|wants|have to|has to|got to|gotta|going to|gonna|will|plan to|plans to)\b|'ll\b",
                       re.I)


def told_in_past(text: str) -> bool:
    """Whether ``text`` is told in the past tense (read from its grammar, not its topic)."""
    if _EN_PAST_SAID.search(text):
        return True
    for m in _EN_ED.finditer(text):
        if m.group(1).lower() not in _NOT_PAST_ED and not _ADJECTIVE_BEFORE.search(text[max(0, m.start() - 12):m.start()]):
            return True
    return any(0 <= (o := ord(c) - 0xAC00) < 11172 and o % 28 == 20 and c not in "있겠" for c in text)


def said_as_present(text: str) -> bool:
    """Present tense and no past: Korean without the past's mark, English with
    a present auxiliary ("What am I doing on Friday?", "I have a meeting on
    Monday", "금요일에 뭐 해?"): a weekday said so is the coming one."""
    if told_in_past(text):
        return False
    return has_hangul(text) or EN_PRESENT.search(text) is not None or _EN_AHEAD.search(text) is not None


def relative_windows(text: str, said_at: datetime) -> list[Window]:
    """Windows for the relative time expressions in ``text``, read as said at ``said_at``."""
    day = _day0(said_at)
    out: list[Window] = []
    past = told_in_past(text)
    for pattern, nums, units, weekdays, vague in _LANGS:
        for m in pattern.finditer(text):
            g = m.groupdict()
            if past and any(g.get(u) for u in ("funit", "fsunit", "fkd")):  # "N days from now" counts from now always
                continue  # "3년 후에 결혼했어", "in two days it was over": later than some other moment
            w = _safe(_window, g, day, nums, units, weekdays, vague)
            if w is not None:
                out.append(w)
    out += calendar_windows(text, said_at)
    return list(dict.fromkeys(out))


_MONTHS_EN = {m.lower(): i for i, m in enumerate(("", "January", "February", "March", "April", "May", "June", "July", "August",
                                                   "September", "October", "November", "December")) if m}
# a plan: "next" and "다음" only when they look ahead ("the next day", "그 다음에" tell a story)
_FUTURE = re.compile(r"\b(will|going to|gonna|'ll|plan(ning)? to|plans|expecting|scheduled|booked|(?<!the\s)next|getting|tomorrow)\b"
                     r"|예정|할 거|갈 거|할거|갈거|려고|(?<!그\s)(?<!그)다음|내년|내일", re.I)
_BARE_MONTH = re.compile(r"\b(?:(?P<pre>in|on|by|until|till|since|from|this|last|next)\s+)?(?P<mon>" + "|".join(_MONTHS_EN)
                         + r")\b(?!,?\s+\d{4})(?!\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4})(?P<day>\s+\d{1,2}(?:st|nd|rd|th)?\b)?", re.I)
_STRONG_PRE = ("in", "since", "until", "till", "from", "last", "next")
# "5월", not the month of "2023년 5월" (its year is named) nor "12시"; no leading \s*, which made it quadratic in a run of spaces
_KO_BARE_MONTH = re.compile(r"(?<![\d년])(?<!년\s)(?<!년\s\s)(\d{1,2})\s*월(?!\s*\d)")
_ON_WEEKDAY = re.compile(r"\bon\s+(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b(?!\s+(?:of\s+)?(?:last|next)\s+week)", re.I)
_KO_WEEKDAY = re.compile(r"(?<![지저])(?<!지난 )(?<!저번 )(?<!주 )(?<!주)(월|화|수|목|금|토|일)요일")
_FOR = re.compile(r"\bfor\s+(?:about\s+|almost\s+|over\s+|like\s+|the\s+(?:past|last)\s+)?(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|a few)\s+(day|week|month|year)s?\b", re.I)
# "for N years" holds until now only in a perfect ("I've lived here for 3 years"), not in a story or a plan
# ("been vegan for 6 months now": the auxiliary dropped)
_PERFECT = re.compile(r"\b(have|has|'ve|been|now|so\s+far)\b|\bfor\s+the\s+(?:past|last)\b", re.I)
# "N년째", "N년 됐어"; "-ㄴ 지 N년" ("이사 온 지 2년"): 지 after a space, not the end of 아버지
_KO_FOR = re.compile(r"(\d+)\s*(일|주|개월|달|년)\s*(?:째|됐|되었|넘게|가까이)|(?<=\s)지\s*(\d+)\s*(일|주|개월|달|년)")
# "N년 동안" holds until now in the progressive ("4년 동안 채식하고 있어요"), not in a story ("3년 동안 일했어")
_KO_DURING = re.compile(r"(\d+)\s*(일|주|개월|달|년)\s*동안")
_KO_ONGOING = re.compile(r"고\s*있|는\s*중")
_SINCE_YEAR = re.compile(r"\bsince\s+((?:19|20)\d{2})\b|((?:19|20)\d{2})\s*년\s*부터", re.I)
_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
          "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3}


def _back(day: datetime, n: int, unit: str) -> datetime:
    if unit in ("month", "개월", "달"):
        idx = day.year * 12 + day.month - 1 - n
        return day.replace(year=idx // 12, month=idx % 12 + 1, day=1)
    days = {"day": 1, "일": 1, "week": 7, "주": 7, "year": 365, "년": 365}[unit] * n
    return day - timedelta(days=days)


def calendar_windows(text: str, said_at: datetime) -> list[Window]:
    """Calendar words that need the moment of speaking: a month without a year
    ("in June": the coming June in a plan, else the last one), "on Friday"
    (the coming one in a plan, else the last), and how long something has
    held ("for 8 months", "6개월째", "since 2019": from then until now)."""
    day = _day0(said_at)
    ahead = _FUTURE.search(text) is not None
    out: list[Window] = []

    def month(m: int) -> None:
        y = day.year
        if ahead and m < day.month:
            y += 1
        elif not ahead and m > day.month:
            y -= 1
        w = _safe(_month, y, m, 0, day.tzinfo)
        if w is not None:
            out.append(w)

    for m in _BARE_MONTH.finditer(text):
        word, pre = m.group("mon"), (m.group("pre") or "").lower()
        # "may" and "march" are also a modal and a verb ("this may be", "I march"): a month when a preposition
        # says so, or written as a name with a word or a day before it ("this May", "May 7th")
        if word.lower() in ("may", "march") and pre not in _STRONG_PRE and not (word[0].isupper() and (pre or m.group("day"))):
            continue
        month(_MONTHS_EN[word.lower()])
    for m in _KO_BARE_MONTH.finditer(text):
        if 1 <= int(m.group(1)) <= 12:
            month(int(m.group(1)))
    weekdays = [(_WEEKDAYS_EN[m.group(1).lower()]) for m in _ON_WEEKDAY.finditer(text)]
    weekdays += [("월화수목금토일").index(m.group(1)) for m in _KO_WEEKDAY.finditer(text)]
    ahead_wd = ahead or said_as_present(text)
    def add(make: Callable[[], Window]) -> None:  # off the calendar ("on Friday" said in 9999, 5,000 digits): none
        w = _safe(make)
        if w is not None and w[0] < w[1]:  # ("since 2019" said before 2019 names no time)
            out.append(w)

    for wd in weekdays:
        if ahead_wd:
            fwd = (wd - day.weekday()) % 7 or 7
            add(lambda fwd=fwd: _days(day + timedelta(days=fwd), 1))
        else:
            add(lambda wd=wd: _past_weekday(day, wd))

    def held(n: str, unit: str) -> None:  # from N units back until now
        add(lambda: (_back(day, int(n) if n.isdigit() else _WORDS[n], unit), day + timedelta(days=1)))

    if _PERFECT.search(text) and not ahead:
        for m in _FOR.finditer(text):
            held(m.group(1).lower(), m.group(2).lower())
    if not ahead:
        for m in _KO_FOR.finditer(text):
            n, unit = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            held(n, unit)
        if _KO_ONGOING.search(text):
            for m in _KO_DURING.finditer(text):
                held(m.group(1), m.group(2))
    for m in _SINCE_YEAR.finditer(text):
        add(lambda m=m: (datetime(int(m.group(1) or m.group(2)), 1, 1, tzinfo=day.tzinfo), day + timedelta(days=1)))
    return out


def overlaps(a: Window, b: Window) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def to_json(windows: list[Window]) -> list[list[str]]:
    return [[a.isoformat(), b.isoformat()] for a, b in windows]


def from_json(rows) -> list[Window]:
    return [(datetime.fromisoformat(a), datetime.fromisoformat(b)) for a, b in rows or ()]
