"""Relevance first: a new user's short session, asked as a person would.

Replays the Dana session from issue 7 (English and Korean): cognition
(decay, strengthening, class weights) may only nudge relevance, never
override it, and a fact and the turn it came from take one slot.
"""
from __future__ import annotations

from datetime import timedelta

import pytest

from naia_memory.contract import DecisionOp

SESSIONS = {
    "en": {
        "turns": [
            ("user", "Hi! I'm Dana, I just moved to Lisbon for a job at a fintech startup."),
            ("assistant", "Welcome to Lisbon, Dana! How is the new job?"),
            ("user", "I'm allergic to peanuts, so I have to be careful when I eat out."),
            ("user", "My sister Maya is visiting me next month."),
            ("user", "I'm learning Portuguese in an evening class."),
            ("user", "I quit the fintech startup, I'm freelancing as a UX designer now."),
        ],
        "allergy": ("Any food allergies?", "peanuts"),
        "job": ("What is the user's job?", "freelancing as a UX designer"),
        "distractor": "How is life in Lisbon?",
    },
    "ko": {
        "turns": [
            ("user", "안녕! 나는 다나야. 핀테크 스타트업에 취직해서 리스본으로 막 이사 왔어."),
            ("assistant", "리스본에 온 걸 환영해요, 다나! 새 직장은 어때요?"),
            ("user", "나 땅콩 알레르기가 있어서 외식할 때 조심해야 해."),
            ("user", "다음 달에 언니 마야가 놀러 와."),
            ("user", "저녁 수업에서 포르투갈어 배우고 있어."),
            ("user", "핀테크 스타트업 그만두고 지금은 UX 디자이너로 프리랜서 일해."),
        ],
        "allergy": ("음식 알레르기 있어?", "땅콩"),
        "job": ("사용자 직업이 뭐야?", "프리랜서"),
        "distractor": "리스본 생활은 어때?",
    },
}


def _replay(m, lang, t0):
    for i, (role, text) in enumerate(SESSIONS[lang]["turns"]):
        m.encode(content=text, role=role, session="s1", now=t0 + timedelta(minutes=i))
    m.consolidate(now=t0 + timedelta(minutes=10))


def _no_sentence_twice(res):
    texts = [" ".join(h.content.split()).lower() for h in res.hits]
    assert len(texts) == len(set(texts)), texts


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_relevance_beats_recall_counts(make_system, t0, lang):
    m = make_system()
    _replay(m, lang, t0)
    s = SESSIONS[lang]
    # an unrelated question asked many times strengthens whatever it returns
    for i in range(30):
        m.recall(query=s["distractor"], top_k=3, now=t0 + timedelta(minutes=20 + i))
    q, want = s["allergy"]
    res = m.recall(query=q, top_k=5, now=t0 + timedelta(hours=2))
    assert want in res.hits[0].content, [h.content for h in res.hits]
    _no_sentence_twice(res)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_current_job_first_and_one_slot_per_source(make_system, t0, lang):
    m = make_system()
    _replay(m, lang, t0)
    q, want = SESSIONS[lang]["job"]
    res = m.recall(query=q, top_k=5, now=t0 + timedelta(hours=1))
    assert want in res.hits[0].content, [h.content for h in res.hits]
    _no_sentence_twice(res)
    # the fact stands for its source turn: the turn is not a second hit
    facts = [h for h in res.hits if h.kind.value == "fact"]
    assert facts, "consolidation made no fact of a user's statement"
    sources = {p for f in facts for p in f.provenance}
    assert not sources & {h.id for h in res.hits}


def test_without_collapse_the_fact_and_its_turn_take_two_slots(make_system, t0):
    """The switch is real: off, the same sentence comes back twice."""
    m = make_system(collapse=False)
    _replay(m, "en", t0)
    res = m.recall(query="Any food allergies?", top_k=5, now=t0 + timedelta(hours=1))
    texts = [h.content for h in res.hits]
    assert len(texts) != len(set(texts))


def test_profile_request_is_served_from_current_facts(make_system, t0):
    m = make_system()
    _replay(m, "ko", t0)
    res = m.recall(query="사용자에 대해 알고 있는 모든 사실", top_k=10, now=t0 + timedelta(hours=1))
    assert res.timings_ms.get("profile") == 1.0
    kinds = [h.kind.value for h in res.hits]
    assert kinds and kinds[0] == "fact"
    # every current fact comes before anything the similarity tail adds (the assistant's turn)
    n_facts = len(m.facts())
    assert kinds[:n_facts] == ["fact"] * n_facts
    assert all(h.metadata["role"] == "user" for h in res.hits[:n_facts])
    assert [h.score for h in res.hits] == sorted((h.score for h in res.hits), reverse=True)
    # identity facts (the job) come before passing observations (a visit next month)
    order = [h.content for h in res.hits]
    job = next(i for i, c in enumerate(order) if "프리랜서" in c)
    visit = next(i for i, c in enumerate(order) if "마야" in c)
    assert job < visit
    _no_sentence_twice(res)
    # with the switch off the same query is a similarity search
    m2 = make_system(path=m.store.path + ".2.json", profile=False)
    _replay(m2, "ko", t0)
    assert "profile" not in m2.recall(query="사용자에 대해 알고 있는 모든 사실", top_k=10, now=t0 + timedelta(hours=1)).timings_ms


def _job_change(m, t0):
    turns = [("user", "I work as a nurse at the city hospital."), ("user", "I'm allergic to peanuts."),
             ("user", "I quit the hospital, I work as a teacher now.")]
    ids = [m.encode(content=text, role=role, session="s1", now=t0 + timedelta(minutes=i), metadata={"source_id": f"T{i}"}).id
           for i, (role, text) in enumerate(turns)]
    m.consolidate(now=t0 + timedelta(minutes=10))
    assert [f for f in m.facts(include_inactive=True) if f.metadata["status"] == "superseded"], "the job change superseded nothing"
    return ids


def test_a_superseded_turn_stays_among_the_sources_of_what_replaced_it(make_system, t0):
    """History is not hidden: asked how things are, the old job's turn is
    folded into the current job's fact and still reported as one of its
    sources."""
    m = make_system()
    ids = _job_change(m, t0)
    res = m.recall(query="Is Dana a nurse at a hospital?", top_k=5, now=t0 + timedelta(hours=1))
    by_source = {sid: h for h in res.hits for sid in h.metadata["source_ids"]}
    assert "T0" in by_source, [(h.content, h.metadata["source_ids"]) for h in res.hits]
    holder = by_source["T0"]
    assert holder.id != ids[0] and "teacher" in holder.content  # what is true now answers ...
    assert ids[0] in holder.metadata["covers"]  # ... and the old turn is among what it stands for
    _no_sentence_twice(res)


@pytest.mark.parametrize("query", ["Did Dana ever work as a nurse at a hospital?", "Where did Dana work before?",
                                   "What was Dana's job in 2023?"])
def test_a_question_about_the_past_is_answered_by_what_was_said_then(make_system, t0, query, tmp_path):
    """Asked how things were (a past tense, a time that is over), the old
    turn is a hit of its own, not folded under what replaced it nor discounted
    as stale: a false update (a long two-person conversation has many) must
    not hide the turn a question about the past needs."""
    m = make_system()
    ids = _job_change(m, t0)
    res = m.recall(query=query, top_k=5, now=t0 + timedelta(hours=1))
    assert ids[0] in [h.id for h in res.hits], [(h.content, h.metadata["covers"]) for h in res.hits]
    _no_sentence_twice(res)
    off = make_system(path=tmp_path / "off.json", as_said=False)
    ids = _job_change(off, t0)
    res = off.recall(query=query, top_k=5, now=t0 + timedelta(hours=1))
    assert ids[0] not in [h.id for h in res.hits]  # the switch off: folded under the teacher fact, as before
    assert any(ids[0] in h.metadata["covers"] for h in res.hits)


def test_a_superseded_turn_is_folded_even_when_what_replaced_it_has_faded(make_system, t0):
    """Months on, the fact that replaced an old one can fade (archived: not
    recalled for a while), but it is still what holds; the old turn must
    not come back as a hit of its own as if it were current."""
    m = make_system()
    old = m.encode(content="my favorite food is pad thai, could eat it every day", role="user", now=t0)
    m.consolidate(now=t0 + timedelta(hours=1))
    m.encode(content="honestly birria tacos are my new favorite thing ever", role="user", now=t0 + timedelta(days=150))
    m.consolidate(now=t0 + timedelta(days=150, hours=1))
    later = t0 + timedelta(days=400)
    m.encode(content="I stayed up late yesterday", role="user", now=later)
    m.consolidate(now=later + timedelta(hours=1))
    current = next(f for f in m.facts(include_inactive=True) if f.content.startswith("honestly birria"))
    assert current.metadata["status"] == "archived", "the scenario needs the successor faded"
    res = m.recall(query="favorite food?", top_k=5, now=later + timedelta(hours=2))
    assert old.id not in [h.id for h in res.hits], [(h.kind, h.content) for h in res.hits]
    holder = next(h for h in res.hits if old.id in h.metadata["covers"])
    assert holder.content.startswith("honestly birria")


def test_a_turn_that_ended_a_fact_hands_on_to_what_replaced_its_own_value(make_system, t0):
    """A value ended by a turn that also said what came next, which was
    itself replaced later: the first value's turn is answered by the newest
    value, not by the turn in the middle ("저탄고지는 접었어. 그냥 소식만 하는
    중", then "소식도 그만뒀어 ...", then "비건 시작했어")."""
    m = make_system()
    said = ["요즘 저탄고지 식단 해", "저탄고지는 너무 힘들어서 접었어. 그냥 소식만 하는 중",
            "소식도 그만뒀어. 이제 그냥 아무거나 먹어", "의사 권유로 비건 시작했어"]
    eps = []
    for n, text in enumerate(said):
        eps.append(m.encode(content=text, role="user", now=t0 + timedelta(days=30 * n)))
        rep = m.consolidate(now=t0 + timedelta(days=30 * n, hours=1))
        assert n == 0 or {d.op for d in rep.decisions} & {DecisionOp.UPDATE, DecisionOp.DELETE}, \
            [(d.op, d.reason, d.candidate) for d in rep.decisions]
    res = m.recall(query="저탄고지 식단 아직 해?", top_k=5, now=t0 + timedelta(days=100))
    holder = next((h for h in res.hits if eps[0].id in h.metadata["covers"]), None)
    assert holder is not None and "비건" in holder.content, [(h.kind, h.content, h.metadata["covers"]) for h in res.hits]
