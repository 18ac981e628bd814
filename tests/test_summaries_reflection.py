"""HGVM's verified topic summaries and reflection (issue 12): summaries
checked against their sources before they are kept (offline and with a
scripted model that also writes a bad one), reflections linked to their
evidence, and a reflection never evidence for another through any path."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest

from naia_memory import EngineConfig, MemorySystem
from naia_memory.cognition.reflection import Evidence, check_links, find_patterns
from naia_memory.cognition.summaries import Source, extractive_summary, verify
from naia_memory.contract import DecisionOp, MemoryKind
from naia_memory.embedders import HashingEmbedder
from naia_memory.llm import ScriptedLLM
from naia_memory.llm.reflector import LLMReflector
from naia_memory.llm.summarizer import LLMSummarizer
from naia_memory.records import ACTIVE, REFLECTION_PATTERN, SUMMARY, SUPERSEDED
from naia_memory.reflection import ReflectionError
from naia_memory.stores.port import RecordFilter

from .conftest import naia_store

# one topic for everything (the hashing embedder's scale is not e5's)
ONE_TOPIC = dict(topic_threshold=-1.0, category_threshold=-1.0, domain_threshold=-1.0)
FACTS = ["My dog Max is three years old.", "I work as a nurse at Seoul hospital.", "I live in Mapo with my sister.",
         "I play the cello on Sundays."]
HIKES = ["I went hiking at Bukhansan with my sister.", "We went hiking again this weekend, the trail was muddy.",
         "Hiking clears my head after night shifts.", "Booked a hiking trip to Jirisan for May."]


def words(text: str) -> list[str]:
    return [w.strip(".,").lower() for w in text.split()]


def _system(kind, tmp_path, tokenizer, **cfg) -> MemorySystem:
    return MemorySystem(store=naia_store(kind, tmp_path), embedder=HashingEmbedder(dim=256), tokenizer=tokenizer,
                        config=EngineConfig(**cfg))


def _say(m: MemorySystem, texts, t0, session_every: int = 1, start: int = 0, consolidate: bool = True):
    out = []
    for i, text in enumerate(texts):
        at = t0 + timedelta(days=start + i)
        out.append(m.encode(content=text, session=f"s{(start + i) // session_every}", now=at,
                            metadata={"source_id": f"turn-{start + i}"}).id)
        if consolidate:
            m.consolidate(now=at + timedelta(minutes=1))
    return out


# ---------------------------------------------------------------- pure checks
def test_verify_accepts_the_extractive_summary_and_names_each_kind_of_fault():
    src = [Source("f1", "I moved to Busan in 2024", ("busan",), ("seoul",)), Source("f2", "My cat is 3 years old", ("3",))]
    assert verify(extractive_summary(src), src, words) == []
    missing = verify("I moved to Busan in 2024.", src, words)
    assert len(missing) == 1 and missing[0].startswith("missing: f2")
    assert any(p.startswith("altered: 4") for p in verify("I moved to Busan in 2024. My cat is 4 years old.", src, words))
    back = verify("I live in Seoul since 2024, near Busan. My cat is 3 years old.", src, words)
    assert any(p.startswith("contradicted") and "f1" in p for p in back)


def test_verify_contradiction_needs_the_old_value_not_a_current_one():
    src = [Source("f1", "I work at Naver now", ("naver",), ("kakao",)), Source("f2", "My friend works at Kakao", ("kakao",))]
    assert not [p for p in verify(extractive_summary(src), src, words) if p.startswith("contradicted")]


def _ev(i, session, word, day, topic=None):
    from datetime import datetime, timezone

    return Evidence(f"e{i}", f"text {word} {i}", session, topic, datetime(2024, 1, day, tzinfo=timezone.utc), (word, f"w{i}"))


def test_find_patterns_needs_sessions_skips_background_words_and_merges_themes():
    items = [_ev(i, f"s{i}", "hike", i + 1) for i in range(4)] + [_ev(10 + i, "s0", "cello", 1) for i in range(3)]
    pats = find_patterns(items, min_sessions=3, max_share=1.0)
    assert [p.theme for p in pats] == ["hike"] and pats[0].sessions == 4
    assert pats[0].evidence[0] == "e3"  # newest session first
    # a word in every memory of a large memory is background, not a theme
    big = [_ev(i, f"s{i}", "today", (i % 28) + 1) for i in range(60)]
    assert find_patterns(big, min_sessions=3, max_share=0.2) == []
    # two words over the same memories are one theme
    both = [Evidence(f"e{i}", "t", f"s{i}", None, items[0].at, ("trail", "hike")) for i in range(3)]
    assert len(find_patterns(both, min_sessions=3, max_share=1.0)) == 1
    # topics: demanded only when asked for
    assert find_patterns([_ev(i, f"s{i}", "hike", i + 1, topic="t1") for i in range(3)], min_sessions=3, min_topics=2,
                         max_share=1.0) == []


def test_check_links_refuses_what_was_not_offered_and_too_few_sessions():
    offered = {e.id: e for e in [_ev(i, f"s{i % 2}", "x", i + 1) for i in range(4)]}
    assert check_links(["e0", "e1"], offered, min_sessions=2) == []
    assert any("not offered" in p for p in check_links(["e0", "r9"], offered, min_sessions=1))
    assert any("fewer than 3" in p for p in check_links(["e0", "e1"], offered, min_sessions=3))
    assert check_links([], offered, min_sessions=1) == ["cites no evidence"]


# ---------------------------------------------------------------- summaries in the engine
@pytest.mark.parametrize("kind", ["json", "sqlite", "qdrant"])
def test_offline_summary_is_verified_linked_kept_and_retired_when_a_source_changes(kind, tmp_path, tokenizer, t0):
    m = _system(kind, tmp_path, tokenizer, summaries=True, summary_min=4, **ONE_TOPIC)
    _say(m, FACTS, t0)
    summaries = [r for r in m.store.records(RecordFilter(kinds=(MemoryKind.FACT,))) if r.subtype == SUMMARY]
    assert len(summaries) == 1
    s = summaries[0]
    sources = [m.store.get(i) for i in s.metadata["summarizes"]]
    assert sorted(x.content for x in sources) == sorted(FACTS) and all(x.status == ACTIVE for x in sources)
    assert set(s.provenance) == {p for x in sources for p in x.provenance}  # its turns
    assert sorted(s.metadata["source_ids"]) == [f"turn-{i}" for i in range(4)]
    log = [e for e in m.audit_log() if e["op"] == "ADD" and e["fact_id"] == s.id]
    assert log and "checked mechanically" in log[0]["reason"]
    hit = next(h for h in m.recall(query="nurse Seoul hospital cello dog Max", top_k=10, now=t0 + timedelta(days=9)).hits
               if h.id == s.id)
    assert hit.metadata["subtype"] == SUMMARY and set(hit.metadata["summarizes"]) == {x.id for x in sources}
    assert set(hit.metadata["source_ids"]) >= {f"turn-{i}" for i in range(4)}
    m.close()
    m = _system(kind, tmp_path, tokenizer, summaries=True, summary_min=4, **ONE_TOPIC)  # reopened: all there
    assert m.store.get(s.id).metadata["summarizes"] == s.metadata["summarizes"]
    # a source is replaced (the user edits it): the summary no longer says what is true
    cello = next(x.id for x in sources if "cello" in x.content)
    m.edit(memory_id=cello, content="I play the violin on Sundays.", now=t0 + timedelta(days=11))
    rep = m.consolidate(now=t0 + timedelta(days=12))
    old = m.store.get(s.id)
    assert old.status == SUPERSEDED and cello in old.metadata["superseded_reason"]
    assert any(d.op is DecisionOp.DELETE and d.target_id == s.id for d in rep.decisions)
    # its topic is summarised again in the same run, from what is current, with the edit in it
    again = [r for r in m.store.records(RecordFilter(kinds=(MemoryKind.FACT,))) if r.subtype == SUMMARY]
    assert len(again) == 1 and "violin" in again[0].content and "cello" not in again[0].content
    assert all(m.store.get(x.id).metadata.get("summarized_by") == again[0].id for x in sources if x.id != cello)
    m.close()


def test_summaries_need_the_hierarchy_and_settings_are_checked(tmp_path, tokenizer):
    m = _system("json", tmp_path, tokenizer)
    with pytest.raises(ValueError, match="hierarchy topic"):
        m.summarize()
    m.close()
    with pytest.raises(ValueError, match="summary_min"):
        EngineConfig.from_mapping({"summary_min": 0})
    with pytest.raises(ValueError, match="summary_max"):
        EngineConfig.from_mapping({"summary_min": 5, "summary_max": 3})
    with pytest.raises(ValueError, match="reflection_max_share"):
        EngineConfig.from_mapping({"reflection_max_share": 0.0})


def _summary_script(bad: str | None = None, checker_objects: bool = False):
    """A fake model: writes a faithful summary (every fact, same values), or
    ``bad``; its checking pass finds nothing, or (``checker_objects``) fact 1 missing."""
    def answer(messages):
        system, user = messages[0]["content"], messages[1]["content"]
        if system.startswith("Summarise"):
            facts = [line.split(". ", 1)[1] for line in user.split("FACTS:\n", 1)[1].splitlines()]
            return json.dumps({"summary": bad if bad is not None else " Also, ".join(facts)})
        return json.dumps({"missing": [1] if checker_objects else [], "altered": [], "contradicted": []})
    return answer


@pytest.mark.parametrize("case", ["faithful", "altered", "missing", "checker", "unparseable"])
def test_llm_summary_is_checked_by_a_second_pass_and_a_bad_one_rejected(case, tmp_path, tokenizer, t0):
    script = {"faithful": _summary_script(), "checker": _summary_script(checker_objects=True),
              "altered": _summary_script("The user's dog Max is three years old; a nurse at Seoul hospital for 12 years, "
                                         "living in Mapo with a sister, playing the cello on Sundays."),
              "missing": _summary_script("The user works as a nurse at Seoul hospital."),
              "unparseable": lambda messages: "Sure! Here is a summary: the user has a dog."}[case]
    llm = ScriptedLLM(script)
    m = MemorySystem(store=naia_store("json", tmp_path), embedder=HashingEmbedder(dim=256), tokenizer=tokenizer,
                     config=EngineConfig(summaries=True, summary_min=4, **ONE_TOPIC), summarizer=LLMSummarizer(llm))
    _say(m, FACTS, t0)
    kept = [r for r in m.store.records(RecordFilter(kinds=(MemoryKind.FACT,))) if r.subtype == SUMMARY]
    entries = [e for e in m.audit_log() if "summary" in (e.get("reason") or "")]
    if case == "faithful":
        assert len(kept) == 1 and "second pass" in kept[0].metadata["verified"]
        assert len(llm.calls) == 2  # written, then checked by a separate call
        return
    assert kept == []
    assert len(entries) == 1 and entries[0]["op"] == "SKIP" and entries[0]["reason"].startswith("summary rejected")
    want = {"altered": "altered: 12 is in no source", "missing": "missing:", "checker": "(checker)", "unparseable": "unparseable"}[case]
    assert want in entries[0]["reason"]
    m.consolidate(now=t0 + timedelta(days=30))  # the same sources are not asked about again
    assert len([e for e in m.audit_log() if "summary" in (e.get("reason") or "")]) == 1
    m.close()


# ---------------------------------------------------------------- reflection
@pytest.mark.parametrize("kind", ["json", "sqlite", "qdrant"])
def test_reflection_links_evidence_is_marked_in_recall_and_can_be_excluded(kind, tmp_path, tokenizer, t0):
    m = _system(kind, tmp_path, tokenizer, reflection=True)
    ids = _say(m, HIKES[:3], t0)  # three sessions
    refl = list(m.store.records(RecordFilter(kinds=(MemoryKind.REFLECTION,))))
    assert len(refl) == 1 and refl[0].subtype == REFLECTION_PATTERN and refl[0].metadata["theme"] == "hike"
    ev = [m.store.get(i) for i in refl[0].metadata["evidence"]]
    assert len({e.session for e in ev}) == 3 and not any(e.derived for e in ev)
    assert {p for e in ev for p in ([e.id] + list(e.provenance))} & set(ids)  # the user's own turns, or facts of them
    hits = m.recall(query="hiking again", top_k=10, now=t0 + timedelta(days=5)).hits
    r = next(h for h in hits if h.kind is MemoryKind.REFLECTION)
    assert r.metadata["subtype"] == REFLECTION_PATTERN and r.metadata["derived"] and r.metadata["evidence"]
    plain = m.recall(query="hiking again", top_k=10, now=t0 + timedelta(days=5),
                     kinds=[MemoryKind.FACT, MemoryKind.EPISODE]).hits
    assert plain and all(h.kind is not MemoryKind.REFLECTION for h in plain)
    # a fourth session: the theme is renewed, the old reflection kept as superseded
    _say(m, HIKES[3:], t0, start=3)
    now = list(m.store.records(RecordFilter(kinds=(MemoryKind.REFLECTION,), statuses=None)))
    assert sorted(x.status for x in now) == [ACTIVE, SUPERSEDED]
    assert next(x for x in now if x.status == ACTIVE).metadata["sessions"] == 4
    m.consolidate(now=t0 + timedelta(days=20))  # nothing new: no third one
    assert len(list(m.store.records(RecordFilter(kinds=(MemoryKind.REFLECTION,), statuses=None)))) == 2
    m.close()


@pytest.mark.parametrize("kind", ["json", "sqlite", "qdrant"])
def test_a_reflection_is_never_evidence_by_any_path(kind, tmp_path, tokenizer, t0):
    """Reflections and summaries are put where each path would pick them up:
    the store's row selection, vector and keyword search, recall results, the
    entity graph, summaries; none reaches the evidence."""
    m = _system(kind, tmp_path, tokenizer, reflection=True, summaries=True, summary_min=3, **ONE_TOPIC)
    _say(m, HIKES, t0)
    derived = [r for r in m.store.records(RecordFilter(statuses=None)) if r.derived]
    kinds = {r.subtype for r in derived}
    assert kinds == {REFLECTION_PATTERN, SUMMARY}
    ev = RecordFilter(evidence=True, statuses=None)
    # the store's own selection, vector and keyword search, each asked with a derived memory's own text
    assert not [r for r in m.store.records(ev) if r.derived]
    for d in derived:
        vec = m.store.embeddings([d.id])[0]
        assert d.id in [i for i, _ in m.store.vector_top_k(vec, 50, RecordFilter(statuses=None))]
        assert d.id not in [i for i, _ in m.store.vector_top_k(vec, 50, ev)]
        assert d.id not in [i for i, _ in m.store.keyword_top_k(d.tokens, 50, ev)]
    # recall returns them, the graph indexes them, yet the evidence has none
    recalled = {h.id for h in m.recall(query="hiking", top_k=20, now=t0 + timedelta(days=9)).hits}
    assert recalled & {d.id for d in derived}
    theme = next(d for d in derived if d.kind is MemoryKind.REFLECTION).metadata["theme"]
    assert m.index.entity(theme) & {d.id for d in derived}
    evidence = m.reflector.evidence(None, t0 + timedelta(days=30))
    assert evidence and not {r.id for r in evidence} & {d.id for d in derived}
    # every reflection's evidence, old or renewed, is observations only
    for d in derived:
        if d.kind is MemoryKind.REFLECTION:
            assert not any(m.store.get(i).derived for i in d.metadata["evidence"])
    # no summary stands on a reflection
    for d in derived:
        if d.subtype == SUMMARY:
            assert not any(m.store.get(i).derived for i in d.metadata["summarizes"])
    m.close()


def test_a_store_that_ignored_the_filter_is_caught(tmp_path, tokenizer, t0, monkeypatch):
    m = _system("json", tmp_path, tokenizer, reflection=True)
    _say(m, HIKES[:3], t0)
    assert list(m.store.records(RecordFilter(kinds=(MemoryKind.REFLECTION,))))
    real = m.store.records
    monkeypatch.setattr(m.store, "records", lambda flt=None: real(None))  # a backend that forgot `evidence`
    with pytest.raises(ReflectionError, match="derived memories as evidence"):
        m.reflect(now=t0 + timedelta(days=9))
    m.close()


def _reflection_script(cite):
    def answer(messages):
        ids = [line.split("]")[0][1:] for line in messages[1]["content"].splitlines() if line.startswith("[")]
        return json.dumps({"patterns": [{"pattern": "The user hikes to unwind, most weekends.", "evidence": cite(ids)}]})
    return answer


@pytest.mark.parametrize("case", ["honest", "cites-reflection", "made-up", "too-few-sessions", "unparseable"])
def test_llm_reflection_links_are_checked(case, tmp_path, tokenizer, t0):
    m = MemorySystem(store=naia_store("json", tmp_path), embedder=HashingEmbedder(dim=256), tokenizer=tokenizer,
                     config=EngineConfig(reflection=True))
    _say(m, HIKES[:3], t0)  # the offline finder is not used: one model
    old = None
    if case == "cites-reflection":  # plant a reflection from an earlier run, then ask again with more evidence
        m.reflector.proposer = LLMReflector(ScriptedLLM(_reflection_script(lambda ids: ids)))
        _say(m, HIKES[3:], t0, start=3)
        old = next(iter(m.store.records(RecordFilter(kinds=(MemoryKind.REFLECTION,)))))
    cite = {"honest": lambda ids: ids, "cites-reflection": lambda ids: ids + [old.id],
            "made-up": lambda ids: ids + ["fact_deadbeef"], "too-few-sessions": lambda ids: ids[:1]}.get(case)
    script = _reflection_script(cite) if cite else (lambda messages: "I think the user likes hiking.")
    m.reflector.proposer = LLMReflector(ScriptedLLM(script))
    before = {r.id for r in m.store.records(RecordFilter(kinds=(MemoryKind.REFLECTION,), statuses=None))}
    _say(m, ["One more hike at Gwanaksan today."], t0, start=6)
    made = [r for r in m.store.records(RecordFilter(kinds=(MemoryKind.REFLECTION,), statuses=None)) if r.id not in before]
    last = m.audit_log()[-1]
    if case == "honest":
        assert len(made) == 1 and made[0].content == "The user hikes to unwind, most weekends."
        assert made[0].metadata["writer"].startswith("llm:")
        return
    assert made == []
    assert last["op"] == "SKIP" and last["reason"].startswith("reflection rejected")
    want = {"cites-reflection": f"cites {old.id if old else ''}", "made-up": "fact_deadbeef", "too-few-sessions": "fewer than 3",
            "unparseable": "unparseable"}[case]
    assert want in last["reason"]
    m.close()


def test_forgetting_a_source_takes_the_summary_and_reflection_and_forgetting_those_takes_nothing_else(tmp_path, tokenizer, t0):
    m = _system("json", tmp_path, tokenizer, reflection=True, summaries=True, summary_min=3, **ONE_TOPIC)
    _say(m, HIKES[:3], t0)
    derived = [r for r in m.store.records(RecordFilter(statuses=None)) if r.derived]
    summary = next(r for r in derived if r.subtype == SUMMARY)
    reflection = next(r for r in derived if r.kind is MemoryKind.REFLECTION)
    n = len(m.store)
    m.forget(memory_id=summary.id)  # alone: the facts and turns it stood on stay
    assert len(m.store) == n - 1 and m.store.get(summary.id) is None
    assert all(m.store.get(i) is not None and "summarized_by" not in m.store.get(i).metadata
               for i in summary.metadata["summarizes"])
    source = reflection.metadata["evidence"][0]
    m.forget(memory_id=source)  # it quoted this: it goes too
    assert m.store.get(reflection.id) is None
    named = [e for e in m.audit_log() if e.get("fact_id") == reflection.id]
    assert named and not any(e.get("candidate") for e in named)  # the log keeps that it happened, not what it said
    m.close()


def test_subtype_is_the_engines_metadata(tmp_path, tokenizer, t0):
    m = _system("json", tmp_path, tokenizer)
    with pytest.raises(ValueError, match="subtype"):
        m.encode(content="I am a summary", metadata={"subtype": SUMMARY}, now=t0)
    assert len(m.store) == 0
    m.close()


def test_switches_are_in_the_ablation():
    assert {"summaries", "reflection", "routing"} <= set(EngineConfig.SWITCHES)


def test_a_summary_hit_names_the_turns_the_query_reached_first_and_only_those(t0):
    from naia_memory.hits import to_hit
    from naia_memory.records import MemoryRecord

    def rec(i, kind, sids, **kw):
        return MemoryRecord(id=i, kind=kind, content=i, created_at=t0, updated_at=t0, last_accessed=t0,
                            metadata={"source_ids": sids, **kw})

    s = rec("summary_1", MemoryKind.FACT, ["t1", "t2", "t3", "t4"], subtype=SUMMARY)
    turn = rec("ep_2", MemoryKind.EPISODE, ["t2"])
    # a summary stands for four turns; a query that reached one of them is answered by that one
    assert to_hit(s, 0.9, [turn], 0).metadata["source_ids"] == ("t2",)
    assert to_hit(s, 0.9).metadata["source_ids"] == ("t1", "t2", "t3", "t4")  # reached none: all of them
    fact = rec("fact_1", MemoryKind.FACT, ["t1", "t3"])  # an ordinary fact keeps its own sources first
    assert to_hit(fact, 0.9, [turn], 0).metadata["source_ids"] == ("t1", "t3", "t2")


def test_a_broad_question_is_answered_by_the_summary_first_with_its_facts_folded_in(tmp_path, tokenizer, t0):
    m = _system("json", tmp_path, tokenizer, summaries=True, summaries_first=True, summary_min=4, **ONE_TOPIC)
    _say(m, FACTS + ["I'm allergic to cats."], t0)
    s = next(r for r in m.store.records(RecordFilter(kinds=(MemoryKind.FACT,))) if r.subtype == SUMMARY)
    hits = m.recall(query="tell me everything you know about me", top_k=5, now=t0 + timedelta(days=9)).hits
    assert hits[0].id == s.id
    assert set(s.metadata["summarizes"]) <= set(hits[0].metadata["covers"])  # its facts stand behind it, not beside it
    assert not set(s.metadata["summarizes"]) & {h.id for h in hits[1:]}
    assert any("allergic" in h.content for h in hits[1:])  # what no summary covers still comes
    m.close()
    # summaries kept but not first (the default): the facts come one by one, the summary among them
    m = _system("json", tmp_path / "flat", tokenizer, summaries=True, summary_min=4, **ONE_TOPIC)
    _say(m, FACTS, t0)
    hits = m.recall(query="tell me everything you know about me", top_k=5, now=t0 + timedelta(days=9)).hits
    assert len([h for h in hits if h.kind is MemoryKind.FACT and h.metadata["subtype"] is None]) == 4
    m.close()


def test_themes_are_per_person_and_what_everyone_says_is_no_theme(tmp_path, tokenizer, t0):
    """Two speakers of one conversation: each one's theme is found apart, named
    after them; a word both use alike, an evaluative word or a name is none."""
    m = _system("json", tmp_path, tokenizer, reflection=True)
    lines = {"Ana": ["I practised the cello for two hours.", "My cello teacher moved the recital.", "New strings on my cello today."],
             "Ben": ["The marathon training plan is brutal.", "Long marathon run this weekend.", "My marathon shoes are worn out."]}
    for day in range(3):
        for who, said in lines.items():
            m.encode(content=f"{who}: {said[day]} That was great, Ana and Ben!", session=f"s{day}",
                     now=t0 + timedelta(days=day, minutes=len(who)), metadata={"speaker": who, "subject": who})
        m.consolidate(now=t0 + timedelta(days=day, hours=1))
    made = {r.metadata["subject"]: r for r in m.store.records(RecordFilter(kinds=(MemoryKind.REFLECTION,)))}
    themes = {r.metadata["subject"]: r.metadata["theme"] for r in m.store.records(RecordFilter(kinds=(MemoryKind.REFLECTION,)))}
    assert themes == {"Ana": "cello", "Ben": "marathon"}, themes
    assert made["Ana"].content.startswith('Recurring theme for Ana: "cello"')
    m.close()


def test_a_summary_that_fails_leaves_the_consolidation_before_it_logged(tmp_path, tokenizer, t0):
    """Session 32: the facts a consolidation made were logged only after the
    summaries and reflections that follow it; a summary step that raised (here
    the embedder, gone when the summary text is embedded) left those facts in
    the store with no decision in the audit log."""
    m = MemorySystem(store=naia_store("json", tmp_path), embedder=HashingEmbedder(dim=256), tokenizer=tokenizer,
                     config=EngineConfig(summaries=True, summary_min=4, **ONE_TOPIC),
                     summarizer=LLMSummarizer(ScriptedLLM(_summary_script())))
    _say(m, FACTS[:3], t0)  # three facts: no topic is ready for a summary yet
    m.encode(content=FACTS[3], session="s3", now=t0 + timedelta(days=3), metadata={"source_id": "turn-3"})

    def gone(text):
        raise RuntimeError("the embedder went away")

    m.summaries.embed_one = gone
    with pytest.raises(RuntimeError, match="went away"):
        m.consolidate(now=t0 + timedelta(days=3, minutes=1))  # the fourth fact, then the summary
    facts = [r for r in m.store.records(RecordFilter(kinds=(MemoryKind.FACT,)))]
    logged = {e.get("fact_id") for e in m.audit_log()}
    assert len(facts) == 4 and {f.id for f in facts} <= logged, [f.content for f in facts if f.id not in logged]
    m.close()
