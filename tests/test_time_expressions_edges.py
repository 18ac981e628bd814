"""Time expressions at their edges: bugs a review found in session 33, each
test failing on the code before it. A year off the calendar crashed encode
and recall; day words resolved on the UTC day, not the speaker's; "2023년
5월" also named a May of the wrong year; Korean words matched inside longer
ones (재작년, 지지난주, 주문, 오늘날); "지난주 화요일" also named this week's
Tuesday; "this may be", "I march", "2000원" named a month or a year; "the
next day" read a story as a plan; "for N years" in a story or a plan was a
span until now; "before ... tomorrow" was a question about the past; a run
of spaces made a pattern quadratic."""
from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from naia_memory.recall.present import asks_about_past
from naia_memory.recall.relative_time import relative_windows
from naia_memory.recall.when import date_windows, event_windows

KST = timezone(timedelta(hours=9))
WED = datetime(2025, 5, 14, 12, tzinfo=timezone.utc)  # a Wednesday


def days(ws) -> list[tuple[str, str]]:
    return sorted((a.date().isoformat(), b.date().isoformat()) for a, b in ws)


@pytest.mark.parametrize("text", ["the pyramids were built 4500 years ago", "피라미드는 4500년 전에 지어졌대", "30000 months ago",
                                  "1000000 days ago", "it has stood for 5000 years", "December 9999", "0000년 5월"])
def test_a_time_off_the_calendar_names_no_window_and_crashes_nothing(text):
    assert event_windows(text, WED) == [] or all(a < b for a, b in event_windows(text, WED))


def test_day_words_resolve_on_the_speakers_own_day():
    said = datetime(2023, 5, 9, 8, 30, tzinfo=KST)  # 8 May, 23:30 UTC
    assert days(relative_windows("어제 부산 갔어", said)) == [("2023-05-08", "2023-05-09")]
    assert days(relative_windows("작년에 부산 갔어", datetime(2024, 1, 1, 8, tzinfo=KST))) == [("2023-01-01", "2024-01-01")]


@pytest.mark.parametrize("text, want", [
    ("2023년 5월에 부산으로 이사했어", [("2023-05-01", "2023-06-01")]),
    ("재작년에 이사했어", [("2023-01-01", "2024-01-01")]),
    ("지지난주에 만났어", [("2025-04-28", "2025-05-05")]),
    ("내일모레 만나", [("2025-05-16", "2025-05-17")]),
    ("지난주 화요일에 병원 갔어", [("2025-05-06", "2025-05-07")]),
    ("I went to the clinic on Tuesday last week", [("2025-05-06", "2025-05-07")]),
    ("지난 주문 내역 다시 보여줘", []), ("다음 주제로 넘어가자", []), ("오늘날 사람들은 바빠", []),
    ("this may be a dumb question", []), ("I march in the parade", []), ("커피 2000원이야", []),
    ("I paid 2000 dollars for it", []),
    ("In December, 2023 I moved to Busan", [("2023-12-01", "2024-01-01")]),
    ("I was married for 10 years before the divorce", []),
    ("아버지 2년 전에 돌아가셨어", [("2023-01-01", "2024-01-01")]),
])
def test_what_a_text_names_and_what_it_does_not(text, want):
    assert days(event_windows(text, WED)) == want


def test_the_next_day_in_a_story_is_not_a_plan():
    said = datetime(2025, 3, 10, tzinfo=timezone.utc)
    assert days(relative_windows("In June we hiked Jirisan, and the next day it rained", said)) == [("2024-06-01", "2024-07-01")]
    assert days(relative_windows("I've lived here for 3 years", said))[0][1] == "2025-03-11"  # a perfect: until now


@pytest.mark.parametrize("q", ["What should I do before my interview tomorrow?", "내일 출근 전에 뭐 챙겨야 돼?"])
def test_a_question_about_what_is_ahead_is_not_about_the_past(q):
    assert not asks_about_past(q)


def test_a_run_of_spaces_is_read_in_linear_time():
    t = time.perf_counter()
    event_windows(" " * 40_000 + "5월", WED)
    assert time.perf_counter() - t < 2.0  # 13 s before (quadratic); milliseconds now
    assert days(date_windows("2023년 5월 7일", KST)) == [("2023-05-07", "2023-05-08")]


@pytest.mark.parametrize("text", ["지난주의 회의 어땠어?", "지난주인데 벌써 잊었어", "지난주입니다"])
def test_a_week_with_a_particle_or_the_copula_is_still_a_week(text):
    assert days(relative_windows(text, WED)) == [("2025-05-05", "2025-05-12")]


@pytest.mark.parametrize("q", ["Where did Will work before he moved?", "What were my plans last year?"])
def test_a_name_or_plans_said_of_the_past_are_about_the_past(q):
    assert asks_about_past(q)


# ---- session 34: the gaps the closing notes listed (native day counts, Sino-Korean numerals, times ahead,
# a weekday said in the present). WED is Wednesday 14 May 2025.
@pytest.mark.parametrize("text, want", [
    ("일주일 전에 부산 갔어", [("2025-05-04", "2025-05-11")]),  # as "one week ago"
    ("이틀 전에 병원 갔어", [("2025-05-12", "2025-05-13")]),
    ("보름 전에 이사했어", [("2025-04-29", "2025-04-30")]),
    ("삼 년 전에 결혼했어", [("2022-01-01", "2023-01-01")]),
    ("3일 뒤에 이사 가", [("2025-05-17", "2025-05-18")]),
    ("이틀 있다가 출장 가", [("2025-05-16", "2025-05-17")]),
    ("한 달 후에 졸업해", [("2025-06-01", "2025-07-01")]),
    ("I'm flying to Tokyo in 3 days", [("2025-05-17", "2025-05-18")]),
    ("The lease ends two weeks from now", [("2025-05-25", "2025-06-01")]),
    ("I'll know in a few weeks", [("2025-05-14", "2025-06-26")]),
])
def test_counts_back_and_ahead(text, want):
    assert days(event_windows(text, WED)) == want


@pytest.mark.parametrize("text", [
    "3년 후에 결혼했어",  # later than some other moment, in a story
    "We finished the move in two days",
    "The doctor called three days later",
    "이 일 후에 만나자",  # 이 일: "this matter", not two days
    "같이 주 전체를 돌았어",  # 이 inside 같이 is no numeral
])
def test_what_is_not_a_count_from_now(text):
    assert days(event_windows(text, WED)) == []


@pytest.mark.parametrize("text, want", [
    ("What am I doing on Friday?", ("2025-05-16", "2025-05-17")),  # the coming Friday
    ("I have a dentist appointment on Monday", ("2025-05-19", "2025-05-20")),
    ("금요일에 뭐 해?", ("2025-05-16", "2025-05-17")),
    ("What did I do on Friday?", ("2025-05-09", "2025-05-10")),  # the last one
    ("금요일에 친구 만났어", ("2025-05-09", "2025-05-10")),
    ("금요일에 영화 봤어", ("2025-05-09", "2025-05-10")),  # 봤: the past folded into the syllable
    ("I visited my mom on Sunday", ("2025-05-11", "2025-05-12")),
    # session 35: an -ed word that is no past ("need"), or an adjective after "be" or "so" ("I'm so tired")
    ("I need to see the dentist on Friday", ("2025-05-16", "2025-05-17")),
    ("I'm so tired, I have a meeting on Monday", ("2025-05-19", "2025-05-20")),
    ("I'm excited about the trip on Friday", ("2025-05-16", "2025-05-17")),
    ("gonna call her on Monday", ("2025-05-19", "2025-05-20")),
    ("I was so tired on Monday", ("2025-05-12", "2025-05-13")),  # a past auxiliary still says past
    ("I'm tired, I walked home on Monday", ("2025-05-12", "2025-05-13")),  # and so does a past verb beside the adjective
])
def test_a_weekday_is_the_coming_one_in_the_present_and_the_last_in_the_past(text, want):
    assert days(event_windows(text, WED)) == [want]


@pytest.mark.parametrize("text, said, want", [
    ("last summer we went camping", WED, ("2024-06-01", "2024-09-01")),
    ("last summer we went camping", datetime(2025, 7, 14, tzinfo=timezone.utc), ("2024-06-01", "2024-09-01")),  # in summer: the one before
    ("last summer we went camping", datetime(2025, 9, 14, tzinfo=timezone.utc), ("2025-06-01", "2025-09-01")),  # just over
    ("this summer I'm going to Jeju", WED, ("2025-06-01", "2025-09-01")),
    ("this winter", datetime(2025, 1, 14, tzinfo=timezone.utc), ("2024-12-01", "2025-03-01")),  # the one under way
    ("next winter", WED, ("2025-12-01", "2026-03-01")),
    ("작년 여름에 제주도 갔어", WED, ("2024-06-01", "2024-09-01")),
    ("작년 여름방학에 알바했어", WED, ("2024-06-01", "2024-09-01")),
    ("올 여름에 이사해", WED, ("2025-06-01", "2025-09-01")),
    ("지난 겨울에 스키 탔어", WED, ("2024-12-01", "2025-03-01")),
    ("내년 봄에 결혼해", WED, ("2026-03-01", "2026-06-01")),
])
def test_a_season_is_the_northern_hemispheres(text, said, want):
    assert days(relative_windows(text, said)) == [want]


# session 40's review: the calendar words (how long something held, a weekday, "since 2019") were outside the guard
@pytest.mark.parametrize("text", ["I have lived here for " + "9" * 5000 + " years", "서울 산 지 " + "9" * 5000 + "년째야",
                                  "채식한 지 " + "9" * 5000 + "년 동안 하고 있어요", "I have a dentist appointment on Friday",
                                  "서울 산 지 3년째야", "I have lived here since 2019", "I went hiking on Monday"])
@pytest.mark.parametrize("said", [WED, datetime(9999, 12, 31, tzinfo=timezone.utc), datetime(1, 1, 1, tzinfo=timezone.utc)])
def test_calendar_words_off_the_calendar_name_nothing_instead_of_crashing(text, said):
    assert all(a < b for a, b in relative_windows(text, said))


@pytest.mark.parametrize("text,expected", [
    ("I met my wife twenty-five years ago", []),  # not "five years ago"
    ("We moved here twenty-one days ago", []),
    ("열두 달 전에 이직했어", [("2024-05-01", "2024-06-01")]),  # twelve months, not two
    ("열한 달 전에 이사했어", [("2024-06-01", "2024-07-01")]),
    ("3월 1일 전까지 보고서 내야 해", []),  # before the first of March, not a day ago
    ("3월 12일 전까지 보고서 내야 해", []),  # nor "2일 전" inside the date
    ("3월 15일 후에 만나", []),
    ("5월 두 달 전에", [("2025-05-01", "2025-06-01")]),  # the month it names, not two months back
    ("두 달 전에 이사했어", [("2025-03-01", "2025-04-01")]),
    ("five years ago I lived in Busan", [("2020-01-01", "2021-01-01")]),
])
def test_a_number_is_read_whole_or_not_at_all(text, expected):
    assert days(relative_windows(text, WED)) == expected


@pytest.mark.parametrize("text,same_as", [
    ("한두 달 전에 이사했어", "두 달 전에 이사했어"),  # a range reads as its upper end, as before
    ("두세 달 뒤에 이사할 거야", "세 달 뒤에 이사할 거야"),
    ("About 2-3 weeks ago we met", "About 3 weeks ago we met"),
    ("It happened 1-2 years ago.", "It happened 2 years ago."),
    ("약2년 전에 시작했어", "약 2년 전에 시작했어"),  # a digit right after a word is still a number
])
def test_ranges_and_numbers_after_a_word_are_read_as_before(text, same_as):
    assert days(relative_windows(text, WED)) == days(relative_windows(same_as, WED)) != []
