"""Dates a question names, as time windows to match memories against.

"What did Maria donate in December 2023?", "Who did Maria have dinner with
on May 3, 2023?", "2023년 5월에 뭐 했어?": the memory that answers was
stored during that window or shortly after it (people tell of an event in
the days that follow: "yesterday I had dinner with ..."), so the window
runs from the named day, month or year to ``grace`` days after its end.
Relative expressions ("last week", "지난달") are read by
``relative_time`` against the moment they were said: for a question, when it
is asked; for a memory, when it was stored (kept in ``metadata["when"]``, see
``event_windows``).
"""
from __future__ import annotations

import calendar
import re
from datetime import datetime, timedelta, timezone

MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
MONTHS.update({m.lower(): i for i, m in enumerate(calendar.month_abbr) if m})
_MON = "|".join(sorted(MONTHS, key=len, reverse=True))
_EN_MDY = re.compile(rf"\b({_MON})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)  # May 3, 2023
_EN_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MON})\.?,?\s+(\d{{4}})\b", re.I)  # 3 May, 2023
_EN_MY = re.compile(rf"\b({_MON})\.?,?\s+(\d{{4}})\b", re.I)  # December 2023
_KO_YMD = re.compile(r"(\d{4})\s*년\s*(\d{1,2})\s*월(?:\s*(\d{1,2})\s*일)?")
# a year, not an amount: "2000원", "2000 dollars", "2000 meters" name no year
_YEAR = re.compile(r"(?<![\d$₩€£¥])((?:19|20)\d{2})(?!\d)(?![,.]\d)(?!\s*(?:원|달러|엔|위안|유로|명|개|번|미터|킬로|칼로리|걸음|보|점|%"
                   r"|dollars?\b|bucks\b|won\b|yen\b|euros?\b|pounds?\b|meters?\b|metres?\b|km\b|kg\b|calories\b|kcal\b"
                   r"|steps\b|points\b|people\b|times\b|words\b|feet\b|ft\b|miles?\b|mg\b|ml\b|pages?\b))", re.I)

Window = tuple[datetime, datetime]


def _day(y: int, m: int, d: int, tz=timezone.utc) -> Window | None:
    try:
        start = datetime(y, m, d, tzinfo=tz)
        return start, start + timedelta(days=1)
    except (ValueError, OverflowError):
        return None


def _month(y: int, m: int, tz=timezone.utc) -> Window | None:
    try:  # "December 9999", "0000년 5월": no window, not a crash
        return datetime(y, m, 1, tzinfo=tz), datetime(y + (m == 12), m % 12 + 1, 1, tzinfo=tz)
    except (ValueError, OverflowError):
        return None


def named_windows(query: str, grace_days: float = 7.0, tz=timezone.utc) -> list[Window]:
    """Time windows (end exclusive, grace added) for the dates a query names."""
    return [(a, b + timedelta(days=grace_days)) for a, b in date_windows(query, tz)]


def date_windows(query: str, tz=timezone.utc) -> list[Window]:
    """Time windows (end exclusive) for the absolute dates a text names, as
    calendar days of ``tz`` (the speaker's offset; UTC when none is known)."""
    out: list[Window] = []
    taken: list[tuple[int, int]] = []

    def add(span: tuple[int, int], w: Window | None) -> None:
        if w is None or any(a <= span[0] < b or a < span[1] <= b for a, b in taken):
            return
        taken.append(span)
        out.append(w)

    for m in _EN_MDY.finditer(query):
        add(m.span(), _day(int(m.group(3)), MONTHS[m.group(1).lower()], int(m.group(2)), tz))
    for m in _EN_DMY.finditer(query):
        add(m.span(), _day(int(m.group(3)), MONTHS[m.group(2).lower()], int(m.group(1)), tz))
    for m in _KO_YMD.finditer(query):
        y, mo = int(m.group(1)), int(m.group(2))
        if 1 <= mo <= 12:
            add(m.span(), _day(y, mo, int(m.group(3)), tz) if m.group(3) else _month(y, mo, tz))
    for m in _EN_MY.finditer(query):
        add(m.span(), _month(int(m.group(2)), MONTHS[m.group(1).lower()], tz))
    for m in _YEAR.finditer(query):
        y = int(m.group(1))
        add(m.span(), (datetime(y, 1, 1, tzinfo=tz), datetime(y + 1, 1, 1, tzinfo=tz)))
    return out


def in_windows(ts: datetime, windows: list[Window]) -> bool:
    return any(a <= ts < b for a, b in windows)


def event_windows(text: str, said_at: datetime) -> list[Window]:
    """When what a text tells happened: the dates it names and its relative
    expressions resolved against ``said_at`` (kept with a memory at encode)."""
    from .relative_time import relative_windows

    tz = said_at.tzinfo or timezone.utc
    return list(dict.fromkeys(date_windows(text, tz) + relative_windows(text, said_at)))


def matches_time(told_at: datetime, events: list[Window], asked: list[Window], grace_days: float) -> bool:
    """A memory fits the windows a question names when it was told during one
    (or within ``grace_days`` after it), or tells of an event inside one."""
    if in_windows(told_at, [(a, b + timedelta(days=grace_days)) for a, b in asked]):
        return True
    return any(e[0] < q[1] and q[0] < e[1] for e in events for q in asked)
