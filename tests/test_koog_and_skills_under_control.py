"""Structured facts and skill outcomes under the user's controls: bugs a
review found in session 33, each test failing on the code before it. An
edit kept the old value inside the corrected record (loads answered with
it, a forget of the old version left its words on disk); a forget left the
concept and skill names in the decision log; a lone surrogate in a subject
failed inside the store with the refused fact held as saved (and on SQLite
the write lock held); reads never caught up with another process's forget
nor refused a closed system; names the engine refuses were taken; a model
answer saved part of itself before a bad fact raised; a SINGLE concept
could be saved again as MULTIPLE."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest

from naia_memory import EngineConfig, InvalidInput, MemorySystem
from naia_memory.embedders import HashingEmbedder
from naia_memory.llm.client import ScriptedLLM
from naia_memory.procedural import ProceduralMemory
from naia_memory.structured import USER, Concept, FactType, MemoryScope, MemorySubject, MultipleFacts, SingleFact, StructuredMemory

from .conftest import naia_store

LANG = Concept("preferred-language", "What programming language is preferred by the user?", FactType.SINGLE)
THERAPIST = Concept("therapist-name", "The user's therapist", FactType.SINGLE)
APP = MemoryScope.product("my-app")
KINDS = ["json", "sqlite"]


def _m(kind, tmp_path, tokenizer) -> MemorySystem:
    return MemorySystem(store=naia_store(kind, tmp_path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer,
                        config=EngineConfig())


def _files_holding(tmp_path, word: str) -> list[str]:
    return [p.name for p in tmp_path.rglob("*") if p.is_file() and word.encode() in p.read_bytes()]


@pytest.mark.parametrize("kind", KINDS)
def test_a_structured_fact_or_skill_outcome_is_not_edited_into_a_record_that_keeps_the_old_value(kind, tmp_path, tokenizer, t0):
    m = _m(kind, tmp_path, tokenizer)
    (fid,) = StructuredMemory(m).save(SingleFact(LANG, "Zanzibarlang"), USER, APP, now=t0)
    sid = ProceduralMemory(m).record("deploy", success=False, approach="rsync", detail="password hunter2secret leaked", now=t0)
    for rid in (fid, sid):
        with pytest.raises(InvalidInput, match="save the new value|record the outcome again"):
            m.edit(memory_id=rid, content="preferred language: Kotlin", now=t0 + timedelta(days=1))
    assert [f.value for f in StructuredMemory(m).load(LANG, USER, APP)] == ["Zanzibarlang"]
    m.close()


def test_an_edited_fact_carries_the_corrected_value(tmp_path, tokenizer, t0):
    m = _m("json", tmp_path, tokenizer)
    m.encode(content="I work at Google", now=t0)
    m.consolidate(now=t0 + timedelta(minutes=1))
    (fact,) = m.facts()
    new = m.store.get(m.edit(memory_id=fact.id, content="I work at Apple", now=t0 + timedelta(days=1)))
    assert "google" not in (new.value or "") and "google" not in " ".join(new.metadata["values"])
    m.close()


@pytest.mark.parametrize("kind", KINDS)
def test_forgetting_takes_the_concept_and_skill_names_out_of_the_log(kind, tmp_path, tokenizer, t0):
    m = _m(kind, tmp_path, tokenizer)
    sm = StructuredMemory(m)
    sm.save(SingleFact(THERAPIST, "Dr Kim"), USER, APP, now=t0)
    sm.save(SingleFact(THERAPIST, "Dr Kim"), USER, APP, now=t0 + timedelta(days=1))  # a reaffirmation: no new id
    ProceduralMemory(m).record("smuggleparrots", success=False, now=t0)
    m.forget(everything=True)
    m.close()
    assert _files_holding(tmp_path, "therapist") == [] and _files_holding(tmp_path, "smuggleparrots") == []


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("who, where", [(MemorySubject("bad \ud800 name"), APP), (USER, MemoryScope.agent("x\ud800")),
                                        (MemorySubject(""), APP), (MemorySubject("s" * 1000), APP),
                                        (USER, MemoryScope.agent("   "))])
def test_a_bad_subject_or_scope_is_refused_before_anything_is_touched(kind, who, where, tmp_path, tokenizer, t0):
    m = _m(kind, tmp_path, tokenizer)
    sm = StructuredMemory(m)
    with pytest.raises(InvalidInput):
        sm.save(SingleFact(LANG, "Kotlin"), who, where, now=t0)
    assert len(m.store) == 0 and sm.load(LANG, USER, APP) == []
    sm.save(SingleFact(LANG, "Rust"), USER, APP, now=t0)  # the store goes on
    m.close()


def test_a_bad_project_name_is_refused(tmp_path, tokenizer):
    m = _m("json", tmp_path, tokenizer)
    for make in (lambda: StructuredMemory(m, project=""), lambda: ProceduralMemory(m, project="p" * 300)):
        with pytest.raises(InvalidInput):
            make()
    m.close()


def test_reads_catch_up_with_another_process_and_refuse_when_closed(tmp_path, tokenizer, t0):
    a, b = _m("sqlite", tmp_path, tokenizer), _m("sqlite", tmp_path, tokenizer)
    (fid,) = StructuredMemory(a).save(SingleFact(LANG, "Kotlin"), USER, APP, now=t0)
    sid = ProceduralMemory(a).record("deploy", success=False, detail="password hunter2", now=t0)
    assert [f.value for f in StructuredMemory(b).load(LANG, USER, APP)] == ["Kotlin"]
    assert ProceduralMemory(b).report("deploy").attempts == 1
    a.forget(memory_id=fid)
    a.forget(memory_id=sid)
    assert StructuredMemory(b).load(LANG, USER, APP) == [] and ProceduralMemory(b).report("deploy").attempts == 0
    a.close()
    b.close()
    for read in (lambda: StructuredMemory(b).load(LANG, USER, APP), lambda: ProceduralMemory(b).report("deploy")):
        with pytest.raises(RuntimeError, match="closed"):
            read()


def test_a_detected_answer_is_checked_whole_before_any_fact_is_saved(tmp_path, tokenizer, t0):
    m = _m("json", tmp_path, tokenizer)
    answer = json.dumps([{"subject": "user", "concept": "city", "description": "City the user lives in", "type": "single",
                          "values": ["Porto"]},
                         {"subject": "user", "concept": "bio", "description": "Bio", "type": "single", "values": ["x" * 100_001]}])
    with pytest.raises(InvalidInput):
        StructuredMemory(m).detect_and_save(["I live in Porto"], ScriptedLLM([answer]), [USER], APP, now=t0)
    assert len(m.store) == 0
    m.close()


def test_a_single_concept_is_not_saved_again_as_multiple(tmp_path, tokenizer, t0):
    m = _m("json", tmp_path, tokenizer)
    sm = StructuredMemory(m)
    sm.save(SingleFact(LANG, "Kotlin"), USER, APP, now=t0)
    as_multiple = Concept(LANG.keyword, LANG.description, FactType.MULTIPLE)
    with pytest.raises(InvalidInput, match="stored as a single"):
        sm.save(MultipleFacts(as_multiple, ["Rust", "Go"]), USER, APP, now=t0 + timedelta(days=1))
    assert [f.value for f in sm.load(LANG, USER, APP)] == ["Kotlin"]
    m.close()


@pytest.mark.parametrize("kind", KINDS)
def test_with_memory_off_loads_and_skill_reports_use_nothing_and_saves_are_kept(kind, tmp_path, tokenizer, t0):
    """Session 40's review: memory off stopped recall but not the structured
    loads (``load_by_description`` even ran the recall pipeline) nor the
    skill reports. A save or a record stays the host's explicit call, kept."""
    m = _m(kind, tmp_path, tokenizer)
    facts, skills = StructuredMemory(m), ProceduralMemory(m)
    facts.save(SingleFact(LANG, "Kotlin"), USER, APP, now=t0)
    skills.record("deploy", success=False, context="prod", approach="rsync", now=t0)
    m.disable()
    assert facts.load(LANG, USER) == [] and facts.load_all(USER) == []
    assert facts.load_by_description("programming language", USER, now=t0 + timedelta(days=1)) == []
    assert skills.outcomes("deploy") == [] and skills.report("deploy").attempts == 0
    facts.save(SingleFact(LANG, "Rust"), USER, APP, now=t0 + timedelta(days=2))
    m.enable()
    assert [f.value for f in facts.load(LANG, USER)] == ["Rust"] and len(skills.outcomes("deploy")) == 1
    m.disable()
    m.close()
    for read in (lambda: facts.load(LANG, USER), lambda: facts.load_all(USER), lambda: skills.outcomes("deploy")):
        with pytest.raises(RuntimeError, match="closed"):  # off and closed: refused, not an empty answer
            read()
