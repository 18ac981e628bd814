"""HGVM paths under session 40's review, each test failing on the code
before: a faded summary or reflection was never ended when its grounds
changed (its sources stayed marked summarised for good); a reflection renewed
by a reflect dated before it began ended before it started; a restarted
consolidation timer left a second chain ticking (after close too), and a
closed system accepted a timer; an edit the store refused left its place in
the hierarchy."""
from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from naia_memory import EngineConfig, MemorySystem
from naia_memory.contract import MemoryKind
from naia_memory.embedders import HashingEmbedder
from naia_memory.records import ACTIVE, SUMMARY
from naia_memory.stores.port import RecordFilter

from .conftest import naia_store

ONE_TOPIC = dict(topic_threshold=-1.0, category_threshold=-1.0, domain_threshold=-1.0)
FACTS = ["My dog Max is three years old.", "I work as a nurse at Seoul hospital.", "I live in Mapo with my sister.",
         "I play the cello on Sundays."]


def _m(kind, tmp_path, tokenizer, **cfg) -> MemorySystem:
    return MemorySystem(store=naia_store(kind, tmp_path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer,
                        config=EngineConfig(**cfg))


def _say(m, t0, texts):
    for i, text in enumerate(texts):
        at = t0 + timedelta(days=i)
        m.encode(content=text, session=f"s{i}", now=at)
        m.consolidate(now=at + timedelta(minutes=1))


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_faded_summary_is_ended_when_a_source_changes_and_its_sources_are_free_again(kind, tmp_path, tokenizer, t0):
    m = _m(kind, tmp_path, tokenizer, summaries=True, summary_min=4, **ONE_TOPIC)
    _say(m, t0, FACTS)
    [s] = [r for r in m.store.records(RecordFilter(kinds=(MemoryKind.FACT,), statuses=(ACTIVE,))) if r.subtype == SUMMARY]
    later = t0 + timedelta(days=400)
    for i in s.metadata["summarizes"]:  # the facts are used now and then; the summary is not
        r = m.store.get(i)
        r.last_accessed, r.recall_count = t0 + timedelta(days=395), 5
        m.store.update(r)
    m.apply_decay(now=later)
    assert m.store.get(s.id).status == "archived"
    cello = next(i for i in s.metadata["summarizes"] if "cello" in m.store.get(i).content)
    m.edit(memory_id=cello, content="I play the violin on Sundays.", now=later + timedelta(days=1))
    ops = [d.op.value for d in m.summarize(now=later + timedelta(days=2)).decisions]
    assert m.store.get(s.id).status == "superseded" and "DELETE" in ops
    assert not any((x := m.store.get(i)) is not None and x.metadata.get("summarized_by") == s.id
                   for i in s.metadata["summarizes"])
    m.close()


def test_a_tick_of_a_timer_restarted_meanwhile_starts_no_second_chain(tmp_path, tokenizer):
    m = _m("json", tmp_path, tokenizer)
    m.start_consolidation(3600)
    current = m._timer
    stale = threading.Thread(target=m._tick)  # the tick of the chain the restart replaced, ending now
    stale.start()
    stale.join()
    assert m._timer is current  # it did not schedule another timer beside the current one
    m.close()
    assert not m.consolidation_running
    with pytest.raises(RuntimeError, match="closed"):
        m.start_consolidation(3600)
    assert not m.consolidation_running


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_an_edit_the_store_refuses_leaves_the_hierarchy_as_it_was(kind, tmp_path, tokenizer, t0, monkeypatch):
    m = _m(kind, tmp_path, tokenizer, hierarchy=True, **ONE_TOPIC)
    _say(m, t0, FACTS[:2])
    fact = next(r for r in m.store.records(RecordFilter(kinds=(MemoryKind.FACT,))))
    before = [(n["level"], n["memories"]) for n in m.topics()]

    def refused(*_a, **_k):
        raise OSError("disk I/O error")
    monkeypatch.setattr(m.store, "put", refused)
    with pytest.raises(OSError):
        m.edit(memory_id=fact.id, content="I work as a teacher at Busan school.", now=t0 + timedelta(days=5))
    monkeypatch.undo()
    assert [(n["level"], n["memories"]) for n in m.topics()] == before
    m.close()


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_reflect_that_fails_part_way_logs_the_reflection_it_wrote(kind, tmp_path, tokenizer, t0):
    hikes = ["I went hiking at Bukhansan with my sister.", "We went hiking again this weekend, the trail was muddy.",
             "Hiking clears my head after night shifts."]
    cello = ["I practised the cello for an hour tonight.", "My cello teacher praised my bowing.",
             "I bought new cello strings downtown."]
    m = _m(kind, tmp_path, tokenizer)
    for i in range(3):
        at = t0 + timedelta(days=i)
        m.encode(content=hikes[i], session=f"s{i}", now=at)
        m.encode(content=cello[i], session=f"s{i}", now=at + timedelta(hours=1))
    m.consolidate(now=t0 + timedelta(days=3))
    real, calls = m.reflector.embed_one, []

    def gone_at_the_second(text):
        calls.append(text)
        if len(calls) == 2:
            raise RuntimeError("the embedder went away")
        return real(text)
    m.reflector.embed_one = gone_at_the_second
    with pytest.raises(RuntimeError, match="went away"):
        m.reflect(now=t0 + timedelta(days=4))
    m.encode(content="I had lunch with my sister.", session="s9", now=t0 + timedelta(days=5))  # a later commit
    m.close()
    m = _m(kind, tmp_path, tokenizer)
    kept = list(m.store.records(RecordFilter(kinds=(MemoryKind.REFLECTION,))))
    logged = {e.get("fact_id") for e in m.audit_log()}
    assert kept and all(r.id in logged for r in kept)
    m.close()


HIKES = ["I went hiking at Bukhansan with my sister.", "We went hiking again this weekend, the trail was muddy.",
         "Hiking clears my head after night shifts.", "Booked a hiking trip to Jirisan for May."]


class QuotesAllCitesThree:
    """A model that writes from every memory it is shown but cites three sessions' worth (a scripted stand-in
    for the remote model; what it cites is what a real one may well do)."""

    name = "scripted-model"

    def __init__(self) -> None:
        self.calls = 0

    def propose(self, bundles):
        self.calls += 1
        out = []
        for b in bundles:
            cited, seen = [], set()
            for e in b[1:]:
                if e.session not in seen and len(seen) < 3:
                    seen.add(e.session)
                    cited.append(e.id)
            out.append(("The user keeps hiking: " + " / ".join(e.content for e in b), cited))
        return out


def test_a_model_reflection_goes_with_any_memory_it_was_shown_and_is_not_asked_again(tmp_path, tokenizer, t0):
    model = QuotesAllCitesThree()
    m = MemorySystem(store=naia_store("json", tmp_path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer,
                     config=EngineConfig(reflection=True), reflector=model)
    _say(m, t0, HIKES)
    [r] = list(m.store.records(RecordFilter(kinds=(MemoryKind.REFLECTION,))))
    asked = model.calls
    m.consolidate(now=t0 + timedelta(days=10))  # nothing new said: the bundle shown is the same
    assert model.calls == asked
    jirisan = next(x for x in m.store.records(RecordFilter(kinds=(MemoryKind.EPISODE,))) if "Jirisan" in x.content)
    assert jirisan.id not in r.provenance  # quoted, not cited
    m.forget(memory_id=jirisan.id)
    assert m.get(r.id) is None
    m.close()
    assert not [p.name for p in tmp_path.rglob("*") if p.is_file() and b"jirisan" in p.read_bytes().lower()]
