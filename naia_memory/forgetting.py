"""Forgetting on request: what the user forgets takes with it everything made
from it, and no words of it stay behind (issue 10).

A fact repeats the turns it came from, so forgetting a turn forgets the facts
that have no other source, and forgetting a fact forgets the turns that said
it (else recall would still answer with the turn). Memories that stay lose
their links to what went (provenance, supersede pointers, stale marks), the
entity graph gives back the edges and words only forgotten facts put there,
and the decision log keeps ids and operations but no text of them.
"""
from __future__ import annotations

from itertools import combinations
from typing import Iterable

from .cognition.graph import EntityGraph
from .contract import MemoryKind
from .records import MemoryRecord

_LINK_KEYS = ("stale_fact", "refines", "summarized_by")
# what a fact ended by a turn keeps when that turn is forgotten: that a turn ended it (the decision stays
# listed and can be taken back, ``review.py``), not which one
FORGOTTEN_TURN = "forgotten"


def forget_closure(records: Iterable[MemoryRecord], seeds: Iterable[str]) -> set[str]:
    """The ids to forget: the seeds, the turns a forgotten fact came from, and
    every fact whose sources are all forgotten (to a fixed point)."""
    by_id = {r.id: r for r in records}
    facts_citing: dict[str, list[str]] = {}
    for r in by_id.values():
        if r.kind is MemoryKind.FACT:
            for src in r.provenance:
                facts_citing.setdefault(src, []).append(r.id)
    gone: set[str] = set()
    todo = [i for i in seeds if i in by_id]
    while todo:
        i = todo.pop()
        if i in gone:
            continue
        gone.add(i)
        r = by_id[i]
        if r.derived:
            continue  # a summary or reflection goes alone: what it stands on stays
        if r.kind is MemoryKind.FACT:
            todo.extend(p for p in r.provenance if p in by_id)
        for f in facts_citing.get(i, ()):
            if f not in gone and not by_id[f].derived and all(p in gone or p not in by_id for p in by_id[f].provenance):
                todo.append(f)
    # a summary or reflection quotes what it stands on: one forgotten source takes it too
    for r in by_id.values():
        if r.derived and r.id not in gone and gone & derived_links(r):
            gone.add(r.id)
    return gone


def derived_links(r: MemoryRecord) -> set[str]:
    """Every memory a summary or reflection stands on: its turns, facts and
    evidence, and what its writer was shown (a model may quote a memory it
    does not cite)."""
    return set(r.provenance) | set(r.metadata.get("summarizes", ())) | set(r.metadata.get("evidence", ())) \
        | set(r.metadata.get("offered", ()))


def unlink(r: MemoryRecord, gone: set[str], source_ids_of: dict[str, list[str]]) -> bool:
    """Drop a staying memory's references to forgotten ones; True if it changed.
    A fact's caller-side source ids are recomputed from the sources it keeps."""
    changed = False
    if any(p in gone for p in r.provenance):
        r.provenance = [p for p in r.provenance if p not in gone]
        if "source_ids" in r.metadata:
            r.metadata["source_ids"] = sorted({s for p in r.provenance for s in source_ids_of.get(p, [])})
        changed = True
    for key in _LINK_KEYS:
        if r.metadata.get(key) in gone:
            del r.metadata[key]
            changed = True
    if any(i in gone for i in r.metadata.get("doubts", ())):
        r.metadata["doubts"] = [i for i in r.metadata["doubts"] if i not in gone]
        if not r.metadata["doubts"]:
            del r.metadata["doubts"]
        changed = True
    if r.metadata.get("superseded_by_episode") in gone:
        r.metadata["superseded_by_episode"] = FORGOTTEN_TURN
        changed = True
    if r.supersedes in gone:
        r.supersedes = None
        changed = True
    if r.superseded_by in gone:
        r.superseded_by = None
        changed = True
    return changed


def give_back_edges(graph: EntityGraph, forgotten_facts: Iterable[MemoryRecord],
                    facts_with: "callable[[str], set[str]]") -> None:
    """Each forgotten fact added 1 to the edges among its words; take that
    back, remove edges no staying fact has both words of, and words no
    staying fact has. ``facts_with(word)``: the staying facts with that word."""
    lost: dict[tuple[str, str], int] = {}
    words: set[str] = set()
    for f in forgotten_facts:
        uniq = sorted(set(f.entities))
        words.update(uniq)
        for a, b in combinations(uniq, 2):
            lost[(a, b)] = lost.get((a, b), 0) + 1
    holders = {w: facts_with(w) for w in words}
    for (a, b), n in sorted(lost.items()):
        if not holders[a] or not holders[b]:
            continue  # the word goes below, with its edges
        w = graph.edges.get((a, b))
        if w is None:
            continue
        graph.set_edge(a, b, w - n if holders[a] & holders[b] and w - n > 0 else None)
    for word in sorted(words):
        if not holders[word]:
            graph.drop_node(word)
