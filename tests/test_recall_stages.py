"""The recall stages as pure functions: each one's promise, on small inputs."""
from __future__ import annotations

import pytest

from naia_memory.cognition.tokenize import WhitespaceTokenizer
from naia_memory.recall.adjust import AdjustWeights, Signals, adjustment, use_signal
from naia_memory.recall.collapse import collapse, collapse_groups
from naia_memory.recall.context import carried_context, index_text
from naia_memory.recall.fusion import fuse, scale
from naia_memory.recall.profile import is_profile_request, profile_score
from naia_memory.recall.signals import asks, named_attributes, named_speakers


def test_relative_fusion_keeps_score_gaps_and_is_bounded():
    vec = [("a", 0.86), ("b", 0.85), ("c", 0.70)]
    bm = [("b", 4.0), ("c", 1.0)]
    rel = fuse({"vector": vec, "bm25": bm}, {"vector": 1.0, "bm25": 1.0})
    assert all(0.0 <= s <= 1.0 for s in rel.values())
    # b: near the best cosine and the best BM25 -> first; c far below on both
    assert max(rel, key=rel.get) == "b" and rel["c"] < rel["a"] < rel["b"]


def test_cosine_span_floor_keeps_near_ties_near():
    # two memories 0.008 apart in a tiny store are not "1 and 0"
    s = scale([("old", 0.842), ("new", 0.834)], 0.05)
    assert s["old"] == 1.0 and s["new"] == pytest.approx(0.84, abs=1e-6)
    # BM25 is a ratio to the best: a match is never scaled to zero
    assert scale([("x", 4.0), ("y", 1.0)])["y"] == pytest.approx(0.25)


def test_rrf_fusion_rescaled_and_unknown_method_rejected():
    rel = fuse({"vector": [("a", 1), ("b", 0.5)], "bm25": [("a", 3)]}, method="rrf", rrf_k=60)
    assert rel["a"] == 1.0 and 0 < rel["b"] < rel["a"]
    with pytest.raises(ValueError):
        fuse({"vector": [("a", 1)]}, method="borda")
    with pytest.raises(ValueError):
        fuse({"vector": [("a", 1)]}, {"vector": -1.0})


def test_fusion_rounds_last_bit_noise_away():
    a = fuse({"vector": [("a", 0.8500000001), ("b", 0.8)]})
    b = fuse({"vector": [("a", 0.8500000004), ("b", 0.8)]})
    assert a == b


def test_adjustment_is_bounded_whatever_the_use():
    w = AdjustWeights()
    heavy = adjustment(Signals(recall_count=10_000), w)
    faded = adjustment(Signals(strength=0.0, faded=True, assistant=True), w)
    assert heavy == pytest.approx(1 + w.use) and faded == pytest.approx(1 - w.max_adjust)
    assert adjustment(Signals(recall_count=10_000), AdjustWeights(use=5.0)) == pytest.approx(1 + w.max_adjust)
    # an irrelevant memory recalled forever cannot pass a relevant fresh one 25 % ahead
    assert 0.75 * heavy < 1.0 * adjustment(Signals(), w)
    assert use_signal(0) == 0.0 and use_signal(20) == 1.0 and 0 < use_signal(3) < 1
    # switches: decay off ignores strength, strengthen off ignores use
    assert adjustment(Signals(strength=0.0), w, decay=False) == 1.0
    assert adjustment(Signals(recall_count=50), w, strengthen=False) == 1.0
    assert adjustment(Signals(stale=True), w) == pytest.approx(w.stale_factor)


def test_collapse_one_slot_per_source_and_no_repeated_sentence():
    scored = [("ep1", 0.9), ("fact1", 0.8), ("ep2", 0.7), ("ep3", 0.6), ("ep3b", 0.5)]
    out = collapse(scored, {"fact1": ["ep1"]}, {"ep1": "I like tea", "fact1": "I like tea", "ep2": "x", "ep3": "Same", "ep3b": "same "})
    assert out == [("fact1", 0.9), ("ep2", 0.7), ("ep3", 0.6)]
    # what each head stands for is kept, best first: the folded turn, the repeated sentence
    groups = collapse_groups(scored, {"fact1": ["ep1"]}, {"ep1": "I like tea", "fact1": "I like tea", "ep2": "x", "ep3": "Same", "ep3b": "same "})
    assert groups == [("fact1", 0.9, ("ep1",)), ("ep2", 0.7, ()), ("ep3", 0.6, ("ep3b",))]


def test_context_only_for_answers_and_short_replies():
    tok = WhitespaceTokenizer()
    q = "What are you researching these days?"
    assert carried_context(q, "Adoption agencies, I want to give a child a loving home soon.", tok) == q
    assert carried_context("I went hiking on Sunday with my whole family.", "Yes, it was great!", tok) is not None
    long = "I quit the fintech startup and I am freelancing as a UX designer for small companies now."
    assert carried_context("I'm learning Portuguese in an evening class.", long, tok) is None
    assert carried_context(None, "Yes!", tok) is None
    assert index_text("b", "a") == "a\nb" and index_text("b", None) == "b"


def test_signals_speaker_attribute_question():
    assert named_speakers("What did Caroline paint?", ["Caroline", "Melanie", "user"]) == {"Caroline"}
    assert named_speakers("Annual report?", ["Ann"]) == set()
    assert named_speakers("수진이가 어디 살아?", ["수진", "민호"]) == {"수진"}
    tok = WhitespaceTokenizer()
    assert "job" in named_attributes(tok.tokens("What is the user's job?"), tok)
    assert named_attributes(tok.tokens("Any food allergies?"), tok) <= {"diet", "favorite_food"}
    assert asks("How is the new job?") and not asks("I quit my job.")


def test_profile_requests_are_recognised_and_scored_by_class():
    from naia_memory.cognition.tokenize import KiwiTokenizer

    k = KiwiTokenizer()
    for q in ("사용자에 대해 알고 있는 모든 사실", "What do you know about me?", "Tell me everything you know about the user"):
        assert is_profile_request(k.tokens(q)), q
    for q in ("What is the user's job?", "음식 알레르기 있어?", "Tell me about Caroline", ""):
        assert not is_profile_request(k.tokens(q)), q
    ident = profile_score("identity", 0.8, 1.0, is_fact=True)
    assert ident > profile_score("observation", 0.8, 1.0, is_fact=True) > profile_score("observation", 0.8, 1.0, is_fact=False)
    assert profile_score("identity", 0.8, 0.2, is_fact=True) < ident


def test_named_dates_become_windows_with_grace():
    from datetime import datetime, timezone

    from naia_memory.recall.when import in_windows, named_windows

    w = named_windows("Who did Maria have dinner with on May 3, 2023?")
    assert len(w) == 1 and w[0][0] == datetime(2023, 5, 3, tzinfo=timezone.utc)
    assert in_windows(datetime(2023, 5, 4, 10, tzinfo=timezone.utc), w)  # told the next day
    assert not in_windows(datetime(2023, 5, 2, tzinfo=timezone.utc), w)
    dec = named_windows("What did Maria donate in December 2023?")
    assert dec[0][0] == datetime(2023, 12, 1, tzinfo=timezone.utc) and in_windows(datetime(2024, 1, 5, tzinfo=timezone.utc), dec)
    assert named_windows("What kind of painting did Caroline share on 13 October, 2023?")[0][0].day == 13
    ko = named_windows("2023년 5월에 뭐 했어?")
    assert ko[0][0] == datetime(2023, 5, 1, tzinfo=timezone.utc)
    assert len(named_windows("How many times has Melanie gone to the beach in 2023?")) == 1
    assert named_windows("What did Caroline paint?") == [] and named_windows("May I ask something?") == []


@pytest.mark.parametrize("text,said,want", [
    ("I went to a support group yesterday", (2023, 5, 8), [((2023, 5, 7), (2023, 5, 8))]),
    ("last week I went hiking", (2023, 5, 8), [((2023, 5, 1), (2023, 5, 8))]),  # Monday-start ISO weeks
    ("I painted that last weekend", (2023, 5, 10), [((2023, 5, 6), (2023, 5, 8))]),
    ("Two weeks ago I adopted a puppy", (2023, 5, 20), [((2023, 5, 3), (2023, 5, 10))]),
    ("last Friday I ran 10k", (2023, 5, 8), [((2023, 5, 5), (2023, 5, 6))]),
    ("어제 친구 만났어", (2023, 5, 8), [((2023, 5, 7), (2023, 5, 8))]),
    ("지난달에 이사했어", (2023, 1, 15), [((2022, 12, 1), (2023, 1, 1))]),  # across a year boundary
    ("작년에 결혼했어", (2023, 5, 8), [((2022, 1, 1), (2023, 1, 1))]),
    ("3일 전에 다쳤어", (2023, 5, 8), [((2023, 5, 5), (2023, 5, 6))]),
    ("지난 주말에 캠핑 갔어", (2023, 5, 8), [((2023, 5, 6), (2023, 5, 8))]),
    ("다음 달에 언니가 와", (2023, 12, 3), [((2024, 1, 1), (2024, 2, 1))]),
    ("I met her a few days ago", (2023, 5, 8), [((2023, 5, 2), (2023, 5, 8))]),
    ("I've been painting a lot recently", (2023, 5, 8), []),  # vague: no window
    ("요즘 도시락 싸 다녀", (2023, 5, 8), []),
])
def test_relative_time_expressions_resolve_against_when_they_were_said(text, said, want):
    from datetime import datetime, timezone

    from naia_memory.recall.relative_time import relative_windows

    def d(t):
        return datetime(*t, tzinfo=timezone.utc)

    assert relative_windows(text, d(said) .replace(hour=14)) == [(d(a), d(b)) for a, b in want]


def test_a_memory_told_weeks_later_matches_the_date_it_tells_of(make_system, tmp_path):
    """"Two weeks ago I adopted a puppy", said on 20 May, is about the week of
    3 May: a question naming 6 May finds it although it was stored two weeks
    after (outside the 7-day grace), and the hit carries the resolved window."""
    from datetime import datetime, timedelta, timezone

    told = datetime(2023, 5, 20, 18, tzinfo=timezone.utc)
    # long enough that none is indexed with the turn before it (recall/context.py)
    turns = ["I cooked pasta with my roommate tonight and we talked for hours.",
             "Two weeks ago I adopted a puppy named Max from the shelter.",
             "Last month I adopted a kitten named Luna from the animal shelter downtown."]
    q = "What pet did I adopt on May 6, 2023?"
    ratio = {}
    for on in (True, False):
        m = make_system(time=on, path=None if on else tmp_path / "off.json")
        for i, t in enumerate(turns):
            m.encode(content=t, role="user", session="s", now=told + timedelta(minutes=i))
        hits = m.recall(query=q, top_k=3, now=told + timedelta(days=1)).hits
        score = {("puppy" if "puppy" in h.content else "kitten" if "kitten" in h.content else "other"): h.score for h in hits}
        ratio[on] = score["puppy"] / score["kitten"]
        if on:
            assert "puppy" in hits[0].content, [h.content for h in hits]
            puppy = hits[0]
            assert puppy.metadata["when"][0][0].startswith("2023-05-03")
    assert ratio[True] > ratio[False]  # the switch is what moved it
