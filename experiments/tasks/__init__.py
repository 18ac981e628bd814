"""Experiments own their data and metrics; a provider only answers.

Each runner takes a provider factory (a fresh provider per conversation or
case) and returns ``{"metrics", "queries", "timings"}``; ``unit_scores``
turns the stored per-query rows back into one number per query, the unit of
paired comparisons, with the cluster (conversation) it belongs to.
"""
from __future__ import annotations

from typing import Any, Callable

from naia_memory.contract import MemoryProvider

EXPERIMENTS = ("aihub141", "locomo", "contradiction", "lifecycle", "extraction")


def run_experiment(name: str, factory: Callable[[], MemoryProvider], data: Any, exp: dict[str, Any],
                   ctx: dict[str, Any], progress: Callable[[int], None] | None) -> dict[str, Any]:
    if name == "aihub141":
        from .aihub141 import run_aihub141

        return run_aihub141(factory, data, top_ks=exp["top_ks"], match_embedder=ctx["match_embedder"],
                            threshold=ctx["threshold"], progress=progress)
    if name == "locomo":
        from .locomo import run_locomo

        return run_locomo(factory, data, top_ks=exp["top_ks"], recall_k=max(exp["top_ks"]), progress=progress)
    if name == "contradiction":
        from .contradiction import run_contradiction

        return run_contradiction(factory, data, progress=progress)
    if name == "extraction":
        from .extraction import run_extraction

        return run_extraction(factory, data, progress=progress)
    if name == "lifecycle":
        from .lifecycle import run_lifecycle

        return run_lifecycle(factory, data, top_k=exp.get("top_k", 5), settle_doubts=bool(exp.get("settle_doubts", False)),
                             progress=progress)
    raise ValueError(f"unknown experiment {name!r}; known: {EXPERIMENTS}")


def unit_scores(name: str, queries: list[dict[str, Any]], exp: dict[str, Any], ctx: dict[str, Any]) -> dict[str, tuple[str, float]]:
    """query_id -> (cluster, score) for the experiment's headline per-query metric."""
    if name == "aihub141":
        from .aihub141 import per_query_recall

        k = exp.get("ablation_k", 10)
        vals = per_query_recall(queries, k, exp.get("ablation_matcher", "embedding"), ctx["match_embedder"], ctx["threshold"])
        return {q["query_id"]: (q["conversation"], vals[q["query_id"]]) for q in queries}
    if name == "locomo":
        from .locomo import per_query_turn_recall

        vals = per_query_turn_recall(queries, exp.get("ablation_k", 10))
        return {q["query_id"]: (q["sample"], vals[q["query_id"]]) for q in queries}
    if name == "contradiction":
        return {q["case_id"]: (q["category"], float(q["predicted"] == q["expected"] and (q["expected"] == "keep" or bool(q["correct_target"]))))
                for q in queries}
    if name == "extraction":
        return {q["case_id"]: (q["lang"], float(q["covered"] == q["declarative"])) for q in queries}
    if name == "lifecycle":
        return {q["query_id"]: (q["script"], float(bool(q["current_top1"]) if q["current"] is not None else not q["deleted_returned"]))
                for q in queries}
    raise ValueError(name)


def headline(name: str, exp: dict[str, Any]) -> str:
    return {"aihub141": f"{exp.get('ablation_matcher', 'embedding')}/recall@{exp.get('ablation_k', 10)}",
            "locomo": f"turn_recall@{exp.get('ablation_k', 10)}", "contradiction": "accuracy",
            "lifecycle": "current@1 (or deleted not returned)",
            "extraction": "statement handled as labelled (fact iff declarative)"}[name]
