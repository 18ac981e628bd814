"""pytest-benchmark for the hot functions, each next to a plain peer in the
same run (the ratio is what to read; absolute times depend on the machine).

CI runs these once as tests (``--benchmark-disable`` in pyproject), checking
that ours and the peer agree. To measure:

    python -m pytest tests/test_bench.py --benchmark-enable --benchmark-only --benchmark-json=results/bench.json
    python -m experiments.bench_report results/bench.json      # medians and ratios as a markdown table
"""
from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest

from naia_memory.cognition.bm25 import BM25Index, idf
from naia_memory.cognition.graph import EntityGraph, spreading_activation
from naia_memory.cognition.mmr import mmr, mmr_matrix
from naia_memory.recall.fusion import fuse
from naia_memory.records import MemoryRecord
from naia_memory.contract import MemoryKind
from naia_memory.stores.cache import RecordCache
from naia_memory.stores.port import RecordFilter

N_DOCS = 5000
VOCAB = [f"w{i}" for i in range(2000)]
rng = random.Random(0)
DOCS = {f"d{i:05d}": [rng.choice(VOCAB) for _ in range(rng.randint(3, 12))] for i in range(N_DOCS)}
QUERY = ["w1", "w17", "w300"]


def naive_bm25(query, docs, k=10, k1=1.2, b=0.75):
    """Peer: score every document from scratch."""
    n = len(docs)
    avg = sum(len(t) for t in docs.values()) / n
    df = Counter(t for toks in docs.values() for t in set(toks))
    out = {}
    for d, toks in docs.items():
        tf = Counter(toks)
        s = 0.0
        for q in set(query):
            if tf[q]:
                s += idf(n, df[q]) * tf[q] * (k1 + 1) / (tf[q] + k1 * (1 - b + b * len(toks) / avg))
        if s:
            out[d] = s
    return sorted(out.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


@pytest.fixture(scope="module")
def bm25():
    idx = BM25Index()
    for d, toks in DOCS.items():
        idx.add(d, toks)
    return idx


@pytest.mark.benchmark(group="bm25 top-10 over 5k docs")
def test_bench_bm25_index(benchmark, bm25):
    got = benchmark(bm25.top_k, QUERY, 10)
    assert [d for d, _ in got] == [d for d, _ in naive_bm25(QUERY, DOCS)]


@pytest.mark.benchmark(group="bm25 top-10 over 5k docs")
def test_bench_bm25_naive_peer(benchmark):
    assert len(benchmark(naive_bm25, QUERY, DOCS)) == 10


def _common_word_index(dense: bool) -> BM25Index:
    """100k short documents of everyday words (1 in 8 to 1 in 12 each, as
    the latency experiment's fill) plus a unique word each; ``dense``: the
    peer, every posting scored into a dense accumulator."""
    r = random.Random(3)
    subjects, places = [f"s{i}" for i in range(8)], [f"p{i}" for i in range(10)]
    acts = [(f"o{i}", f"v{i}") for i in range(8)]  # an object and its verb ("had coffee")
    idx = BM25Index()
    if dense:
        idx.long_posting = 10**9
    for i in range(100_000):
        idx.add(f"m{i}", [r.choice(subjects), r.choice(places), *r.choice(acts), f"u{i}"])
    return idx


COMMON_QUERIES = [["s1", "p3", "o2", "v2", "u100001"], ["s4", "p7", "o0", "v0"], ["s0", "p9", "o6", "v6", "u7"]]


@pytest.fixture(scope="module")
def common_pair():
    return _common_word_index(False), _common_word_index(True)


@pytest.mark.benchmark(group="bm25 top-5 over 100k docs, every query word common")
def test_bench_bm25_common_words_maxscore(benchmark, common_pair):
    ours, peer = common_pair
    got = benchmark(lambda: [ours.ranked(q, lambda _d: True, 5) for q in COMMON_QUERIES])
    assert got == [peer.ranked(q, lambda _d: True, 5) for q in COMMON_QUERIES]
    assert all(ours._essential(q, lambda _d: True, 5, None) is not None for q in COMMON_QUERIES)


@pytest.mark.benchmark(group="bm25 top-5 over 100k docs, every query word common")
def test_bench_bm25_common_words_dense_peer(benchmark, common_pair):
    _, peer = common_pair
    assert all(len(h) == 5 for h in benchmark(lambda: [peer.ranked(q, lambda _d: True, 5) for q in COMMON_QUERIES]))


@pytest.fixture(scope="module")
def cache():
    rs = np.random.default_rng(0)
    c = RecordCache()
    c.reset_vectors(0, 384)
    vecs = rs.standard_normal((N_DOCS, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    from datetime import datetime, timezone

    t = datetime(2025, 1, 1, tzinfo=timezone.utc)
    for i in range(N_DOCS):
        c.add(MemoryRecord(id=f"m{i:05d}", kind=MemoryKind.EPISODE, content="", created_at=t, updated_at=t, last_accessed=t), vecs[i])
    return c, vecs, rs.standard_normal(384).astype(np.float32)


def naive_vector_top_k(vecs, ids, q, k=50):
    """Peer: AIDA's loop, one dot product per row, then a full sort."""
    qn = q / np.linalg.norm(q)
    scored = [(ids[i], float(np.dot(qn, vecs[i]))) for i in range(len(ids))]
    scored.sort(key=lambda x: (-x[1], x[0]))
    return scored[:k]


@pytest.mark.benchmark(group="vector top-50 over 5k x 384")
def test_bench_vector_matrix(benchmark, cache):
    c, vecs, q = cache
    q = q / np.linalg.norm(q)
    got = benchmark(c.vector_top_k, q, 50, RecordFilter(statuses=None))
    assert [i for i, _ in got] == [i for i, _ in naive_vector_top_k(vecs, c.ids, q)]


@pytest.mark.benchmark(group="vector top-50 over 5k x 384")
def test_bench_vector_loop_peer(benchmark, cache):
    c, vecs, q = cache
    assert len(benchmark(naive_vector_top_k, vecs, c.ids, q)) == 50


RUNS = [[(f"d{(i * 7 + j) % 500:04d}", 1.0 / (j + 1)) for j in range(50)] for i in range(3)]


def naive_rrf(runs, k=60):
    """Peer: the textbook double loop with a dict of lists."""
    ranks: dict[str, list[int]] = {}
    for run in runs:
        for r, (d, _) in enumerate(run, start=1):
            ranks.setdefault(d, []).append(r)
    return sorted(((d, sum(1 / (k + r) for r in rs)) for d, rs in ranks.items()), key=lambda x: (-x[1], x[0]))


@pytest.mark.benchmark(group="rrf of 3 x 50")
def test_bench_rrf(benchmark):
    runs = {f"run{i}": r for i, r in enumerate(RUNS)}
    got = benchmark(fuse, runs, method="rrf")
    assert sorted(got, key=lambda d: (-got[d], d)) == [d for d, _ in naive_rrf(RUNS)]


@pytest.mark.benchmark(group="rrf of 3 x 50")
def test_bench_rrf_naive_peer(benchmark):
    assert benchmark(naive_rrf, RUNS)


def _mmr_inputs():
    rs = np.random.default_rng(1)
    emb = rs.standard_normal((50, 64)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    return [(f"c{i:02d}", 1.0 - i / 100) for i in range(50)], emb @ emb.T


@pytest.mark.benchmark(group="mmr 10 of 50")
def test_bench_mmr(benchmark):
    cands, sim = _mmr_inputs()
    out = benchmark(mmr_matrix, cands, sim, 10)
    assert len(out) == 10 and out[0][0] == "c00"


@pytest.mark.benchmark(group="mmr 10 of 50")
def test_bench_mmr_loop_peer(benchmark):
    """Peer: the textbook loop that rescans the selected set for every candidate."""
    cands, sim = _mmr_inputs()
    pos = {c: i for i, (c, _) in enumerate(cands)}
    out = benchmark(mmr, cands, lambda a, b: float(sim[pos[a], pos[b]]), 10)
    assert [d for d, _ in out] == [d for d, _ in mmr_matrix(cands, sim, 10)]


@pytest.mark.benchmark(group="spreading activation, 2 hops, 2k-edge graph")
def test_bench_spreading_activation(benchmark):
    g = EntityGraph()
    r = random.Random(2)
    for _ in range(2000):
        g.add_cooccurrence([f"e{r.randrange(400)}", f"e{r.randrange(400)}"])
    act = benchmark(spreading_activation, g.adjacency, {"e1": 1.0, "e2": 1.0})
    assert act["e1"] >= 1.0 and all(math.isfinite(v) for v in act.values())
