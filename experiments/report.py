"""Turn ``results/`` into markdown tables and PNG plots.

    python -m experiments.report                 # writes results/REPORT.md and results/plots/*.png
    python -m experiments.report --results other/ --out other/REPORT.md

For each (experiment, dataset, provider) the newest record is used.
"""
from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path
from typing import Any

from .results import load_records

DRAGON = {5: 0.567, 10: 0.662, 25: 0.767, 50: 0.827}
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def _f(x: Any) -> str:
    return f"{x:.3f}" if isinstance(x, float) else str(x)


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
        out.append("group                 " + "".join(f" tR@{k:<4}" for k in ks) + "".join(f" tHit@{k:<3}" for k in ks) + "".join(f" sR@{k:<4}" for k in ks))
        for g in sorted({k.split("/")[0] for k in m if "/turn_recall@" in k}, key=lambda g: (g != "all", g)):
            out.append(f"{g:<22}" + "".join(f" {m[f'{g}/turn_recall@{k}']:.3f} " for k in ks)
                       + "".join(f" {m[f'{g}/turn_hit@{k}']:.3f}  " for k in ks) + "".join(f" {m[f'{g}/session_recall@{k}']:.3f} " for k in ks))
        out.append("DRAGON (paper, turn-level) " + " ".join(f"R@{k}={v}" for k, v in DRAGON.items()))
    elif experiment == "contradiction":
        if not m.get("applicable", True):
            out.append("not applicable: the provider reports no consolidation decisions")
        else:
            out.append(f"cases={m['n']} supersede precision={m['precision']:.3f} recall={m['recall']:.3f} "
                       f"false-positive rate={m['fpr']:.3f} accuracy={m['accuracy']:.3f} setup failures={m['setup_failures']}")
            for g in sorted({k.rsplit('/', 1)[0] for k in m if k.startswith(("lang:", "cat:"))}):
                out.append(f"  {g:<28} n={m[g + '/n']:<3} acc={m[g + '/accuracy']:.3f} P={m[g + '/precision']:.3f} "
                           f"R={m[g + '/recall']:.3f} FPR={m[g + '/fpr']:.3f}")
    elif experiment == "lifecycle":
        out.append("  ".join(f"{k}={_f(v)}" for k, v in m.items()))
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
    rows = ["| provider | memories | encode/s | recall p50 ms | recall p95 ms | search p50 ms | query-embed p50 ms | peak RSS MiB | disk bytes/memory |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in m.get("rows", []):
        if r.get("error"):
            rows.append(f"| {r['provider']} | {r['n']} | error: {r['error']} | | | | | | |")
            continue
        rows.append(f"| {r['provider']} | {r['n']} | {r['encode_per_s']:.0f} | {r['recall_p50_ms']:.2f} | {r['recall_p95_ms']:.2f} | "
                    f"{_f(r.get('search_p50_ms'))} | {_f(r.get('embed_p50_ms'))} | {r['peak_rss_mib']:.0f} | {_f(r.get('disk_bytes_per_memory'))} |")
    return rows


# ----------------------------------------------------------------- whole report
def latest(records: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    best: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in records:
        i = r["identity"]
        key = (i["experiment"], i["dataset"], i["provider"])
        if key not in best or r.get("written_at", "") > best[key].get("written_at", ""):
            best[key] = r
    return best


def markdown(best: dict[tuple[str, str, str], dict[str, Any]]) -> str:
    by_exp: dict[tuple[str, str], list] = defaultdict(list)
    for (exp, ds, prov), r in sorted(best.items()):
        by_exp[(exp, ds)].append((prov, r))
    parts = ["# naia-memory results", "", "Made by `python -m experiments.report` from the records in `results/`.", ""]
    for (exp, ds), rows in sorted(by_exp.items()):
        parts += [f"## {exp} on {ds}", ""]
        if exp == "aihub141":
            ks = rows[0][1]["config"]["experiment"]["top_ks"]
            parts.append("| provider | " + " | ".join(f"{mt} R@{k}" for mt in ("keyword", "embedding") for k in ks) + " | " + " | ".join(f"emb P@{k}" for k in ks) + " |")
            parts.append("|" + " --- |" * (1 + 3 * len(ks)))
            for prov, r in rows:
                m = r["metrics"]
                parts.append(f"| {prov} | " + " | ".join(_f(m[f'{mt}/recall@{k}']) for mt in ("keyword", "embedding") for k in ks)
                             + " | " + " | ".join(_f(m[f'embedding/precision@{k}']) for k in ks) + " |")
        elif exp == "locomo":
            ks = sorted({int(k.split("@")[1]) for k in rows[0][1]["metrics"] if k.startswith("all/turn_recall@")})
            parts.append("| provider | " + " | ".join(f"turn R@{k}" for k in ks) + " | " + " | ".join(f"turn hit@{k}" for k in ks) + " | " + " | ".join(f"session R@{k}" for k in ks) + " |")
            parts.append("|" + " --- |" * (1 + 3 * len(ks)))
            parts.append("| DRAGON (paper) | " + " | ".join(_f(DRAGON.get(k, "")) for k in ks) + " |" + " |" * (2 * len(ks)))
            for prov, r in rows:
                m = r["metrics"]
                parts.append(f"| {prov} | " + " | ".join(_f(m[f'all/turn_recall@{k}']) for k in ks) + " | "
                             + " | ".join(_f(m[f'all/turn_hit@{k}']) for k in ks) + " | " + " | ".join(_f(m[f'all/session_recall@{k}']) for k in ks) + " |")
        elif exp == "contradiction":
            parts += ["| provider | cases | precision | recall | false-positive rate | accuracy |", "| --- | --- | --- | --- | --- | --- |"]
            for prov, r in rows:
                m = r["metrics"]
                parts.append(f"| {prov} | {m['n']} | not applicable | | | |" if not m.get("applicable", True)
                             else f"| {prov} | {m['n']} | {_f(m['precision'])} | {_f(m['recall'])} | {_f(m['fpr'])} | {_f(m['accuracy'])} |")
        elif exp == "lifecycle":
            keys = [k for k in rows[0][1]["metrics"] if k != "n_probes"]
            parts += ["| provider | probes | " + " | ".join(keys) + " |", "|" + " --- |" * (2 + len(keys))]
            for prov, r in rows:
                m = r["metrics"]
                parts.append(f"| {prov} | {m['n_probes']} | " + " | ".join(_f(m[k]) for k in keys) + " |")
        elif exp == "ablation":
            for prov, r in rows:
                m = r["metrics"]
                parts += [f"**{prov}**, base `{r.get('base_experiment')}`, metric {m.get('headline', '')}, default {_f(m.get('default', ''))}", "",
                          "| switch flipped | value | diff | 95% CI | p |", "| --- | --- | --- | --- | --- |"]
                for label, x in m.items():
                    if isinstance(x, dict):
                        parts.append(f"| {label} | not applicable | | | |" if not x.get("applicable")
                                     else f"| {label} | {_f(x['variant'])} | {x['diff']:+.3f} | [{x['ci_low']:+.3f}, {x['ci_high']:+.3f}] | {_f(x['p_value'])} |")
                parts.append("")
        elif exp == "latency":
            for prov, r in rows:
                parts += latency_table(r["metrics"])
        parts += ["", f"Plot: `plots/{exp}-{ds}.png`" if exp != "lifecycle" else "", ""]
    return "\n".join(parts)


def plots(best: dict[tuple[str, str, str], dict[str, Any]], out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    by_exp: dict[tuple[str, str], list] = defaultdict(list)
    for (exp, ds, prov), r in sorted(best.items()):
        by_exp[(exp, ds)].append((prov, r))
    written = []
    for (exp, ds), rows in by_exp.items():
        if exp == "aihub141":
            ks = rows[0][1]["config"]["experiment"]["top_ks"]
            fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
            for ax, mt in zip(axes, ("embedding", "keyword")):
                for i, (prov, r) in enumerate(rows):
                    ax.plot(ks, [r["metrics"][f"{mt}/recall@{k}"] for k in ks], MARKERS[i % len(MARKERS)] + "-",
                            color=COLORS[i % len(COLORS)], label=prov, alpha=0.85, ms=7 - (i % 3))
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
            ks = sorted({int(k.split("@")[1]) for k in rows[0][1]["metrics"] if k.startswith("all/turn_recall@")})
            for i, (prov, r) in enumerate(rows):
                ax.plot(ks, [r["metrics"][f"all/turn_recall@{k}"] for k in ks], MARKERS[i % len(MARKERS)] + "-",
                        color=COLORS[i % len(COLORS)], label=prov, alpha=0.85)
            ax.plot(list(DRAGON), list(DRAGON.values()), ":k", lw=2, label="DRAGON (paper)")
            ax.set(xlabel="k (turns)", ylabel="evidence recall@k", title=f"LoCoMo turn-level evidence recall ({ds})", ylim=(0, 1.02))
        elif exp == "ablation":
            labels, diffs, lo, hi = [], [], [], []
            for prov, r in rows:
                for label, x in r["metrics"].items():
                    if isinstance(x, dict) and x.get("applicable"):
                        labels.append(f"{prov}: {label}")
                        diffs.append(x["diff"])
                        lo.append(x["diff"] - x["ci_low"])
                        hi.append(x["ci_high"] - x["diff"])
            if not labels:
                plt.close(fig)
                continue
            y = range(len(labels))
            ax.errorbar(diffs, list(y), xerr=[lo, hi], fmt="o", capsize=3)
            ax.axvline(0, color="grey", lw=0.8)
            ax.set_yticks(list(y), labels, fontsize=8)
            ax.set(xlabel=f"paired difference vs default ({rows[0][1]['metrics'].get('headline')})", title=f"Ablation ({ds})")
        elif exp == "latency":
            for prov, r in rows:
                pts = [(x["n"], x["recall_p50_ms"], x["provider"]) for x in r["metrics"].get("rows", []) if not x.get("error")]
                for i, p in enumerate(sorted({p for _, _, p in pts})):
                    xs = [(n, v) for n, v, q in pts if q == p]
                    ax.plot([n for n, _ in xs], [v for _, v in xs], MARKERS[i % len(MARKERS)] + "-", color=COLORS[i % len(COLORS)], label=p)
            ax.set(xscale="log", yscale="log", xlabel="memories", ylabel="recall p50 (ms)", title="Recall latency vs memory count")
        elif exp == "contradiction":
            names = [p for p, r in rows if r["metrics"].get("applicable", True)]
            if not names:
                plt.close(fig)
                continue
            width = 0.25
            for j, key in enumerate(("precision", "recall", "fpr")):
                ax.bar([i + j * width for i in range(len(names))], [dict(rows)[n]["metrics"][key] for n in names], width, label=key)
            ax.set_xticks([i + width for i in range(len(names))], names)
            ax.set(ylim=(0, 1.05), title=f"Contradiction filter ({ds})")
        else:
            plt.close(fig)
            continue
        ax.grid(alpha=0.3)
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
    best = latest(load_records(root))
    if not best:
        raise SystemExit(f"no result records under {root}; run python -m experiments.run +adapter=naia-local first")
    out = Path(args.out) if args.out else root / "REPORT.md"
    out.write_text(markdown(best), encoding="utf-8")
    pngs = plots(best, out.parent / "plots")
    print(f"wrote {out} and {len(pngs)} plots in {out.parent / 'plots'}")


if __name__ == "__main__":
    main()
