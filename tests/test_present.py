"""A question about now is answered by the latest word on it (recall/present.py),
and the moods and endings that decide whether a statement changes anything.

Sentences are written for these tests, not taken from the natural suites."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from naia_memory.cognition.statements import morphemes, read
from naia_memory.recall.present import NewerFirst, asks_about_now, newer_first


@pytest.mark.parametrize("query,now", [
    ("what's my gym these days?", True),
    ("do I still have the Subaru?", True),
    ("which band am I in?", True),
    ("what did I drive before the Subaru?", False),
    ("where was I working last year?", False),
    ("what does Priya do for work?", False),  # about someone by name, not the one asking
    ("요즘 나 어디 헬스장 다녀?", True),
    ("내가 타는 차 뭐더라?", True),
    ("작년에 다니던 회사 어디였지?", False),
    ("처음 키웠던 강아지 이름이 뭐였더라?", False),
])
def test_which_questions_ask_about_now(tokenizer, query, now):
    assert asks_about_now(query, morphemes(tokenizer, query)) is now


def test_newer_first_is_bounded_by_its_weight():
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    when = {"old": t0, "mid": t0 + timedelta(days=5), "new": t0 + timedelta(days=10)}
    close = newer_first({"old": 1.0, "mid": 0.5, "new": 0.9}, when, 0.2)
    assert close["new"] > close["old"]  # within 20 % of each other: the newer wins
    far = newer_first({"old": 1.0, "new": 0.8}, when, 0.2)
    assert far["old"] > far["new"]  # further apart: relevance stays first
    assert newer_first({"old": 1.0, "new": 0.9}, when, 0.0) == {"old": 1.0, "new": 0.9}
    f = NewerFirst(when, 0.2)
    assert f.factor(t0 + timedelta(days=20)) == pytest.approx(1.2)  # a successor newer than every candidate is capped


def test_newer_first_over_arrays_is_the_same_arithmetic():
    """The recall pipeline scales arrays of POSIX times; the result must be
    the per-datetime factor bit for bit (rankings must not move)."""
    import numpy as np

    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    when = [t0 + timedelta(hours=h * 7.3) for h in range(40)]
    stamps = np.array([t.timestamp() for t in when])
    by_dict = NewerFirst({str(i): t for i, t in enumerate(when)}, 0.2)
    by_array = NewerFirst.of_stamps(stamps, 0.2)
    assert by_array.factors(stamps).tolist() == [by_dict.factor(t) for t in when]
    assert NewerFirst.of_stamps(stamps[:1], 0.2).factors(stamps[:1]).tolist() == [1.0]  # one candidate: nothing to order


@pytest.mark.parametrize("text,kind,plan", [
    ("이직할까 고민 중이야", "hypothetical", False),
    ("그 회사 그만둘 수도 있어", "hypothetical", False),
    ("부산으로 갈지도 몰라", "hypothetical", False),
    ("내년엔 차를 바꿀 거야", "fact", True),
    ("이번 달까지만 다니겠다", "fact", True),
    ("헬스장 등록했어, 살 빼려고", "fact", False),  # a purpose after a completed act is not a plan
    ("당분간 좀 쉬려고", "fact", True),
    ("I wanna learn the cello someday", "hypothetical", False),
    ("I walk to work unless it's snowing", "fact", False),
])
def test_mood_from_the_grammar(tokenizer, text, kind, plan):
    r = read(text, tokenizer)
    assert (r.kind, r.plan) == (kind, plan)


@pytest.mark.parametrize("text", [
    "my bike got stolen outside the library",
    "our old cat died in March",
    "I ditched the gym membership",
    "폰 잃어버렸어",
    "학원은 환불받고 그만뒀어",
])
def test_losing_or_dropping_something_ends_it(tokenizer, text):
    assert read(text, tokenizer).ending


def test_need_is_not_a_past_tense(tokenizer):
    assert not read("I need three espressos to get going", tokenizer).episodic
    assert read("I baked bread yesterday", tokenizer).episodic


def test_the_latest_word_answers_a_question_about_now(make_system, t0, tmp_path):
    """Two statements about the same thing, both current (here: no consolidation,
    as when the update rules miss a change): a question about now gets the
    newer first, by a bounded share (MMR off so scores are relevance)."""
    later = t0 + timedelta(days=60)
    q_now = "where am I a barista these days?"
    ratios = {}
    for present in (True, False):
        m = make_system(path=tmp_path / f"{present}.json", consolidation=False, present=present, mmr=False)
        m.encode(content="I'm a barista at Blue Bottle on Market Street", now=t0)
        m.encode(content="I'm a barista at Sightglass on 7th Street", now=later)
        hits = m.recall(query=q_now, top_k=3, now=later + timedelta(days=1)).hits
        score = {("new" if "Sightglass" in h.content else "old"): h.score for h in hits}
        assert set(score) == {"new", "old"}  # both reachable either way
        ratios[present] = score["new"] / score["old"]
        if present:
            assert "Sightglass" in hits[0].content
    assert ratios[True] == pytest.approx(1.2 * ratios[False], rel=1e-3)  # present_weight 0.2: newest x1.2, oldest x1.0


def test_sentences_split_english_prose_and_keep_korean_afterthoughts(tokenizer):
    assert tokenizer.sentences("I sold the boat. Then I bought a kayak.") == ["I sold the boat.", "Then I bought a kayak."]
    assert tokenizer.sentences("I see Dr. Patel on Fridays") == ["I see Dr. Patel on Fridays"]  # not after an abbreviation
    assert len(tokenizer.sentences("테니스 동호회 나왔어 시간이 안 맞아서")) == 1  # the reason stays with what it explains


@pytest.mark.parametrize("text,personal", [
    ("I switched to a standing desk", True),
    ("swapped my sedan for a hatchback", True),  # chat drops the subject: the speaker's
    ("It made the whole trip worth it", False),
    ("You really found your calling", False),
    ("The concert was amazing", False),
])
def test_whose_state_a_sentence_tells(tokenizer, text, personal):
    assert read(text, tokenizer).personal is personal


def test_a_denied_ending_ends_nothing(tokenizer):
    assert not read("I'd never quit the choir", tokenizer).ending
    assert not read("넷플릭스는 절대 못 끊어", tokenizer).ending
    assert read("I don't sing in the choir anymore", tokenizer).ending
