"""HGVM's hierarchy (issue 12, first part): memories placed in domain >
category > topic as they arrive, the tree kept on every naia store through a
reopen, listed, and routed recall that searches inside the routed sub-trees
or says it fell back to flat search."""
from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from naia_memory import EngineConfig, MemorySystem
from naia_memory.cognition.hierarchy import Thresholds, Tree, place, route
from naia_memory.embedders import HashingEmbedder

from .conftest import naia_store

# the hashing embedder's scale: unrelated texts near 0, shared words well above
HASHING = dict(topic_threshold=0.5, category_threshold=0.3, domain_threshold=0.2, route_threshold=0.2)
SAID = {
    "running": ["I run every morning in the park", "My morning run in the park was 10 km", "I run in the park before work"],
    "work": ["The backend API design review went well", "We deploy the backend API on Friday", "The API deploy broke the backend"],
    "family": ["My father has a hospital visit next week", "My father saw the hospital doctor", "The doctor said my father is fine"],
}


def _unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def test_place_joins_near_topics_and_opens_new_ones():
    th = Thresholds(topic=0.9, category=0.7, domain=0.5, route=0.5)
    t = Tree(3)
    a = place(t, _unit([1, 0.05, 0]), th)
    b = place(t, _unit([1, 0.1, 0]), th)  # cos ~0.999 with a: the same topic
    c = place(t, _unit([1, 0.9, 0]), th)  # cos ~0.77: a new topic, same category
    d = place(t, _unit([0, 0, 1]), th)  # unrelated: a new domain
    assert a == b and c[:2] == a[:2] and c[2] != a[2] and d[0] != a[0]
    assert t.nodes[a[0]].count == 3 and t.nodes[a[2]].count == 2
    assert route(t, _unit([1, 0, 0]), th) == frozenset({a[2], c[2]})
    assert route(t, _unit([0, 1, 0]), th) is None  # near no domain: not routed


@pytest.mark.parametrize("kind", ["json", "sqlite", "qdrant"])
def test_tree_is_stored_listed_and_survives_a_reopen(kind, tmp_path, tokenizer, t0):
    cfg = EngineConfig(hierarchy=True, **HASHING)
    m = MemorySystem(store=naia_store(kind, tmp_path), embedder=HashingEmbedder(dim=256), tokenizer=tokenizer, config=cfg)
    i = 0
    for texts in SAID.values():
        for text in texts:
            m.encode(content=text, now=t0 + timedelta(minutes=i))
            i += 1
    listed = m.topics()
    topics = [n for n in listed if n["level"] == "topic"]
    assert sum(n["memories"] for n in topics) == 9
    paths = {h.content: tuple(m.store.get(h.id).metadata["path"]) for h in m.memories()}
    topic_subjects = {}
    for subject, texts in SAID.items():
        assert len({paths[x][0] for x in texts}) == 1  # a subject keeps to one domain
        for x in texts:
            topic_subjects.setdefault(paths[x][2], set()).add(subject)
    assert all(len(s) == 1 for s in topic_subjects.values())  # no topic mixes subjects
    assert len({paths[x][0] for x in paths}) >= 2
    m.close()
    again = MemorySystem(store=naia_store(kind, tmp_path), embedder=HashingEmbedder(dim=256), tokenizer=tokenizer, config=cfg)
    try:
        assert again.topics() == listed
    finally:
        again.close()


def test_routed_recall_searches_inside_and_says_when_it_did_not(tmp_path, tokenizer, t0):
    cfg = EngineConfig(hierarchy=True, routing=True, route_categories=1, **HASHING)
    m = MemorySystem(store=naia_store("json", tmp_path), embedder=HashingEmbedder(dim=256), tokenizer=tokenizer, config=cfg)
    i = 0
    for texts in SAID.values():
        for text in texts:
            m.encode(content=text, now=t0 + timedelta(minutes=i))
            i += 1
    later = t0 + timedelta(days=1)
    r = m.recall(query="how was the morning run in the park", top_k=9, now=later)
    assert r.timings_ms["routed"] == 1.0
    assert set(r.contents()) <= set(SAID["running"]) and r.contents()  # nothing from the other sub-trees
    flat = MemorySystem(store=naia_store("json", tmp_path / "flat"), embedder=HashingEmbedder(dim=256), tokenizer=tokenizer,
                        config=EngineConfig(hierarchy=True, **HASHING))
    for j, text in enumerate(t for texts in SAID.values() for t in texts):
        flat.encode(content=text, now=t0 + timedelta(minutes=j))
    assert len(flat.recall(query="how was the morning run in the park", top_k=9, now=later).contents()) > len(r.contents())
    q = m.recall(query="quantum chromodynamics lattice", top_k=3, now=later)
    assert q.timings_ms["routed"] == 0.0  # near no domain: searched flat, and said so
    flat.close()
    m.close()


def test_switching_the_hierarchy_on_places_what_was_stored_before(tmp_path, tokenizer, t0):
    m = MemorySystem(store=naia_store("json", tmp_path), embedder=HashingEmbedder(dim=256), tokenizer=tokenizer)
    for j, text in enumerate(SAID["running"] + SAID["work"]):
        m.encode(content=text, now=t0 + timedelta(minutes=j))
    assert m.topics() == []  # off by default: nothing placed
    m.close()
    on = MemorySystem(store=naia_store("json", tmp_path), embedder=HashingEmbedder(dim=256), tokenizer=tokenizer,
                      config=EngineConfig(hierarchy=True, **HASHING))
    assert sum(n["memories"] for n in on.topics() if n["level"] == "domain") == 6
    on.close()
    reopened = MemorySystem(store=naia_store("json", tmp_path), embedder=HashingEmbedder(dim=256), tokenizer=tokenizer)
    assert all("path" in r.metadata for r in reopened.store.records())  # the placement was saved
    reopened.close()


def test_forgetting_takes_a_memory_out_of_its_topic(tmp_path, tokenizer, t0):
    m = MemorySystem(store=naia_store("json", tmp_path), embedder=HashingEmbedder(dim=256), tokenizer=tokenizer,
                     config=EngineConfig(hierarchy=True, **HASHING))
    ids = [m.encode(content=text, now=t0 + timedelta(minutes=j)).id for j, text in enumerate(SAID["family"])]
    before = sum(n["memories"] for n in m.topics() if n["level"] == "domain")
    m.forget(memory_id=ids[0])
    assert sum(n["memories"] for n in m.topics() if n["level"] == "domain") == before - 1
    m.close()


def test_centring_separates_what_a_shared_direction_hides():
    """Vectors in a narrow cone (a large shared component, as small encoders
    give): uncentred, everything is one topic; with the mean taken away, the
    two groups part."""
    rng = np.random.default_rng(3)
    common = np.zeros(16)
    common[0] = 4.0
    a, b = np.zeros(16), np.zeros(16)
    a[1], b[2] = 1.0, 1.0
    group_a = [_unit(common + a + 0.05 * rng.standard_normal(16)) for _ in range(6)]
    group_b = [_unit(common + b + 0.05 * rng.standard_normal(16)) for _ in range(6)]
    th = Thresholds(topic=0.9, category=0.8, domain=0.7, route=0.7)
    flat_tree, centred_tree = Tree(16), Tree(16, centred=True)
    for va, vb in zip(group_a, group_b):
        for t in (flat_tree, centred_tree):
            place(t, va, th)
            place(t, vb, th)
    assert len([n for n in flat_tree.nodes.values() if n.level == "topic"]) == 1
    pa = {place(centred_tree, v, th)[2] for v in group_a}
    pb = {place(centred_tree, v, th)[2] for v in group_b}
    assert pa.isdisjoint(pb)


def test_reindexing_rebuilds_the_tree_on_the_new_vectors(tmp_path, tokenizer, t0):
    """The trees' centroids are the embedder's: after a reindex to another
    dimension, placing and routing use the new vectors (they used to fail on
    the old dimension)."""
    cfg = EngineConfig(hierarchy=True, routing=True, **HASHING)
    m = MemorySystem(store=naia_store("json", tmp_path), embedder=HashingEmbedder(dim=32), tokenizer=tokenizer, config=cfg)
    for j, text in enumerate(SAID["running"] + SAID["work"]):
        m.encode(content=text, now=t0 + timedelta(minutes=j))
    m.reindex(HashingEmbedder(dim=48))
    later = t0 + timedelta(days=1)
    assert m.encode(content="I ran in the park again", now=later).stored
    assert m.recall(query="morning run in the park", top_k=3, now=later).contents()
    assert sum(n["memories"] for n in m.topics() if n["level"] == "domain") == 7
    m.close()


def test_context_leakage_counts_hits_outside_the_gold_turns_sub_trees():
    from experiments.tasks.locomo import context_leakage

    q = {"places": {"gold": [["c1", "t1"]], "hits": [["c1", "t1"], ["c1", "t2"], ["c2", "t3"], None]}}
    m = context_leakage([q, {"places": {"gold": [], "hits": [["c9", "t9"]]}}], (2, 4))
    assert m["context_leakage/n"] == 1.0  # the question without placed gold turns does not count
    assert m["context_leakage/topic@2"] == 0.5 and m["context_leakage/category@2"] == 0.0
    assert m["context_leakage/topic@4"] == pytest.approx(2 / 3) and m["context_leakage/category@4"] == pytest.approx(1 / 3)
    assert context_leakage([{"ranking": []}], (5,)) == {}  # no hierarchy: no metric


def test_placement_maps_turns_and_memories_to_their_sub_trees(tmp_path, tokenizer, t0):
    from experiments.tasks.locomo import placement

    flat = MemorySystem(store=naia_store("json", tmp_path / "a"), embedder=HashingEmbedder(dim=256), tokenizer=tokenizer)
    assert placement(flat) is None
    flat.close()
    m = MemorySystem(store=naia_store("json", tmp_path / "b"), embedder=HashingEmbedder(dim=256), tokenizer=tokenizer,
                     config=EngineConfig(hierarchy=True, **HASHING))
    r = m.encode(content="I run every morning in the park", now=t0, metadata={"source_id": "D1:1"})
    p = placement(m)
    path = m.store.get(r.id).metadata["path"]
    assert p["turns"]["D1:1"] == [path[1], path[2]] and p["ids"][r.id] == [path[1], path[2]]
    m.close()


def test_with_the_hierarchy_off_trees_are_rebuilt_when_listed_not_on_every_catch_up(tmp_path, tokenizer, t0):
    pytest.importorskip("apsw")
    from naia_memory.stores.sqlite_store import SqliteStore

    path = str(tmp_path / "shared.sqlite")
    placing = MemorySystem(store=SqliteStore(path), embedder=HashingEmbedder(dim=256), tokenizer=tokenizer,
                           config=EngineConfig(hierarchy=True, **HASHING))
    reader = MemorySystem(store=SqliteStore(path), embedder=HashingEmbedder(dim=256), tokenizer=tokenizer)
    calls, real = [], reader.hierarchy.rebuild
    reader.hierarchy.rebuild = lambda recs: calls.append(1) or real(recs)
    for i, text in enumerate(SAID["running"]):
        placing.encode(content=text, now=t0 + timedelta(minutes=i))
        reader.recall(query="park run", now=t0 + timedelta(minutes=i, seconds=30))  # catches up with each write
    assert calls == []  # no tree work for a process that does not place
    listed = reader.topics()
    assert calls == [1] and sum(n["memories"] for n in listed if n["level"] == "topic") == 3
    placing.close()
    reader.close()



def test_two_writers_of_one_store_never_mint_the_same_node():
    """Each writer counts node ids from what it loaded: two processes that
    both place a new topic before seeing the other's commit must not both
    call theirs "t2" (on reopen the two topics would become one)."""
    th = Thresholds(topic=0.9, category=0.7, domain=0.5, route=0.5)
    trees = [Tree(3), Tree(3)]
    for t in trees:
        t.adopt(("d1", "c1", "t1"))  # what both loaded (an id stored before the random tag)
    a = place(trees[0], _unit([0, 1, 0]), th)
    b = place(trees[1], _unit([0, 0, 1]), th)
    assert not set(a) & set(b), (a, b)
    assert a[2].startswith("t2.") and b[2].startswith("t2.")  # the counter still reads in order
    from naia_memory.cognition.hierarchy import node_number

    assert [node_number(x) for x in ("t1", "t2.3fa2c1", "c12.000001", "tx")] == [1, 2, 12, 0]
