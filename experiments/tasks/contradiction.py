"""Contradiction-filter precision on the labelled suite.

For each case a fresh provider is told the existing facts (one consolidation
each, so every fact's id is known from its ADD decision), then the new
utterance a day later. A supersede is predicted when the provider's
consolidation report holds an UPDATE or DELETE; it is correct when it hits
the labelled fact. Metrics: supersede precision (correct / predicted),
recall (correct / labelled updates and deletes) and false-positive rate
(keep cases wrongly superseded / keep cases), overall, per language and per
category. Providers whose consolidation reports no decisions are recorded as
"not applicable" rather than scored as zero.
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterable

from naia_memory.contract import DecisionOp, MemoryProvider, Role

from ..suites.contradiction_suite import Case

T0 = datetime(2025, 1, 6, 9, 0, tzinfo=timezone.utc)


def run_case(provider: MemoryProvider, case: Case) -> dict[str, Any]:
    ids: list[str | None] = []
    for i, text in enumerate(case.existing):
        now = T0 + timedelta(hours=i)
        provider.encode(content=text, role=Role.USER, now=now)
        rep = provider.consolidate(now=now + timedelta(minutes=1))
        added = [d.fact_id for d in rep.decisions if d.op is DecisionOp.ADD]
        ids.append(added[0] if added else None)
    later = T0 + timedelta(days=1)
    provider.encode(content=case.new, role=Role.USER, now=later)
    rep = provider.consolidate(now=later + timedelta(minutes=1))
    sup = [d for d in rep.decisions if d.op in (DecisionOp.UPDATE, DecisionOp.DELETE)]
    undecided = any(d.op is DecisionOp.UNDECIDED for d in rep.decisions)
    predicted_target = sup[0].target_id if sup else None
    predicted = ("delete" if sup[0].op is DecisionOp.DELETE else "update") if sup else "keep"
    # the facts the engine would ask the user about (an ADD that reads as a change it could not tie to one)
    asked = sorted({i for d in rep.decisions if d.op is DecisionOp.ADD for i in d.doubts})
    return {"case_id": case.case_id, "lang": case.lang, "category": case.category, "expected": case.expected,
            "listed": case.listed, "split": case.split, "batch": case.batch, "attr": case.attr,
            "target": case.target, "target_id": ids[case.target] if case.target is not None else None,
            "predicted": predicted, "predicted_target": predicted_target,
            "setup_ok": all(i is not None for i in ids[case.padding:]),
            "padding": case.padding, "padding_kept": sum(i is not None for i in ids[:case.padding]),
            "correct_target": bool(sup) and case.target is not None and ids[case.target] == predicted_target,
            "undecided": undecided, "decisions": [(d.op.value, d.reason) for d in rep.decisions],
            "asked": asked, "asked_target": case.target is not None and ids[case.target] in asked}


def ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def score(rows: list[dict[str, Any]]) -> dict[str, float]:
    pred = [r for r in rows if r["predicted"] != "keep"]
    tp = [r for r in pred if r["expected"] != "keep" and r["correct_target"]]
    labelled = [r for r in rows if r["expected"] != "keep"]
    keep = [r for r in rows if r["expected"] == "keep"]
    fp_keep = [r for r in keep if r["predicted"] != "keep"]
    exact = [r for r in rows if (r["predicted"] == r["expected"] and (r["expected"] == "keep" or r["correct_target"]))]
    # an engine that asks when it doubts (MemorySystem.doubts): the changes it found, or asked about, if the user answers
    settled = [r for r in labelled if (r["predicted"] != "keep" and r["correct_target"])
               or (r["predicted"] == "keep" and r.get("asked_target"))]
    # a ratio with nothing under it is undefined (None), not 0: a group of keeps has no recall,
    # a group of changes no false-positive rate, and 0.000 there read as a score
    return {"n": len(rows), "precision": ratio(len(tp), len(pred)), "recall": ratio(len(tp), len(labelled)),
            "fpr": ratio(len(fp_keep), len(keep)), "accuracy": ratio(len(exact), len(rows)),
            "setup_failures": sum(not r["setup_ok"] for r in rows), "undecided": sum(bool(r["undecided"]) for r in rows),
            "recall_if_asked": ratio(len(settled), len(labelled)),
            "keeps_asked": ratio(sum(bool(r.get("asked")) for r in keep), len(keep)),
            "changes_asked": ratio(sum(bool(r.get("asked")) for r in labelled), len(labelled))}


def run_contradiction(make_provider: Callable[[], MemoryProvider], cases: Iterable[Case],
                      progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    rows = []
    for case in cases:
        p = make_provider()
        try:
            rows.append(run_case(p, case))
        finally:
            p.close()
        if progress:
            progress(1)
    if rows and all(not r["decisions"] for r in rows):
        return {"metrics": {"applicable": False, "n": len(rows)}, "queries": rows, "timings": {}}
    return {"metrics": summarize(rows), "queries": rows, "timings": {}}


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``score`` overall, per language, category, batch and listed/unlisted attribute."""
    metrics: dict[str, Any] = {"applicable": True, **score(rows)}
    groups: dict[str, list] = defaultdict(list)
    for r in rows:
        groups[f"lang:{r['lang']}"].append(r)
        groups[f"cat:{r['category']}"].append(r)
        if r.get("listed") is not None:  # natural suite: attributes the rules know vs. the rest
            groups["attr:" + ("listed" if r["listed"] else "unlisted")].append(r)
            groups[f"lang:{r['lang']}/cat:{r['category']}"].append(r)
        if r.get("batch") is not None:
            groups[f"batch:{r['batch']}"].append(r)
    for g, rs in sorted(groups.items()):
        for k, v in score(rs).items():
            metrics[f"{g}/{k}"] = v
    return metrics
