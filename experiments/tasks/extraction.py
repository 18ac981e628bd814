"""Fact extraction coverage on labelled natural statements.

Each statement is told to a fresh provider, which then consolidates. A
declarative statement (about the user or a person they name) is *covered*
when consolidation turns it into at least one fact (an ADD, UPDATE or NOOP
decision); a statement that is not one (a question, greeting, filler,
hypothetical, request, small talk) should produce none, and its refusal
should be logged with a reason (a SKIP decision, or the importance gate
declining to store it). For covered statements the fact's subject is
checked against the label, and a labelled time expression should come back
resolved (a ``when`` window on the fact).

Metrics: coverage, rejection (non-declarative without a fact), refusals
logged, subject accuracy, time resolved; per language and per reason.
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone
from typing import Any, Callable, Iterable

from naia_memory.contract import DecisionOp, MemoryProvider, Role

from ..suites.natural import LabelledStatement
from .contradiction import ratio

T0 = datetime(2025, 5, 8, 14, 0, tzinfo=timezone.utc)
_FACT_OPS = (DecisionOp.ADD, DecisionOp.UPDATE, DecisionOp.NOOP)


def _norm(s: str) -> str:
    return "".join(str(s).lower().split())


def subject_matches(label: str, got: str) -> bool:
    """"user" must be the user; a named person matches when either name contains
    the other ("Maya" ~ "user/maya", "언니" ~ "user/언니")."""
    if _norm(label) == "user":
        return _norm(got) == "user"
    tail = _norm(got).split("/")[-1]
    lab = _norm(label)
    return tail != "user" and bool(tail) and (lab in tail or tail in lab)


def run_case(provider: MemoryProvider, st: LabelledStatement) -> dict[str, Any]:
    res = provider.encode(content=st.text, role=Role.USER, now=T0)
    rep = provider.consolidate(now=T0.replace(minute=5))
    facts = [d for d in rep.decisions if d.op in _FACT_OPS]
    skips = [d for d in rep.decisions if d.op.value == "SKIP"]
    subjects: list[str] = []
    resolved = False
    lister = getattr(provider, "facts", None)
    if facts and callable(lister):
        for h in lister():
            subjects.append(str(h.metadata.get("subject", "user")))
            resolved = resolved or bool(h.metadata.get("when"))
    return {
        "case_id": st.id, "lang": st.lang, "split": st.split, "batch": getattr(st, "batch", None), "text": st.text, "declarative": st.declarative,
        "why_not": st.why_not, "subject": st.subject, "time": st.time,
        "stored": res.stored, "gate_reason": None if res.stored else res.reason,
        "facts": [d.candidate for d in facts], "fact_subjects": subjects,
        "skips": [(d.candidate, d.reason) for d in skips],
        "covered": bool(facts), "time_resolved": resolved,
        "subject_ok": any(subject_matches(st.subject, s) for s in subjects) if (facts and st.subject and subjects) else None,
    }


def score(rows: list[dict[str, Any]]) -> dict[str, float]:
    dec = [r for r in rows if r["declarative"]]
    non = [r for r in rows if not r["declarative"]]
    timed = [r for r in dec if r["time"] and r["covered"]]
    subj = [r for r in dec if r["subject_ok"] is not None]
    return {
        "n": len(rows), "n_declarative": len(dec), "n_other": len(non),
        # None where nothing is under the ratio (a group with no declarative statement has no coverage)
        "coverage": ratio(sum(r["covered"] for r in dec), len(dec)),
        "rejection": ratio(sum(not r["covered"] for r in non), len(non)),
        "refusal_logged": ratio(sum(bool(r["skips"]) or not r["stored"] for r in non if not r["covered"]),
                                sum(not r["covered"] for r in non)),
        "subject_accuracy": ratio(sum(bool(r["subject_ok"]) for r in subj), len(subj)),
        "time_resolved": ratio(sum(r["time_resolved"] for r in timed), len(timed)),
    }


def run_extraction(make_provider: Callable[[], MemoryProvider], items: Iterable[LabelledStatement],
                   progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    rows = []
    for st in items:
        p = make_provider()
        try:
            rows.append(run_case(p, st))
        finally:
            p.close()
        if progress:
            progress(1)
    if rows and all(not r["facts"] and not r["skips"] for r in rows):
        return {"metrics": {"applicable": False, "n": len(rows), "reason": "consolidation reports no decisions"},
                "queries": rows, "timings": {}}
    metrics: dict[str, Any] = {"applicable": True, **score(rows)}
    groups: dict[str, list] = defaultdict(list)
    for r in rows:
        groups[f"lang:{r['lang']}"].append(r)
        if r.get("batch") is not None:
            groups[f"batch:{r['batch']}"].append(r)
        groups[f"label:{'declarative' if r['declarative'] else r['why_not']}"].append(r)
    for g, rs in sorted(groups.items()):
        for k, v in score(rs).items():
            metrics[f"{g}/{k}"] = v
    return {"metrics": metrics, "queries": rows, "timings": {}}
