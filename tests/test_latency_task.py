"""The latency experiment's workers measure what they say (tiny sizes; the
numbers themselves come from `experiment=latency`, not from tests)."""
from __future__ import annotations

from experiments.report import latency_table
from experiments.tasks.latency import consolidation_worker, floor, warmed, worker
from naia_memory.embedders import make_embedder

FILL = {"kind": "hashing", "dim": 64}


def test_default_and_bulk_rows_fill_the_same_store_and_report_every_column():
    rows = [worker("naia-local", 120, 5, FILL, mode) for mode in ("default", "bulk")]
    for r in rows:
        assert r["stored"] == 120 + 50  # the fill, then the 50 single encodes timed on the full store
        for key in ("encode_per_s", "encode_p50_ms", "recall_p50_ms", "search_p50_ms", "peak_rss_mib", "disk_to_raw"):
            assert r[key] is not None and r[key] > 0, key
        assert r["look_search_p50_ms"] > 0  # the same searches back to back, writing nothing
        assert r["disk_to_raw"] < 10  # after close the journal is folded in: one snapshot, not a pile of rewrites
    assert "back to back" in "\n".join(latency_table({"rows": rows}))
    lite = worker("lite", 50, 3, FILL, "bulk")
    assert "no batch API" in lite["error"]


def test_warmed_memo_embeds_before_the_clock_and_the_rest_on_the_spot():
    base = make_embedder("hashing", dim=64)
    emb = warmed(base, ["a", "b"], ["q"])
    before = emb.calls
    assert (emb.embed_passages(["a"])[0] == base.embed_passages(["a"])[0]).all()
    assert (emb.embed_query("q") == base.embed_query("q")).all()
    assert emb.calls == before  # served from the memo
    assert (emb.embed_passages(["new text"])[0] == base.embed_passages(["new text"])[0]).all()
    assert emb.calls == before + 1


def test_consolidation_and_floor_rows_and_their_tables():
    cons = consolidation_worker(300, FILL, batch=40)
    assert cons["episodes"] == 40 and cons["facts"] > 0 and cons["consolidate_ms_per_turn"] > 0
    fl = floor(500, 64, 5)
    assert fl["search_p50_ms"] > 0
    text = "\n".join(latency_table({"rows": [cons, fl], "query_embedding": {"embedder": "x", "p50_ms": 1.0, "p95_ms": 2.0}}))
    assert "ms per consolidated turn" in text and "numpy M@q" in text and "Query embedding (x)" in text


def test_hnsw_row_reports_build_time_and_candidates_found_against_exact():
    import pytest

    pytest.importorskip("faiss")
    r = worker("naia-local", 1100, 5, FILL, "hnsw")  # past hnsw_from (1,000): the graph answers
    assert r["hnsw_build_s"] > 0 and 0.8 <= r["hnsw_candidate_recall@50"] <= 1.0
    assert r["search_p50_ms"] > 0
    text = "\n".join(latency_table({"rows": [r]}))
    assert "vector_index=hnsw" in text and "| 1100 |" in text
