"""One slot per source: a fact and the episodes it came from are one result.

A consolidated fact repeats what its source turn said; returning both spends
two of k slots on one sentence. The fact stands for the group (its text, its
source turns as provenance) with the best score of the group; an episode
whose facts did not make the candidate list stays on its own.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence


def collapse(scored: Sequence[tuple[str, float]], provenance: Mapping[str, Iterable[str]],
             texts: Mapping[str, str] | None = None) -> list[tuple[str, float]]:
    """``scored`` is ranked (id, score); ``provenance`` maps a fact id to its
    source episode ids. Also drops later items whose text repeats an earlier
    one exactly (``texts``), so no sentence appears twice."""
    owner: dict[str, str] = {}
    best: dict[str, float] = {}
    for rid, s in scored:
        for src in provenance.get(rid, ()):
            # the best-scored fact claims an episode first
            if src not in owner or best.get(owner[src], float("-inf")) < s:
                owner[src] = rid
                best[rid] = max(best.get(rid, float("-inf")), s)
    group_score: dict[str, float] = {}
    for rid, s in scored:
        head = owner.get(rid, rid)
        group_score[head] = max(group_score.get(head, float("-inf")), s)
    seen_text: set[str] = set()
    out: list[tuple[str, float]] = []
    for head, s in sorted(group_score.items(), key=lambda kv: (-kv[1], kv[0])):
        key = " ".join((texts or {}).get(head, head).split()).lower() if texts else head
        if key in seen_text:
            continue
        seen_text.add(key)
        out.append((head, s))
    return out
