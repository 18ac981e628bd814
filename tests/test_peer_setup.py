"""Peers at their best and a benchmark that does not measure itself (issue 13):
mem0 searches with query embeddings, benchmark questions are read-only by
default, and peers' request logs stay at warning level."""
from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from naia_memory.embedders import HashingEmbedder


class _Counting(HashingEmbedder):
    """Query and passage vectors differ (as E5's do), and every call is counted."""

    def __init__(self):
        super().__init__(dim=64)
        self.queries: list[str] = []
        self.passages: list[str] = []

    def embed_passages(self, texts):
        self.passages.extend(texts)
        return super().embed_passages(texts)

    def embed_query(self, text):
        self.queries.append(text)
        return super().embed_passages(["query " + text])[0]


def test_mem0_searches_with_query_embeddings_and_stores_passages(tmp_path, t0, caplog):
    pytest.importorskip("mem0", reason="install mem0ai to run the mem0 comparison backend")
    from experiments.run import quiet_peers

    from naia_memory.providers import create_provider

    caplog.set_level(logging.INFO)
    quiet_peers("WARNING")
    emb = _Counting()
    p = create_provider("mem0", workdir=str(tmp_path / "mem0"), embedder=emb)
    try:
        p.encode(content="I adopted a grey cat named Miso", now=t0)
        assert "I adopted a grey cat named Miso" in emb.passages and not emb.queries
        hits = p.recall(query="what is my cat called?", top_k=3, now=t0 + timedelta(hours=1))
        assert emb.queries == ["what is my cat called?"]  # through the server's ':query' model
        assert hits.contents() == ["I adopted a grey cat named Miso"]
        chatter = [r for r in caplog.records if r.levelno < logging.WARNING and not r.name.startswith("naia_memory")]
        assert not chatter, [(r.name, r.getMessage()[:80]) for r in chatter[:3]]  # no request lines from mem0's clients
    finally:
        p.close()


def test_benchmark_questions_strengthen_nothing_unless_asked(t0):
    from experiments.run import ReadOnlyQuestions, asks_read_only, provider_factory

    adapter = {"name": "naia-local", "provider": "naia-local", "embedder": {"kind": "hashing", "dim": 64}, "engine": {}}
    counts = {}
    for ro in (True, False):
        p = provider_factory(adapter, read_only=ro)()
        try:
            p.encode(content="my sister Hana lives in Busan", now=t0)
            p.recall(query="where does Hana live?", top_k=3, now=t0 + timedelta(hours=1))
            many = p.recall_many(queries=["Hana?", "Busan?"], top_k=3, now=t0 + timedelta(hours=2))
            assert len(many) == 2
            store = p._inner.store if isinstance(p, ReadOnlyQuestions) else p.store
            counts[ro] = sum(r.recall_count for r in store.records())
        finally:
            p.close()
    assert counts[True] == 0 and counts[False] > 0
    assert asks_read_only({"read_only": True}, "locomo") and not asks_read_only({"read_only": False}, "locomo")
    assert not asks_read_only({"read_only": True}, "latency")  # latency measures what users get


def test_a_wrapped_provider_declares_what_the_provider_can_do(tmp_path):
    from experiments.run import ReadOnlyQuestions, provider_capabilities

    from naia_memory.contract import capabilities_of
    from naia_memory.providers import create_provider

    for name in ("naia-local", "lite"):
        inner = create_provider(name, path=str(tmp_path / name), embedder={"kind": "hashing", "dim": 32})
        try:
            assert provider_capabilities(ReadOnlyQuestions(inner)) == capabilities_of(inner)
        finally:
            inner.close()

    class HalfBatch(type(create_provider("none"))):  # imports in batches, recalls one at a time
        def encode_many(self, *, turns, project="default"):
            return [self.encode(**t, project=project) for t in turns]

    half = HalfBatch()
    assert not capabilities_of(half)["batch"]
    assert capabilities_of(ReadOnlyQuestions(half))["batch"]  # the wrapper's own recall_many would claim it
    assert not provider_capabilities(ReadOnlyQuestions(half))["batch"]


def test_peer_loggers_are_kept_at_warning():
    from experiments.run import PEER_LOGGERS, quiet_peers

    logging.getLogger("httpx").setLevel(logging.INFO)
    quiet_peers("WARNING")
    assert all(logging.getLogger(n).level == logging.WARNING for n in PEER_LOGGERS)
    quiet_peers("INFO")  # asked for: they talk again
    assert logging.getLogger("httpx").level == logging.INFO
    quiet_peers("WARNING")


def test_the_loopback_embedding_server_tells_queries_from_passages():
    import json
    import urllib.error
    import urllib.request

    import numpy as np

    from naia_memory.embedders.serve import EmbeddingServer

    emb = _Counting()
    srv = EmbeddingServer(emb)

    def post(doc):
        req = urllib.request.Request(f"{srv.base_url}/embeddings", data=json.dumps(doc).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return [d["embedding"] for d in json.loads(r.read())["data"]]

    try:
        marked, plain = post({"model": emb.name, "input": ["query: where do I live?", "I live in Busan"]})
        np.testing.assert_allclose(marked, emb.embed_query("where do I live?"), rtol=1e-6)
        np.testing.assert_allclose(plain, emb.embed_passages(["I live in Busan"])[0], rtol=1e-6)
        (by_model,) = post({"model": f"{emb.name}:query", "input": "where do I live?"})
        np.testing.assert_allclose(by_model, marked, rtol=1e-6)
        assert not np.allclose(marked, post({"model": emb.name, "input": "where do I live?"})[0])  # unmarked: a passage
        with pytest.raises(urllib.error.HTTPError) as e:
            post({"model": emb.name, "input": [1, 2]})
        assert e.value.code == 400
    finally:
        srv.close()


def test_the_speaker_is_metadata_not_a_word_of_what_was_said(tmp_path, t0, tokenizer):
    from naia_memory import LocalStore, MemorySystem
    from naia_memory.cognition.facts import said_text

    assert said_text("Jean-Luc Picard: I went to the store", "Jean-Luc Picard") == "I went to the store"
    assert said_text("Caroline: I went to the store") == "I went to the store"  # the usual prefixes, without metadata
    assert said_text("Dr. Kim: hi", "Caroline") == "Dr. Kim: hi"  # someone else's name is left alone
    m = MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=HashingEmbedder(dim=32), tokenizer=tokenizer)
    try:
        said = []
        for i in range(6):
            r = m.encode(content=f"Jean-Luc Picard: note {i}, the warp core hums in a new key", session="S1",
                         now=t0 + timedelta(minutes=i), metadata={"speaker": "Jean-Luc Picard"})
            said.append(m.store.get(r.id))
        assert all(not {"jean", "luc", "picard"} & set(r.entities) for r in said)  # never an entity of every turn
        assert all(r.content.startswith("Jean-Luc Picard: ") for r in said)  # the text as given is kept
        m.consolidate(now=t0 + timedelta(hours=1))
        facts = [r for r in m.store.records() if r.kind.value == "fact"]
        assert facts and not any("Picard" in f.content for f in facts)
    finally:
        m.close()


def test_mem0_runs_its_hybrid_search_on_a_store_with_keyword_search(tmp_path, t0):
    pytest.importorskip("mem0", reason="install mem0ai to run the mem0 comparison backend")
    from naia_memory.providers import create_provider
    from naia_memory.providers.mem0_keyword import KeywordFAISS, bm25_terms

    assert bm25_terms("My brother WORKS at Tesla!") == ["my", "brother", "work", "at", "tesla"]
    p = create_provider("mem0", workdir=str(tmp_path / "m"), embedder=HashingEmbedder(dim=64))
    plain = create_provider("mem0", workdir=str(tmp_path / "p"), embedder=HashingEmbedder(dim=64), keyword_search=False)
    try:
        assert type(p.memory.vector_store) is KeywordFAISS and type(plain.memory.vector_store) is not KeywordFAISS
        for i, text in enumerate(["I adopted a grey cat named Miso", "My brother works at Tesla", "We hiked in the Alps"]):
            p.encode(content=text, now=t0 + timedelta(minutes=i))
        p.encode(content="My brother works at Rivian", project="someone-else", now=t0)
        found = p.memory.vector_store.keyword_search("where does my brother work", top_k=5, filters={"user_id": "default"})
        assert [f.payload["data"] for f in found] == ["My brother works at Tesla"]  # another user's memory is not seen
        assert found[0].score > 0
        assert p.memory.vector_store.keyword_search("zebra", top_k=5, filters={"user_id": "default"}) == []
        assert p.recall(query="where does my brother work", top_k=1, now=t0 + timedelta(hours=1)).contents() == [
            "My brother works at Tesla"]
    finally:
        p.close()
        plain.close()


def test_every_fact_path_reads_the_words_not_the_speaker(tmp_path, t0, tokenizer):
    """The earlier attribute rules and an injected LLM extractor get the turn
    without its speaker too (the name is metadata)."""
    import json

    from naia_memory import EngineConfig, LocalStore, MemorySystem
    from naia_memory.llm import LLMFactExtractor

    class Scripted:  # an OpenAI-compatible model that records what it was sent
        name = "scripted"

        def __init__(self):
            self.sent = []

        def complete(self, messages):
            self.sent.append(messages[-1]["content"])
            return json.dumps({"facts": [{"content": "lives in Paris", "attribute": "residence"}]})

    said = "Jean-Luc Picard: I live in Paris these days"
    rules = MemorySystem(store=LocalStore(tmp_path / "a.json"), embedder=HashingEmbedder(dim=32), tokenizer=tokenizer,
                         config=EngineConfig(fact_rules="attributes"))
    model = Scripted()
    llm = MemorySystem(store=LocalStore(tmp_path / "b.json"), embedder=HashingEmbedder(dim=32), tokenizer=tokenizer,
                       fact_extractor=LLMFactExtractor(model))
    try:
        for m in (rules, llm):
            m.encode(content=said, now=t0, metadata={"speaker": "Jean-Luc Picard"})
            m.consolidate(now=t0 + timedelta(minutes=1))
        facts = [r.content for r in rules.store.records() if r.kind.value == "fact"]
        assert facts and not any("Picard" in f for f in facts)
        assert model.sent == ["I live in Paris these days"]
    finally:
        rules.close()
        llm.close()
