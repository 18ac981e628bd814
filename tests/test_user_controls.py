"""The user's controls (issue 10, AIDA's audit controls): see every memory
and its sources, query the decision log, keep a conversation out of memory,
start with memory off, and delete by description only through a verifier."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest

from naia_memory import EngineConfig, ForgetVerifier, MemoryKind, MemorySystem, VerifierRequired
from naia_memory.contract import InvalidInput
from naia_memory.embedders import HashingEmbedder
from naia_memory.llm.client import ScriptedLLM
from naia_memory.llm.extractor import UnparseableAnswer

from .conftest import naia_store, on_disk


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting every text it is shown."""

    def __init__(self) -> None:
        super().__init__(dim=64)
        self.seen: list[str] = []

    def embed_passages(self, texts):
        self.seen.extend(texts)
        return super().embed_passages(texts)

    def embed_query(self, text):
        self.seen.append(text)
        return super().embed_query(text)


@pytest.fixture(params=["json", "sqlite", "qdrant"])
def kind(request):
    return request.param


def _system(tmp_path, tokenizer, kind="json", **kw):
    emb = kw.pop("embedder", None) or CountingEmbedder()
    return MemorySystem(store=naia_store(kind, tmp_path), embedder=emb, tokenizer=tokenizer, config=EngineConfig(), **kw)


def test_only_the_users_own_words_pin_a_memory(tmp_path, tokenizer, t0, kind):
    m = _system(tmp_path, tokenizer, kind)
    said = {role: m.encode(content="Remember this: the spare key is under the blue pot", role=role, now=t0).id
            for role in ("user", "assistant", "tool")}
    classes = {role: m.store.get(i).memory_class for role, i in said.items() if i}
    assert classes["user"] == "permanent"
    assert all(c != "permanent" for role, c in classes.items() if role != "user")
    m.close()


def test_an_incognito_conversation_leaves_nothing(tmp_path, tokenizer, t0, kind):
    m = _system(tmp_path, tokenizer, kind)
    emb = m.embedder
    m.encode(content="I adopted a cat named Miso", session="open", now=t0)
    m.set_incognito(session="private")
    r = m.encode(content="I am secretly applying to other jobs", session="private", now=t0 + timedelta(minutes=1))
    many = m.encode_many(turns=[{"content": "my salary is 4200 a month", "session": "private", "now": t0 + timedelta(minutes=2)},
                                {"content": "I like jazz", "session": "open", "now": t0 + timedelta(minutes=3)}])
    assert not r.stored and r.reason == "incognito conversation" and r.importance is None
    assert [x.stored for x in many] == [False, True]
    m.set_incognito(session="private", on=False)
    later = m.encode(content="yes", session="private", now=t0 + timedelta(minutes=4))  # short: would carry the turn before
    assert not any("jobs" in t or "salary" in t for t in emb.seen)  # never shown to the embedder
    m.store.commit()
    assert on_disk(tmp_path, "jobs", "salary") == []
    if later.stored:
        assert "jobs" not in json.dumps(m.store.get(later.id).to_json())
    assert m.recall(query="cat", now=t0 + timedelta(hours=1)).contents()[0] == "I adopted a cat named Miso"
    m.close()


def test_memory_off_until_the_host_turns_it_on(tmp_path, tokenizer, t0, kind):
    m = _system(tmp_path, tokenizer, kind, enabled=False)
    assert not m.enabled
    r = m.encode(content="I live in Porto", now=t0)
    assert not r.stored and r.reason == "memory is off" and len(m.store) == 0 and m.embedder.seen == []
    m.enable()
    m.encode(content="I live in Porto", now=t0)
    assert m.recall(query="Porto", now=t0 + timedelta(hours=1)).contents() == ["I live in Porto"]
    m.disable()
    m.embedder.seen.clear()
    off = m.recall(query="Porto", now=t0 + timedelta(hours=1))
    assert off.hits == () and off.timings_ms == {"memory_off": 1.0}
    assert [r.hits for r in m.recall_many(queries=["Porto", "where do I live"], now=t0 + timedelta(hours=1))] == [(), ()]
    assert m.embedder.seen == []  # memory off: not even a query goes to the embedder (session 32: recall_many sent them)
    m.close()


def test_show_lists_sources_and_decisions_and_the_log_can_be_queried(tmp_path, tokenizer, t0, kind):
    m = _system(tmp_path, tokenizer, kind)
    m.encode(content="I live in Lisbon", session="s", now=t0)
    m.encode(content="Did you see the match?", session="s", now=t0 + timedelta(minutes=1))
    m.consolidate(now=t0 + timedelta(hours=1))
    m.encode(content="I moved to Porto last month", session="s", now=t0 + timedelta(days=30))
    m.consolidate(now=t0 + timedelta(days=30, hours=1))
    porto = next(h for h in m.facts() if "Porto" in h.content)
    shown = m.show(memory_id=porto.id)
    assert shown["memory"]["content"] == porto.content and "tokens" not in shown["memory"]
    assert [s["content"] for s in shown["sources"]] == ["I moved to Porto last month"]
    assert shown["sources"][0]["said_at"] == (t0 + timedelta(days=30)).isoformat()
    assert [d["op"] for d in shown["decisions"]] == ["UPDATE"]
    log = m.audit_log()
    assert m.audit_log(op="update") == [e for e in log if e["op"] == "UPDATE"] != []
    assert m.audit_log(op=["ADD", "UPDATE"]) == [e for e in log if e["op"] in ("ADD", "UPDATE")]
    d = m.audit_log(op="UPDATE")[0]["distance"]
    near = m.audit_log(max_distance=d)
    assert m.audit_log(op="UPDATE")[0] in near and all(e["distance"] is not None and e["distance"] <= d for e in near)
    assert m.audit_log(op="UPDATE")[0] not in m.audit_log(min_distance=d + 1e-6)
    assert m.audit_log(since=t0 + timedelta(days=1)) == [e for e in log if e["at"] >= (t0 + timedelta(days=1)).isoformat()]
    assert m.audit_log(memory_id=porto.id) == shown["decisions"]
    asked = m.audit_log(reason="QUESTION")
    assert asked and all("question" in e["reason"] for e in asked)
    assert [h.content for h in m.memories(kinds=[MemoryKind.FACT])] == [h.content for h in m.facts()]
    assert len(m.memories(include_inactive=True)) > len(m.memories())  # the superseded Lisbon fact
    m.close()


def test_forget_about_refuses_without_a_verifier_and_deletes_only_what_it_names(tmp_path, tokenizer, t0, kind):
    m = _system(tmp_path, tokenizer, kind)
    for i, text in enumerate(["My ex Jamie still texts me", "Jamie and I broke up in May", "I play bass in a band"]):
        m.encode(content=text, now=t0 + timedelta(minutes=i))
    m.consolidate(now=t0 + timedelta(hours=1))
    before = sorted(r.id for r in m.store.records(None))
    with pytest.raises(VerifierRequired, match="nothing was deleted"):
        m.forget_about(request="forget what I said about my ex")
    assert sorted(r.id for r in m.store.records(None)) == before

    def pick_jamie(messages):
        listing = messages[-1]["content"].split("MEMORIES:\n", 1)[1].splitlines()
        return json.dumps({"forget": [i + 1 for i, line in enumerate(listing) if "Jamie" in line]})

    m.forget_verifier = ForgetVerifier(ScriptedLLM(["not json at all"]))
    with pytest.raises(UnparseableAnswer):
        m.forget_about(request="forget what I said about my ex")
    assert sorted(r.id for r in m.store.records(None)) == before  # fail-closed
    m.forget_verifier = ForgetVerifier(ScriptedLLM(pick_jamie))
    gone = m.forget_about(request="forget what I said about my ex")
    left = [r.content for r in m.store.records(None)]
    assert gone and not [c for c in left if "Jamie" in c] and "I play bass in a band" in left
    assert on_disk(tmp_path, "Jamie") == []
    m.close()


def test_history_of_a_fact_whose_links_loop_ends(tmp_path, tokenizer, t0):
    """A damaged file whose supersede links form a cycle must not hang history()."""
    from naia_memory import EngineConfig, LocalStore, MemorySystem
    from naia_memory.embedders import HashingEmbedder

    m = MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer,
                     config=EngineConfig())
    m.encode(content="I work at Kakao", now=t0)
    m.consolidate(now=t0)
    fact = m.facts()[0]
    new = m.edit(memory_id=fact.id, content="I work at Naver", now=t0)
    old = m.store.get(fact.id)
    old.supersedes = new  # the loop: old <- new <- old
    m.store.update(old)
    assert [h.content for h in m.history(memory_id=new)] == ["I work at Kakao", "I work at Naver"]
    m.close()


# ---- loose doors found by a review in session 32; each fails on the code before it ----------------------

@pytest.mark.parametrize("bad", [{"importance": float("nan")}, {"importance": float("inf")}, {"role_weight": -1.0},
                                 {"role_weight": float("inf")}, {"importance": "abc"}, {"importance": None},
                                 {"emotion": True}, ["importance"]])
def test_importance_overrides_must_be_finite_numbers(tmp_path, tokenizer, t0, bad):
    m = MemorySystem(store=naia_store("json", tmp_path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer, config=EngineConfig())
    with pytest.raises(InvalidInput):
        m.encode(content="I keep bees on the roof", importance=bad, now=t0)
    assert len(m.store) == 0
    assert m.encode(content="I keep bees on the roof", importance={"importance": 1.0, "role_weight": 2}, now=t0).stored
    m.close()


@pytest.mark.parametrize("interval", [float("nan"), float("inf"), 0, -5, "60", True])
def test_a_consolidation_timer_needs_a_positive_finite_interval(tmp_path, tokenizer, interval):
    m = MemorySystem(store=naia_store("json", tmp_path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer, config=EngineConfig())
    with pytest.raises(InvalidInput):
        m.start_consolidation(interval)
    assert not m.consolidation_running
    m.close()


@pytest.mark.parametrize("args", [{"session": None}, {"session": ""}, {"session": "s1", "project": ""}])
def test_incognito_needs_a_session_it_can_mark(tmp_path, tokenizer, args):
    m = MemorySystem(store=naia_store("json", tmp_path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer, config=EngineConfig())
    with pytest.raises(InvalidInput):
        m.set_incognito(**args)
    m.close()
