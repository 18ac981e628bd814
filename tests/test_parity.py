"""The same engine over the JSON, SQLite (matrix and sqlite-vec) and Qdrant
stores gives the same rankings: same ids, same order, same scores (to 1e-5:
sqlite-vec computes cosine in its own float32 code, so its last bits differ)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from datasets_loaders.aihub141_synthetic import synthetic_conversations
from datasets_loaders.locomo import load_locomo
from experiments.calibration import calibrate
from experiments.tasks.aihub141 import run_aihub141
from experiments.tasks.locomo import run_locomo
from naia_memory import create_provider

from .conftest import shared_path

STORES = ["naia-local", "sqlite", "sqlite-vec", "qdrant"]


def _rankings(out):
    return {q["query_id"]: [(h["id"], round(h["score"], 5)) for h in q["ranking"]] for q in out["queries"]}


@pytest.mark.slow
def test_aihub141_rankings_identical_across_stores(e5):
    convs = list(synthetic_conversations(2, level=3, seed=5))
    thr = calibrate(e5).threshold
    runs = {s: run_aihub141(lambda s=s: create_provider(s, path=None, embedder=e5), convs, match_embedder=e5, threshold=thr)
            for s in STORES}
    base = _rankings(runs["naia-local"])
    assert base and all(base.values())
    for s in STORES[1:]:
        assert _rankings(runs[s]) == base, s
        assert runs[s]["metrics"] == runs["naia-local"]["metrics"]


@pytest.mark.slow
def test_locomo_rankings_identical_across_stores(e5):
    samples, _ = load_locomo(shared_path("data", "locomo", "locomo10-dev.json"), sample_ids=["conv-30"])
    s = samples[0]
    s = replace(s, sessions=s.sessions[:3], qa=tuple(q for q in s.qa if q.evidence and all(int(e[1:].split(":")[0]) <= 3 for e in q.evidence)))
    assert len(s.qa) >= 5
    runs = {st: run_locomo(lambda st=st: create_provider(st, path=None, embedder=e5), [s]) for st in STORES}
    base = _rankings(runs["naia-local"])
    for st in STORES[1:]:
        assert _rankings(runs[st]) == base, st
