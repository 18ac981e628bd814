"""LoCoMo evidence recall: does recall surface the turns that answer a question?

Protocol: per sample a fresh provider; every turn of every session is
encoded in order ("<speaker>: <text>", the turn id as ``source_id``, the
speaker as ``subject``) at its session's date plus one second per turn, and
the provider consolidates after each session. Then each question is recalled
(top 50) a day after the last session. A hit points at the turns it came from
(``source_ids``: the episode itself, or a fact's source episodes); the ranked
list of distinct turns is cut at k.

- evidence recall@k = |evidence turns among the first k turns| / |evidence|
- hit@k = 1 if any evidence turn is among the first k turns
- session level: the same over distinct sessions (turn D3:5 -> session 3)
Questions whose evidence is empty (after dropping ids of turns that do not
exist) are counted and left out. ``gated_turn_share`` and
``gated_evidence_share`` say how many turns, and how many evidence turns,
the provider declined to store (naia's importance gate). The LoCoMo paper's DRAGON retriever is the
reference row: turn-level R@5 56.7, R@10 66.2, R@25 76.7, R@50 82.7
(Maharana et al. 2024, Table 3).
"""
from __future__ import annotations

import time
from collections import defaultdict
from datetime import timedelta
from typing import Any, Callable, Iterable, Sequence

from datasets_loaders.locomo import CATEGORIES, LocomoSample
from naia_memory.contract import MemoryProvider, RecallHit, Role

DRAGON_TURN_RECALL = {5: 0.567, 10: 0.662, 25: 0.767, 50: 0.827}


def session_of(dia_id: str) -> str:
    return "S" + dia_id[1:].split(":", 1)[0]


def turns_from_hits(hits: Sequence[RecallHit] | Sequence[dict]) -> list[str]:
    """Distinct source turns in ranking order."""
    out: list[str] = []
    for h in hits:
        ids = h["source_ids"] if isinstance(h, dict) else h.metadata.get("source_ids", ())
        for sid in ids or ():
            if sid not in out:
                out.append(sid)
    return out


def evidence_recall(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    ev = set(evidence)
    return len(ev & set(ranked[:k])) / len(ev) if ev else 0.0


def hit_at(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    return 1.0 if set(evidence) & set(ranked[:k]) else 0.0


def run_locomo(
    make_provider: Callable[[], MemoryProvider],
    samples: Iterable[LocomoSample],
    *,
    top_ks: Sequence[int] = (5, 10, 25, 50),
    recall_k: int = 50,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    queries: list[dict[str, Any]] = []
    skipped = 0
    t_encode = t_recall = 0.0
    n_turns = 0
    gated: set[str] = set()  # turns the provider declined to store (the importance gate)
    for sample in samples:
        provider = make_provider()
        try:
            for sess in sample.sessions:
                for i, turn in enumerate(sess.turns):
                    if not turn.text:
                        continue
                    t = time.perf_counter()
                    res = provider.encode(content=f"{turn.speaker}: {turn.text}", role=Role.USER, session=f"S{sess.n}",
                                          now=sess.date + timedelta(seconds=i),
                                          metadata={"source_id": turn.dia_id, "subject": turn.speaker, "speaker": turn.speaker})
                    t_encode += time.perf_counter() - t
                    n_turns += 1
                    if not res.stored:
                        gated.add(f"{sample.sample_id}#{turn.dia_id}")
                provider.consolidate(now=sess.date + timedelta(seconds=len(sess.turns) + 1))
            ask_at = sample.sessions[-1].date + timedelta(days=1)
            place = placement(provider)
            for qi, qa in enumerate(sample.qa):
                if not qa.evidence:
                    skipped += 1
                    continue
                t = time.perf_counter()
                res = provider.recall(query=qa.question, top_k=recall_k, now=ask_at)
                t_recall += time.perf_counter() - t
                queries.append({
                    "query_id": f"{sample.sample_id}#{qi}", "sample": sample.sample_id, "category": qa.category,
                    "question": qa.question, "evidence": list(qa.evidence),
                    "ranking": [{"id": h.id, "kind": h.kind.value, "score": h.score,
                                 "source_ids": list(h.metadata.get("source_ids", ()))} for h in res.hits],
                })
                if place is not None:  # where the hits and the gold turns sit in the hierarchy
                    queries[-1]["places"] = {"gold": [place["turns"][e] for e in qa.evidence if e in place["turns"]],
                                             "hits": [place["ids"].get(h.id) for h in res.hits]}
        finally:
            provider.close()
        if progress:
            progress(1)
    metrics = score_locomo(queries, top_ks)
    metrics.update(context_leakage(queries, top_ks))
    metrics["skipped_no_evidence"] = skipped
    evidence = {f"{q['sample']}#{e}" for q in queries for e in q["evidence"]}
    metrics["gated_turn_share"] = len(gated) / max(1, n_turns)
    metrics["gated_evidence_share"] = len(evidence & gated) / max(1, len(evidence))
    timings = {"encode_s": t_encode, "recall_s": t_recall, "turns": n_turns, "queries": len(queries),
               "encode_ms_per_turn": 1e3 * t_encode / max(1, n_turns), "recall_ms_per_query": 1e3 * t_recall / max(1, len(queries))}
    return {"metrics": metrics, "queries": queries, "timings": timings}


def placement(provider: Any) -> dict[str, dict] | None:
    """Each memory's and each turn's (category, topic) in a naia provider's
    hierarchy, when it has placed them; None otherwise (no hierarchy)."""
    store = getattr(provider, "store", None)
    if store is None or not getattr(getattr(provider, "hierarchy", None), "on", False):
        return None
    ids: dict[str, list[str]] = {}
    turns: dict[str, list[str]] = {}
    for r in store.records(None):
        p = r.metadata.get("path")
        if isinstance(p, (list, tuple)) and len(p) == 3:
            ids[r.id] = [str(p[1]), str(p[2])]
            if r.kind.value == "episode" and r.metadata.get("source_id") is not None:
                turns[str(r.metadata["source_id"])] = [str(p[1]), str(p[2])]
    return {"ids": ids, "turns": turns}


def context_leakage(queries: list[dict[str, Any]], top_ks: Sequence[int]) -> dict[str, float]:
    """HGVM's context leakage: of the top-k hits placed in the hierarchy, the
    share from a category (a topic) that none of the question's gold turns is
    in. Only questions whose gold turns are placed count; empty without a hierarchy."""
    placed = [q for q in queries if q.get("places") and q["places"]["gold"]]
    if not placed:
        return {}
    out: dict[str, float] = {"context_leakage/n": float(len(placed))}
    for level, name in ((0, "category"), (1, "topic")):
        for k in top_ks:
            shares = []
            for q in placed:
                gold = {g[level] for g in q["places"]["gold"]}
                hits = [h[level] for h in q["places"]["hits"][:k] if h is not None]
                if hits:
                    shares.append(sum(1 for h in hits if h not in gold) / len(hits))
            out[f"context_leakage/{name}@{k}"] = sum(shares) / max(1, len(shares))
    return out


def score_locomo(queries: list[dict[str, Any]], top_ks: Sequence[int]) -> dict[str, Any]:
    m: dict[str, Any] = {"n_queries": len(queries)}
    by_cat: dict[int, list[dict]] = defaultdict(list)
    for q in queries:
        by_cat[q["category"]].append(q)
    by_sample: dict[str, list[dict]] = defaultdict(list)
    for q in queries:
        if q.get("sample") is not None:
            by_sample[q["sample"]].append(q)
    # per conversation too (``sample:conv-26/turn_recall@10``): LoCoMo has only ten
    # conversations, so a gain carried by one of them should be visible, not averaged away
    groups = {"all": queries, **{f"cat{c}-{CATEGORIES.get(c, c)}": qs for c, qs in sorted(by_cat.items())},
              **{f"sample:{s}": qs for s, qs in by_sample.items()}}
    for gname, qs in groups.items():
        m[f"{gname}/n"] = len(qs)
        for k in top_ks:
            turn_r, turn_h, sess_r, sess_h = [], [], [], []
            for q in qs:
                turns = turns_from_hits(q["ranking"])
                sessions = list(dict.fromkeys(session_of(t) for t in turns))
                ev_sessions = list(dict.fromkeys(session_of(e) for e in q["evidence"]))
                turn_r.append(evidence_recall(turns, q["evidence"], k))
                turn_h.append(hit_at(turns, q["evidence"], k))
                sess_r.append(evidence_recall(sessions, ev_sessions, k))
                sess_h.append(hit_at(sessions, ev_sessions, k))
            n = max(1, len(qs))
            m[f"{gname}/turn_recall@{k}"] = sum(turn_r) / n
            m[f"{gname}/turn_hit@{k}"] = sum(turn_h) / n
            m[f"{gname}/session_recall@{k}"] = sum(sess_r) / n
            m[f"{gname}/session_hit@{k}"] = sum(sess_h) / n
    return m


def per_query_turn_recall(queries: list[dict[str, Any]], k: int) -> dict[str, float]:
    return {q["query_id"]: evidence_recall(turns_from_hits(q["ranking"]), q["evidence"], k) for q in queries}
