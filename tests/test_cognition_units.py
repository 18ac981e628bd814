"""Hand-computed values for the pure cognitive modules."""
from __future__ import annotations

import math
from datetime import timedelta

import pytest

from naia_memory.cognition import importance as imp
from naia_memory.cognition.bm25 import BM25Index, bm25_term, idf, kth_largest
from naia_memory.cognition.decay import decay_rate, retention, should_archive
from naia_memory.cognition.graph import EntityGraph, spreading_activation
from naia_memory.cognition.mmr import mmr
from naia_memory.recall.fusion import rrf_fusion


# ---------------------------------------------------------------- importance
def test_importance_korean_job_change_hand_computed():
    s = imp.score("디자인 회사로 직장 옮겼어", "user", surprise=1.0)
    # importance 0.2 base + 0.3 (work family); utility 4 content words -> 1.0
    assert s.importance == pytest.approx(0.5)
    assert s.utility == 1.0 and s.emotion == 0.0
    assert s.combined == pytest.approx(1.0 * 1.0 * (0.5 * 0.5 + 0.3 * 1.0 + 0.2 * 0.0))
    assert s.cues == ("work",)


def test_importance_english_assistant_emotion_hand_computed():
    s = imp.score("I love my dog!", "assistant", surprise=0.5)
    # families possession+preference (0.2+0.6) + first person 0.2 -> capped 1.0
    assert s.importance == 1.0
    assert s.emotion == pytest.approx(0.35 + 0.15)
    assert s.role_weight == 0.6
    assert s.combined == pytest.approx(0.6 * (0.5 * 1.0 + 0.3 * 0.5 + 0.2 * 0.5))


def test_greeting_has_no_utility_and_fails_gate():
    for text in ("안녕", "안녕하세요 ㅎㅎ", "ok thanks"):
        s = imp.score(text, "user", surprise=1.0)
        assert s.utility == 0.0 and s.combined == 0.0
        assert not imp.passes_gate(s, 0.15)


def test_explicit_keep_and_overrides():
    s = imp.score("이건 꼭 기억해: 내 비밀번호 힌트는 바다", "user", surprise=0.0)
    assert s.importance == 1.0 and "explicit-keep" in s.cues
    o = imp.score("그냥 그래", "user", surprise=0.0, overrides={"importance": 1.0, "utility": 1.0})
    assert o.combined == pytest.approx(0.5)
    with pytest.raises(ValueError):
        imp.score("x y z", "user", 0.0, overrides={"importancee": 1.0})
    with pytest.raises(ValueError):
        imp.score("x y z", "user", 0.0, overrides={"emotion": 3.0})


def test_lexical_surprise():
    assert imp.lexical_surprise(["회사", "직장"], []) == 1.0
    assert imp.lexical_surprise(["회사", "직장"], [["회사", "스타트업"]]) == pytest.approx(1 - 1 / 3)
    assert imp.lexical_surprise([], [["a"]]) == 0.0


# ---------------------------------------------------------------- decay
def test_retention_hand_computed(t0):
    later = t0 + timedelta(days=10)
    assert retention("observation", 0.0, 0, t0, later) == pytest.approx(math.exp(-0.3))
    assert retention("observation", 1.0, 0, t0, later) == pytest.approx(math.exp(-0.15))
    lam = 0.03 / (1 + 0.5 * math.log(4))
    assert decay_rate("observation", 0.0, 3) == pytest.approx(lam)
    assert retention("observation", 0.0, 3, t0, later) == pytest.approx(math.exp(-10 * lam))
    assert retention("permanent", 0.0, 0, t0, t0 + timedelta(days=10_000)) == 1.0
    assert retention("observation", 0.0, 0, later, t0) == 1.0  # access after now: no negative time


def test_archive_threshold_and_unknown_class():
    assert should_archive(0.04, "episode") and not should_archive(0.06, "episode")
    assert not should_archive(0.0, "permanent")
    with pytest.raises(ValueError):
        decay_rate("nonsense", 0.5, 0)


# ---------------------------------------------------------------- BM25
def test_bm25_hand_computed():
    idx = BM25Index()
    idx.add("d1", ["a", "b"])
    idx.add("d2", ["b", "c", "c"])
    assert idf(2, 1) == pytest.approx(math.log(2))
    s = idx.scores(["c"])
    assert s == {"d2": pytest.approx(math.log(2) * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 3 / 2.5)))}
    s = idx.scores(["b"])
    assert s["d1"] == pytest.approx(math.log(1.2) * 2.2 / (1 + 1.02))
    assert s["d2"] == pytest.approx(math.log(1.2) * 2.2 / (1 + 1.38))
    assert idx.top_k(["b"], 1) == [("d1", pytest.approx(s["d1"]))]
    assert bm25_term(0, 3, 2.5, 1.0) == 0.0


def test_bm25_remove_and_allowed():
    idx = BM25Index()
    idx.add("d1", ["x"])
    idx.add("d2", ["x", "y"])
    assert set(idx.scores(["x"], allowed={"d2"})) == {"d2"}
    idx.remove("d2")
    assert len(idx) == 1 and "y" not in idx.postings
    idx.add("d1", ["z"])  # re-adding replaces
    assert idx.scores(["x"]) == {}


def test_bm25_matches_a_fresh_index_after_many_removals_and_keeps_ties_by_id():
    import random

    rng = random.Random(3)
    words = ["a", "b", "c", "d", "e"]
    docs = {f"d{i:03d}": [rng.choice(words) for _ in range(rng.randint(1, 4))] for i in range(300)}
    idx = BM25Index()
    for d, toks in docs.items():
        idx.add(d, toks)
    for d in list(docs)[:250]:  # dead rows outnumber live ones: the arrays are rebuilt
        idx.remove(d)
        del docs[d]
    fresh = BM25Index()
    for d, toks in docs.items():
        fresh.add(d, toks)
    assert idx.scores(["a", "c"]) == pytest.approx(fresh.scores(["a", "c"]))
    assert len(idx._ids) == len(docs) or len(idx._ids) < 300  # rows were reclaimed
    top = idx.top_k(["a"], 60)
    assert [d for d, _ in top] == sorted(idx.scores(["a"]), key=lambda d: (-idx.scores(["a"])[d], d))[:60]
    assert idx.ranked(["a"], lambda d: d.endswith("7"), 3) == [h for h in top if h[0].endswith("7")][:3]


def test_kth_largest_is_exact_on_ties_and_minus_infinity():
    """The sampled lower bound must never change the answer: random sizes,
    heavy ties (integer scores), masked rows (-inf), against a full sort."""
    import numpy as np

    rng = np.random.default_rng(7)
    for t in range(400):
        n = int(rng.integers(1, 30_000))
        k = int(rng.integers(1, min(n, 300) + 1))
        v = rng.integers(0, int(rng.integers(1, 500)), n).astype(np.float64) if t % 2 else rng.standard_normal(n)
        if t % 3 == 0:
            v[rng.integers(0, n, n // 2)] = -np.inf
        assert kth_largest(v, k) == np.sort(v)[n - k], (n, k)


def test_bm25_pruned_top_k_equals_full_scoring():
    """MaxScore skips the long postings of common words; its answers (scores,
    order, ties, filters, tags, removed documents) equal scoring every posting."""
    import random

    rng = random.Random(5)
    common, rare = ["the", "a", "is"], [f"w{i}" for i in range(400)]
    idx = BM25Index()
    idx.long_posting = 64  # small corpus, same code path as a large store
    full = BM25Index()
    full.long_posting = 10**9  # never prunes
    for i in range(3000):
        toks = rng.choices(common, k=rng.randint(1, 4)) + rng.choices(rare, k=rng.randint(1, 3))
        for ix in (idx, full):
            ix.add(f"d{i:04d}", toks, tag=i % 3)
    for i in range(0, 3000, 7):
        idx.remove(f"d{i:04d}")
        full.remove(f"d{i:04d}")
    pruned_used = 0
    for q in range(200):
        query = rng.choices(common, k=2) + rng.choices(rare, k=rng.randint(1, 2))
        keep = (lambda d: True) if q % 2 else (lambda d: d[-1] in "02468")
        tags = None if q % 3 else [1]
        want = full.ranked(query, keep, 5, tags)
        assert idx.ranked(query, keep, 5, tags) == want
        pruned_used += idx._pruned(query, keep, 5, tags) is not None
    assert pruned_used > 100  # the fast path did most of the work, and agreed


def test_bm25_essential_terms_top_k_equals_full_scoring():
    """Every query word common (encode's surprise lookup on a short everyday
    turn): candidates come from the shortest postings, bounded by the others'
    largest tf in their shortest document. Answers (scores, order, ties,
    filters, tags, removed and re-added documents, repeated words, k up to
    50) equal scoring every posting, and the fast path answers most."""
    import random

    rng = random.Random(11)
    words = [f"c{i}" for i in range(12)]  # every word in 1/12 .. 1/2 of the documents
    weights = [1 + i for i in range(12)]
    idx, full = BM25Index(), BM25Index()
    idx.long_posting = 64
    full.long_posting = 10**9  # never prunes
    for i in range(4000):
        toks = rng.choices(words, weights, k=rng.randint(1, 6)) + [f"u{i}"]  # one unique word each, as "#123"
        for ix in (idx, full):
            ix.add(f"d{i:04d}", toks, tag=i % 3)
    for i in range(0, 4000, 5):
        for ix in (idx, full):
            ix.remove(f"d{i:04d}")
    for i in range(0, 4000, 50):  # re-added: a new row, a different text
        toks = rng.choices(words, k=3)
        for ix in (idx, full):
            ix.add(f"d{i:04d}", toks, tag=1)
    essential_used = 0
    for q in range(300):
        query = rng.choices(words, k=rng.randint(2, 5)) + ([f"u{q}"] if q % 4 == 0 else [])
        keep = (lambda d: True) if q % 2 else (lambda d: d[-1] in "0246")
        tags = None if q % 3 else [1, 2]
        k = rng.choice([1, 5, 5, 10, 50])
        want = full.ranked(query, keep, k, tags)
        assert idx.ranked(query, keep, k, tags) == want, (query, k, tags)
        got = idx._essential(query, keep, k, tags)
        assert got is None or got == want
        essential_used += got is not None
    assert essential_used > 100, essential_used
    # the scratch row is per thread: four threads asking at once get the single-threaded answers
    import threading

    queries = [rng.choices(words, k=4) for _ in range(40)]
    want = [full.ranked(q, lambda d: True, 5) for q in queries]
    got: dict[int, list] = {}

    def ask(t: int) -> None:
        got[t] = [idx.ranked(q, lambda d: True, 5) for q in queries for _ in range(3)][::3]

    threads = [threading.Thread(target=ask, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert all(got[t] == want for t in range(4))


# ---------------------------------------------------------------- RRF
def test_rrf_hand_computed_with_ties_and_weights():
    fused = rrf_fusion({"r1": [("a", 9), ("b", 8), ("c", 7)], "r2": [("b", 1.0), ("a", 0.5)]}, {}, k=60)
    best = 2 / 61  # rank 1 in both runs: rescaled to 1
    assert fused["a"] == pytest.approx((1 / 61 + 1 / 62) / best) == fused["b"]
    assert fused["c"] == pytest.approx((1 / 63) / best)
    w = rrf_fusion({"x": [("a", 1)], "y": [("b", 1)]}, {"x": 1.0, "y": 2.0}, k=60)
    assert w["b"] == pytest.approx(2 / 3) and w["a"] == pytest.approx(1 / 3)


# ---------------------------------------------------------------- MMR
def test_mmr_hand_computed():
    sims = {frozenset("ab"): 0.95, frozenset("ac"): 0.1, frozenset("bc"): 0.2}
    out = mmr([("a", 1.0), ("b", 0.9), ("c", 0.5)], lambda x, y: sims[frozenset(x + y)], k=3, lam=0.5)
    assert [d for d, _ in out] == ["a", "c", "b"]
    assert [s for _, s in out] == pytest.approx([0.5, -0.05, -0.075])
    assert mmr([], lambda a, b: 0.0, 3) == []
    # lambda = 1 is plain relevance order
    assert [d for d, _ in mmr([("a", 1.0), ("b", 0.9)], lambda x, y: 1.0, 2, lam=1.0)] == ["a", "b"]


# ---------------------------------------------------------------- spreading activation
def test_spreading_activation_hand_computed():
    g = EntityGraph()
    g.add_cooccurrence(["A", "B"], 2.0)
    g.add_cooccurrence(["A", "C"], 1.0)
    g.add_cooccurrence(["B", "D"], 1.0)
    act = spreading_activation(g.adjacency, {"A": 1.0}, decay=0.5, max_hops=2, threshold=0.05)
    assert act["B"] == pytest.approx(1 / 3)
    assert act["C"] == pytest.approx(1 / 6)
    assert act["D"] == pytest.approx(1 / 18)
    assert act["A"] == pytest.approx(1 + 1 / 9 + 1 / 12)
    # a higher threshold keeps activation local
    assert "D" not in spreading_activation(g.adjacency, {"A": 1.0}, 0.5, 2, threshold=0.06)
    assert spreading_activation(g.adjacency, {"Z": 1.0}) == {}


def test_graph_reinforce_only_existing_edges_and_roundtrip():
    g = EntityGraph()
    g.add_cooccurrence(["라면", "친구", "금요일"])
    g.reinforce(["라면", "친구", "회사"])
    assert g.edges[("라면", "친구")] == pytest.approx(1.1)
    assert ("라면", "회사") not in g.edges and ("친구", "회사") not in g.edges
    assert EntityGraph.from_json(g.to_json()).edges == g.edges
    assert g.neighbors("라면")[0] == ("친구", pytest.approx(1.1))


def test_mmr_matrix_matches_the_reference_mmr():
    import numpy as np

    from naia_memory.cognition.mmr import mmr, mmr_matrix

    rng = np.random.default_rng(3)
    v = rng.normal(size=(40, 16))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    v[7] = v[3]  # an exact duplicate, and tied relevance, to exercise tie-breaks
    cands = [(f"d{i:02d}", float(s)) for i, s in enumerate(np.round(rng.uniform(size=40), 2))]
    cands[7] = ("d07", cands[3][1])
    cands.sort(key=lambda kv: (-kv[1], kv[0]))
    order = {d: n for n, (d, _) in enumerate(cands)}
    mat = np.array([[float(v[int(a[1:])] @ v[int(b[1:])]) for b, _ in cands] for a, _ in cands])
    ref = mmr(cands, lambda a, b: mat[order[a], order[b]], 15, 0.7)
    got = mmr_matrix(cands, mat, 15, 0.7)
    assert [d for d, _ in got] == [d for d, _ in ref]
    assert [s for _, s in got] == pytest.approx([s for _, s in ref])


def test_a_number_is_its_own_stem_and_stays_out_of_the_memo():
    from naia_memory.cognition import tokenize as tk

    before = tk._stem.cache_info().currsize
    assert [tk.stem_en(w) for w in ("2023", "100003", "1990s", "paintings", "caroline's")] == \
        ["2023", "100003", "1990s", "paint", "carolin"]
    assert tk._stem.cache_info().currsize <= before + 3  # "1990s", "paintings", "caroline's"; no bare number
    assert tk.stem_en("٣") == tk._stem("٣")  # a digit outside ASCII goes through the stemmer as before
