"""AIHub-141 recall@k, the reference protocol (``shared/data/aihub141/SCHEMA.md``).

Per conversation: a fresh provider. For each session in order: if nth >= 2
and the user (speaker1) has earlier facts, query once with the fixed string
and score recall@k against ``prevAggregatedpersonaSummary.speaker1``; then
encode every turn ("User: ..." / "Other: ..." at its +09:00 timestamp) and
consolidate. The precision side (of the k returned items, how many match any
gold fact) keeps a system from winning the lenient matcher by returning
everything.
"""
from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from datasets_loaders.aihub141 import USER_SPEAKER, Conversation
from naia_memory.contract import MemoryProvider, Role
from naia_memory.embedders.base import Embedder

from ..matchers import TEXT_MATCHERS, embedding_match

QUERY = "사용자에 대해 알고 있는 모든 사실"
MATCHERS = ("keyword", "polarity", "hard", "embedding")


def turn_text(speaker: str, utterance: str) -> tuple[str, Role]:
    if speaker == USER_SPEAKER:
        return f"User: {utterance}", Role.USER
    return f"Other: {utterance}", Role.ASSISTANT


def run_aihub141(
    make_provider: Callable[[], MemoryProvider],
    conversations: Iterable[Conversation],
    *,
    top_ks: Sequence[int] = (5, 10, 20),
    match_embedder: Embedder,
    threshold: float,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    k_max = max(top_ks)
    queries: list[dict[str, Any]] = []
    t_encode = t_recall = t_consolidate = 0.0
    n_turns = 0
    for conv in conversations:
        provider = make_provider()
        try:
            for sess in conv.sessions:
                if sess.nth >= 2 and sess.prev_user_facts:
                    now = sess.turns[0].timestamp if sess.turns else None
                    t = time.perf_counter()
                    res = provider.recall(query=QUERY, top_k=k_max, now=now)
                    t_recall += time.perf_counter() - t
                    queries.append({
                        "query_id": f"{conv.conversation_id}#{sess.nth}", "conversation": conv.conversation_id, "nth": sess.nth,
                        "gold": list(sess.prev_user_facts),
                        "ranking": [{"id": h.id, "kind": h.kind.value, "content": h.content, "score": h.score} for h in res.hits],
                    })
                for turn in sess.turns:
                    if not turn.utterance.strip():
                        continue
                    text, role = turn_text(turn.speaker, turn.utterance)
                    t = time.perf_counter()
                    provider.encode(content=text, role=role, session=sess.session_id, now=turn.timestamp)
                    t_encode += time.perf_counter() - t
                    n_turns += 1
                t = time.perf_counter()
                provider.consolidate(now=sess.turns[-1].timestamp if sess.turns else None)
                t_consolidate += time.perf_counter() - t
        finally:
            provider.close()
        if progress:
            progress(1)
    metrics = score_queries(queries, top_ks, match_embedder, threshold)
    timings = {"encode_s": t_encode, "recall_s": t_recall, "consolidate_s": t_consolidate, "turns": n_turns,
               "queries": len(queries), "encode_ms_per_turn": 1e3 * t_encode / max(1, n_turns),
               "recall_ms_per_query": 1e3 * t_recall / max(1, len(queries))}
    return {"metrics": metrics, "queries": queries, "timings": timings}


def _match_table(q: dict[str, Any], k: int, embedder: Embedder, threshold: float, cache: dict) -> dict[str, tuple[list[bool], list[bool]]]:
    """Per matcher: (gold fact matched?, returned item matches any gold?)."""
    texts = [h["content"] for h in q["ranking"][:k]]
    gold = q["gold"]
    out = {}
    for name, fn in TEXT_MATCHERS.items():
        out[name] = ([fn(g, texts) for g in gold], [any(fn(g, [t]) for g in gold) for t in texts])
    gv = _embed(gold, embedder, cache)
    tv = _embed(texts, embedder, cache)
    sims = tv @ gv.T if len(texts) else np.zeros((0, len(gold)))
    out["embedding"] = ([embedding_match(gv[i], tv, threshold) for i in range(len(gold))],
                        [bool((sims[j] >= threshold).any()) for j in range(len(texts))])
    return out


def _embed(texts: list[str], embedder: Embedder, cache: dict) -> np.ndarray:
    missing = [t for t in dict.fromkeys(texts) if t not in cache]
    if missing:
        for t, v in zip(missing, embedder.embed_passages(missing)):
            cache[t] = v
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return np.stack([cache[t] for t in texts])


def score_queries(queries: list[dict[str, Any]], top_ks: Sequence[int], embedder: Embedder, threshold: float) -> dict[str, Any]:
    """recall@k (micro, macro, by nth) and precision@k for each matcher."""
    cache: dict[str, np.ndarray] = {}
    metrics: dict[str, Any] = {"embedding_threshold": threshold, "embedding_matcher_model": embedder.name,
                               "n_queries": len(queries), "n_gold": sum(len(q["gold"]) for q in queries)}
    for k in top_ks:
        agg = {m: {"matched": 0, "gold": 0, "macro": [], "prec_hits": 0, "prec_n": 0, "by_nth": defaultdict(lambda: [0, 0])} for m in MATCHERS}
        for q in queries:
            table = _match_table(q, k, embedder, threshold, cache)
            for m, (gold_hits, item_hits) in table.items():
                a = agg[m]
                a["matched"] += sum(gold_hits)
                a["gold"] += len(gold_hits)
                if gold_hits:  # a question with no gold fact has no recall (undefined, not 0)
                    a["macro"].append(sum(gold_hits) / len(gold_hits))
                a["prec_hits"] += sum(item_hits)
                a["prec_n"] += k  # an empty or short list is charged for its missing items
                a["by_nth"][q["nth"]][0] += sum(gold_hits)
                a["by_nth"][q["nth"]][1] += len(gold_hits)
        for m, a in agg.items():
            metrics[f"{m}/recall@{k}"] = a["matched"] / a["gold"] if a["gold"] else None  # undefined: null, "n/a"
            metrics[f"{m}/macro_recall@{k}"] = float(np.mean(a["macro"])) if a["macro"] else None
            metrics[f"{m}/precision@{k}"] = a["prec_hits"] / a["prec_n"] if a["prec_n"] else None
            for nth, (mt, g) in sorted(a["by_nth"].items()):
                metrics[f"{m}/recall@{k}/nth{nth}"] = mt / g if g else None
    return metrics


def per_query_recall(queries: list[dict[str, Any]], k: int, matcher: str, embedder: Embedder, threshold: float) -> dict[str, float]:
    """Recall@k of one matcher for each query (the unit of paired comparisons)."""
    cache: dict[str, np.ndarray] = {}
    out = {}
    for q in queries:
        gold_hits, _ = _match_table(q, k, embedder, threshold, cache)[matcher]
        out[q["query_id"]] = sum(gold_hits) / len(gold_hits) if gold_hits else 0.0
    return out
