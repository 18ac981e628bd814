"""Koog's structured facts on the engine (issue 10): concepts SINGLE and
MULTIPLE, subjects with priority, scopes, load / load_all /
load_by_description, a no-memory provider, detection through an injected
model; the facts are ordinary memories (recalled, superseded, forgotten)."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest

from naia_memory import EngineConfig, InvalidInput, MemorySystem
from naia_memory.embedders import HashingEmbedder
from naia_memory.llm.client import ScriptedLLM
from naia_memory.llm.extractor import UnparseableAnswer
from naia_memory.structured import (
    EVERYTHING, MACHINE, USER, Concept, FactType, MemoryScope, MemorySubject, MultipleFacts, NoMemory, SingleFact,
    StructuredMemory,
)

from .conftest import naia_store

LANG = Concept("preferred-language", "What programming language is preferred by the user?", FactType.SINGLE)
KNOWN = Concept("known-languages", "Languages the user knows", FactType.MULTIPLE)
APP = MemoryScope.product("my-app")


@pytest.fixture(params=["json", "sqlite", "qdrant"])
def memory(request, tmp_path, tokenizer):
    m = MemorySystem(store=naia_store(request.param, tmp_path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer, config=EngineConfig())
    yield m, StructuredMemory(m)
    m.close()


def test_single_supersedes_multiple_accumulates(memory, t0):
    m, sm = memory
    sm.save(SingleFact(LANG, "Kotlin"), USER, APP, now=t0)
    new = sm.save(SingleFact(LANG, "Rust"), USER, APP, now=t0 + timedelta(days=1))
    assert [f.value for f in sm.load(LANG, USER, APP)] == ["Rust"]
    hist = m.history(memory_id=new[0])
    assert [h.metadata["status"] for h in hist] == ["superseded", "active"] and hist[0].content.endswith("Kotlin")
    assert sm.save(SingleFact(LANG, "Rust"), USER, APP, now=t0 + timedelta(days=2)) == []  # reaffirmed, no copy
    sm.save(MultipleFacts(KNOWN, ("Kotlin", "Python")), USER, APP, now=t0)
    sm.save(MultipleFacts(KNOWN, ("Python", "Go")), USER, APP, now=t0 + timedelta(days=1))
    (known,) = sm.load(KNOWN, USER, APP)
    assert isinstance(known, MultipleFacts) and known.values == ("Kotlin", "Python", "Go")
    with pytest.raises(ValueError, match="MULTIPLE concept"):
        sm.save(SingleFact(KNOWN, "C"), USER, APP)
    with pytest.raises(ValueError, match="non-empty"):
        sm.save(SingleFact(LANG, " "), USER, APP)


def test_most_specific_subject_wins_and_scopes_filter(memory, t0):
    m, sm = memory
    team = MemorySubject("team", "the user's team", priority=0)
    sm.save(SingleFact(LANG, "Java"), team, APP, now=t0)
    sm.save(SingleFact(LANG, "Kotlin"), USER, APP, now=t0)
    assert [f.value for f in sm.load(LANG, [team, USER], APP)] == ["Kotlin"]
    assert [f.value for f in sm.load(LANG, [team], APP)] == ["Java"]
    sm.save(SingleFact(Concept("os", "Operating system", FactType.SINGLE), "Linux"), MACHINE, MemoryScope.cross_product(), now=t0)
    sm.save(SingleFact(Concept("editor", "Editor", FactType.SINGLE), "vim"), USER, MemoryScope.product("other-app"), now=t0)
    seen = {f.concept.keyword: f.value for f in sm.load_all([USER, MACHINE, team], APP)}
    assert seen == {"preferred-language": "Kotlin", "os": "Linux"}  # cross-product is seen everywhere; other-app is not
    assert {f.concept.keyword for f in sm.load_all([USER], None)} == {"preferred-language", "editor"}
    with pytest.raises(ValueError, match="needs a name"):
        MemoryScope("product")
    assert EVERYTHING.priority < USER.priority


def test_structured_facts_are_memories_recalled_found_by_description_and_forgotten(memory, t0):
    m, sm = memory
    (rid,) = sm.save(SingleFact(LANG, "Kotlin"), USER, APP, now=t0)
    sm.save(SingleFact(Concept("favourite-food", "The user's favourite food", FactType.SINGLE), "bibimbap"), USER, APP, now=t0)
    assert m.recall(query="which programming language do I prefer", now=t0 + timedelta(hours=1)).contents()[0].endswith("Kotlin")
    by_desc = sm.load_by_description("programming language", [USER], APP, now=t0 + timedelta(hours=1))
    assert by_desc and by_desc[0].concept.keyword == "preferred-language"
    assert any(e["op"] == "SAVE" and rid in e["ids"] for e in m.audit_log())
    m.forget(memory_id=rid)
    assert sm.load(LANG, USER, APP) == []


def test_detection_through_a_model_and_the_no_memory_provider(memory, t0):
    m, sm = memory
    answer = json.dumps([{"subject": "user", "concept": "preferred-language", "description": LANG.description,
                          "fact_type": "single", "values": ["Scala"]},
                         {"subject": "machine", "concept": "os", "description": "Operating system", "fact_type": "single",
                          "values": ["macOS"]}])
    facts = sm.detect_and_save(["I mostly write Scala these days", "on my Mac"], ScriptedLLM([answer]), [USER, MACHINE], APP, now=t0)
    assert [f.value for f in facts] == ["Scala", "macOS"]
    assert [f.value for f in sm.load(LANG, USER, APP)] == ["Scala"]
    before = len(m.store)
    with pytest.raises(UnparseableAnswer):
        sm.detect_and_save(["..."], ScriptedLLM(['[{"subject": "nobody", "concept": "x", "values": ["y"]}]']), [USER], APP, now=t0)
    assert len(m.store) == before  # nothing saved from an answer that did not parse
    none = NoMemory()
    assert none.save(SingleFact(LANG, "Kotlin"), USER, APP) == [] and none.load(LANG, USER, APP) == [] and none.load_all([USER]) == []


# ---- the door checks encode applies (found by a review in session 32; each fails on the code before it) ----

@pytest.mark.parametrize("value", [None, 5, "Ru\udcffst", "x" * 100_001])
def test_save_refuses_what_encode_refuses_and_writes_nothing(memory, t0, value):
    m, sm = memory
    before = len(m.store)
    with pytest.raises(ValueError):
        sm.save(SingleFact(LANG, value), USER, APP, now=t0)
    assert sm.load(LANG, [USER], APP) == [] and len(m.store) == before


def test_a_save_whose_embedder_fails_writes_nothing(memory, t0, monkeypatch):
    m, sm = memory
    sm.save(MultipleFacts(KNOWN, ["Python"]), USER, APP, now=t0)
    calls = []

    def flaky(text):
        calls.append(text)
        if len(calls) > 1:
            raise RuntimeError("the embedder went away")
        return HashingEmbedder(dim=64).embed_passages([text])[0]

    monkeypatch.setattr(m, "_embed_one", flaky)
    before = sorted(r.content for r in m.store.records())
    with pytest.raises(RuntimeError):
        sm.save(MultipleFacts(KNOWN, ["Go", "Rust"]), USER, APP, now=t0 + timedelta(days=1))
    assert sorted(r.content for r in m.store.records()) == before  # "Go" was embedded, then "Rust" failed: neither


def test_load_by_description_refuses_an_empty_query_and_a_bad_top_k(memory, t0):
    m, sm = memory
    sm.save(SingleFact(LANG, "Rust"), USER, APP, now=t0)
    for desc, k in (("", 10), ("language", -1), ("language", 0)):
        with pytest.raises(ValueError):
            sm.load_by_description(desc, [USER], top_k=k)


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_save_that_fails_part_way_leaves_nothing_for_the_next_commit(kind, tmp_path, tokenizer, t0, monkeypatch):
    """Session 40's review: the values put before a failed one stayed in the
    process, and the next unrelated commit wrote them, with no SAVE entry."""
    import errno

    m = MemorySystem(store=naia_store(kind, tmp_path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    facts = StructuredMemory(m)
    facts.save(SingleFact(LANG, "Kotlin"), USER, APP, now=t0)
    real, calls = m.store.put, []

    def full_disk_at_the_second(rec, vec):
        calls.append(rec.id)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(rec, vec)
    monkeypatch.setattr(m.store, "put", full_disk_at_the_second)
    with pytest.raises(OSError, match="No space"):
        facts.save(MultipleFacts(KNOWN, ["Go", "Python"]), USER, APP, now=t0 + timedelta(days=1))
    monkeypatch.undo()
    assert facts.load(KNOWN, USER) == [] and [f.value for f in facts.load(LANG, USER)] == ["Kotlin"]
    m.encode(content="I like tea", now=t0 + timedelta(days=2))  # an unrelated call that commits
    m.close()
    m = MemorySystem(store=naia_store(kind, tmp_path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    assert StructuredMemory(m).load(KNOWN, USER) == [] and len(m.audit_log(op="SAVE")) == 1
    m.close()


def test_a_bare_string_is_not_a_list_of_values():
    with pytest.raises(InvalidInput, match="not one string"):
        MultipleFacts(KNOWN, "Python")
    assert MultipleFacts(KNOWN, ["Python"]).values == ("Python",)
