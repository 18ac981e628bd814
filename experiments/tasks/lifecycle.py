"""Memory lifecycle: after every change, is the current value on top, and
is a stale or deleted value still returned as if true?

A returned text *asserts* a value when it contains it, is not negated, and
does not also name the current value (so "은행 그만두고 게임 회사에 다녀"
asserts the new job, not the old one).
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterable

from naia_memory.cognition.contradiction import is_negated
from naia_memory.contract import MemoryProvider, Role

from ..suites.lifecycle_scripts import CHATTER, Script

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=timezone.utc)


def _has(text: str, value: str) -> bool:
    return value.lower() in text.lower()


def asserts(text: str, value: str, current: str | None, enders: Iterable[str] = ()) -> bool:
    """``enders``: what the user said that replaced or ended ``value`` ("Sold the
    Civic, I'm driving a Model 3 now"); returning it, or a sentence of it, tells
    the change, it does not assert the old value."""
    t = " ".join(text.split())
    if any(t and (t in " ".join(e.split()) or " ".join(e.split()) in t) for e in enders):
        return False
    return _has(text, value) and not is_negated(text) and not (current and _has(text, current))


def _rates(probes: list[dict[str, Any]], top_k: int) -> dict[str, float]:
    def rate(key):
        vals = [q[key] for q in probes if q[key] is not None]
        return sum(vals) / len(vals) if vals else None  # no probe of that kind: undefined, not the best score
    return {"n_probes": len(probes), "current@1": rate("current_top1"), f"current@{top_k}": rate("current_topk"),
            "stale_returned_rate": rate("stale_returned"), "deleted_returned_rate": rate("deleted_returned")}


def answer_doubts(p: Any, said: str, ended: set[str], now: datetime) -> tuple[int, int]:
    """The user of the script answers every question the memory asks
    (``MemorySystem.doubts``) as they would: a doubt about what they just
    said is settled with the fact that names a value it ended, any other
    with "none of them". Returns (questions, settled as a change)."""
    asked = changed = 0
    for d in p.doubts(limit=None):
        hit = next((i for i, text in d.facts if d.said == said and any(_has(text, v) for v in ended)), None)
        p.settle(memory_id=d.fact_id, replaces=hit, now=now)
        asked, changed = asked + 1, changed + (hit is not None)
    return asked, changed


def run_lifecycle(make_provider: Callable[[], MemoryProvider], scripts: Iterable[Script], *, top_k: int = 5,
                  settle_doubts: bool = False, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """``settle_doubts``: after each consolidation the script's user answers the
    memory's questions (providers that ask: naia's ``doubts``), truthfully."""
    probes, questions, settled = [], 0, 0
    for script in scripts:
        p = make_provider()
        try:
            chatter = CHATTER[script.lang]
            enders: dict[str, list[str]] = {}  # value -> the utterances that replaced or ended it
            for n, step in enumerate(script.steps):
                for v in (*step.stale, *step.deleted):
                    if n and (v not in script.steps[n - 1].stale and v not in script.steps[n - 1].deleted):
                        enders.setdefault(v, []).append(step.say)
                day = T0 + timedelta(days=step.day)
                for j, c in enumerate(chatter[n % len(chatter):] + chatter[: n % len(chatter)]):
                    if j == 2:
                        p.encode(content=step.say, role=Role.USER, now=day + timedelta(minutes=j))
                    p.encode(content=c, role=Role.USER, now=day + timedelta(minutes=j, seconds=30))
                p.consolidate(now=day + timedelta(hours=1))
                if settle_doubts and hasattr(p, "doubts"):
                    before = script.steps[n - 1] if n else None
                    ended = {v for v in (*step.stale, *step.deleted)
                             if before is None or (v not in before.stale and v not in before.deleted)}
                    a, c = answer_doubts(p, step.say, ended, day + timedelta(hours=1, minutes=30))
                    questions, settled = questions + a, settled + c
                res = p.recall(query=step.query, top_k=top_k, now=day + timedelta(hours=2))
                texts = res.contents()
                probes.append({
                    "query_id": f"{script.script_id}#{n}", "script": script.script_id, "lang": script.lang,
                    "batch": getattr(script, "batch", None), "query": step.query,
                    "current": step.current, "stale": list(step.stale), "deleted": list(step.deleted), "returned": texts,
                    "current_top1": None if step.current is None else bool(texts) and _has(texts[0], step.current),
                    "current_topk": None if step.current is None else any(_has(t, step.current) for t in texts),
                    "stale_returned": any(asserts(t, v, step.current, enders.get(v, ())) for t in texts for v in step.stale) if step.stale else None,
                    "deleted_returned": any(asserts(t, v, step.current, enders.get(v, ())) for t in texts for v in step.deleted) if step.deleted else None,
                })
        finally:
            p.close()
        if progress:
            progress(1)
    metrics = _rates(probes, top_k)
    if settle_doubts:
        metrics.update(questions_answered=questions, settled_as_change=settled)
    for key in ("lang", "batch"):  # per language, and per written batch of the natural suite
        for g in sorted({q[key] for q in probes if q[key] is not None}, key=str):
            metrics.update({f"{key}:{g}/{k}": v for k, v in _rates([q for q in probes if q[key] == g], top_k).items()})
    return {"metrics": metrics, "queries": probes, "timings": {}}
