"""One slot per source: a fact and the episodes it came from are one result.

A consolidated fact repeats what its source turn said; returning both spends
two of k slots on one sentence. The fact stands for the group (its text, its
source turns as provenance) with the best score of the group; an episode
whose facts did not make the candidate list stays on its own.

What a head stands for is kept: each result lists the memories folded into
it, best first, so the turns a fact absorbed (and a turn whose sentence an
earlier hit already said) are still reported as its sources. Dropping them
hid history: "When did Jon lose his job as a banker?" is answered by the
turn where he said so, which the fact "Jon opened a dance studio" had
superseded and absorbed.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Iterable, Mapping, Sequence

Group = tuple[str, float, tuple[str, ...]]


@lru_cache(maxsize=1 << 16)
def same_text(text: str) -> str:
    return " ".join(text.split()).lower()


def collapse_groups(scored: Sequence[tuple[str, float]], provenance: Mapping[str, Iterable[str]],
                    texts: Mapping[str, str] | None = None) -> list[Group]:
    """``scored`` is ranked (id, score); ``provenance`` maps a fact id to its
    source episode ids. Returns (head, score, members): members are the other
    candidates the head stands for, in ranking order. A later item whose text
    repeats an earlier head's exactly (``texts``) becomes a member of it, so
    no sentence appears twice."""
    owner: dict[str, str] = {}
    best: dict[str, float] = {}
    for rid, s in scored:
        for src in provenance.get(rid, ()):
            # the best-scored fact claims an episode first
            if src not in owner or best.get(owner[src], float("-inf")) < s:
                owner[src] = rid
                best[rid] = max(best.get(rid, float("-inf")), s)
    group_score: dict[str, float] = {}
    members: dict[str, list[str]] = {}
    for rid, s in scored:
        head = owner.get(rid, rid)
        group_score[head] = max(group_score.get(head, float("-inf")), s)
        if head != rid:
            members.setdefault(head, []).append(rid)
    by_text: dict[str, int] = {}
    out: list[list] = []
    for head, s in sorted(group_score.items(), key=lambda kv: (-kv[1], kv[0])):
        key = same_text(texts.get(head, head)) if texts else head
        if key in by_text:
            out[by_text[key]][2].extend([head, *members.get(head, ())])
            continue
        by_text[key] = len(out)
        out.append([head, s, list(members.get(head, ()))])
    return [(h, s, tuple(dict.fromkeys(m))) for h, s, m in out]


def collapse(scored: Sequence[tuple[str, float]], provenance: Mapping[str, Iterable[str]],
             texts: Mapping[str, str] | None = None) -> list[tuple[str, float]]:
    """``collapse_groups`` without the members: the ranked heads."""
    return [(h, s) for h, s, _ in collapse_groups(scored, provenance, texts)]
