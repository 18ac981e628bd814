"""HGVM's hierarchy: Domain -> Category -> Topic -> memory (pure functions).

A memory joins the topic whose centroid is nearest when it is close enough;
otherwise it opens a topic, placed one level up the same way (the nearest
category close enough, else a new category in the nearest domain close
enough, else a new domain). Centroids are running means of the members'
unit vectors, so placing is O(nodes) and never revisits old memories.
Routing reads the tree top-down: the domains a query is close to, then the
best categories inside them; the topics under those are where the search
runs. A query close to no domain is not routed (the caller searches flat).
"""
from __future__ import annotations

import secrets
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

LEVELS = ("domain", "category", "topic")


@dataclass(frozen=True)
class Thresholds:
    """Cosine similarity needed to join a node at each level, and for a query
    to be routed at all (``route``); ``categories``: how many categories a
    routed query searches."""

    topic: float
    category: float
    domain: float
    route: float
    categories: int = 3
    margin: float = 0.05  # a domain within this of the best is searched too


@dataclass
class Node:
    id: str
    level: str
    parent: str | None
    total: np.ndarray
    count: int = 0
    words: Counter = field(default_factory=Counter)

    def centroid(self) -> np.ndarray:
        n = float(np.linalg.norm(self.total))
        return self.total / n if n > 0 else self.total

    def label(self, k: int = 3) -> str:
        return top_words(self.words, k)


def top_words(words: Counter, k: int = 3) -> str:
    """The ``k`` most frequent words, ties alphabetical: a topic's label, a summary's."""
    return ", ".join(w for w, _ in sorted(words.items(), key=lambda kv: (-kv[1], kv[0]))[:k])


def node_number(nid: str) -> int:
    """The counter part of a node id ("t7.3fa2c1" -> 7; ids stored before the tag: "t7" -> 7)."""
    digits = nid[1:].partition(".")[0]
    return int(digits) if digits.isdigit() else 0


def _unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


class Tree:
    """One project's hierarchy."""

    def __init__(self, dim: int, centred: bool = False) -> None:
        """``centred``: compare after taking the mean of every placed memory
        away from both sides. Small multilingual encoders put every sentence
        in a narrow cone (e5-small: unrelated pairs at cosine 0.75-0.80), and
        the shared direction, not the topic, then decides; centring leaves
        what tells memories apart."""
        self.dim = dim
        self.centred = centred
        self.nodes: dict[str, Node] = {}
        self._next = {level: 0 for level in LEVELS}

    def new(self, level: str, parent: str | None) -> str:
        """A node id no other writer can mint: a counter for reading order and
        a random tag, since two processes writing one store each count from
        what they loaded (both would have made "t7" for different topics)."""
        self._next[level] += 1
        nid = f"{level[0]}{self._next[level]}.{secrets.token_hex(3)}"
        while nid in self.nodes:
            nid = f"{level[0]}{self._next[level]}.{secrets.token_hex(3)}"
        self.nodes[nid] = Node(nid, level, parent, np.zeros(self.dim))
        return nid

    def adopt(self, path: tuple[str, str, str]) -> None:
        """Nodes named by a stored path (a reopen), created as needed."""
        parent = None
        for level, nid in zip(LEVELS, path):
            if nid not in self.nodes:
                self.nodes[nid] = Node(nid, level, parent, np.zeros(self.dim))
                self._next[level] = max(self._next[level], node_number(nid))
            parent = nid

    def add(self, path: tuple[str, str, str], vec: np.ndarray, words: Iterable[str] = ()) -> None:
        u = _unit(vec)
        ws = list(words)
        for nid in path:
            node = self.nodes[nid]
            node.total = node.total + u
            node.count += 1
            node.words.update(ws)

    def remove(self, path: tuple[str, str, str], vec: np.ndarray, words: Iterable[str] = ()) -> None:
        u = _unit(vec)
        ws = list(words)
        for nid in path:
            node = self.nodes.get(nid)
            if node is None:
                continue
            node.total = node.total - u
            node.count -= 1
            node.words.subtract(ws)
            node.words += Counter()  # drop counts that reached zero

    def ranked(self, level: str, vec: np.ndarray, parents: set[str] | None = None) -> list[tuple[str, float]]:
        """Nodes of ``level`` (under ``parents``), nearest first."""
        nodes = [n for n in self.nodes.values() if n.level == level and n.count > 0 and (parents is None or n.parent in parents)]
        if not nodes:
            return []
        if self.centred:
            mean = self.mean()
            cents = np.stack([n.total / n.count for n in nodes]) - mean
            q = _unit(vec) - mean
            norms = np.linalg.norm(cents, axis=1) * max(float(np.linalg.norm(q)), 1e-12)
            sims = (cents @ q) / np.maximum(norms, 1e-12)
        else:
            sims = np.stack([n.centroid() for n in nodes]) @ _unit(vec)
        return sorted(zip((n.id for n in nodes), sims.tolist()), key=lambda kv: (-kv[1], kv[0]))

    def mean(self) -> np.ndarray:
        """The mean unit vector of every memory placed (the domains hold them all)."""
        doms = [n for n in self.nodes.values() if n.level == "domain" and n.count > 0]
        count = sum(n.count for n in doms)
        return sum((n.total for n in doms), np.zeros(self.dim)) / count if count else np.zeros(self.dim)

    def path_of(self, topic: str) -> tuple[str, str, str]:
        cat = self.nodes[topic].parent
        return (self.nodes[cat].parent, cat, topic)

    def topics_under(self, categories: set[str]) -> frozenset[str]:
        return frozenset(n.id for n in self.nodes.values() if n.level == "topic" and n.parent in categories)


def place(tree: Tree, vec: np.ndarray, th: Thresholds, words: Iterable[str] = ()) -> tuple[str, str, str]:
    """The (domain, category, topic) a memory joins; the tree learns it."""
    best = tree.ranked("topic", vec)
    if best and best[0][1] >= th.topic:
        path = tree.path_of(best[0][0])
    else:
        cats = tree.ranked("category", vec)
        if cats and cats[0][1] >= th.category:
            cat = cats[0][0]
            dom = tree.nodes[cat].parent
        else:
            doms = tree.ranked("domain", vec)
            dom = doms[0][0] if doms and doms[0][1] >= th.domain else tree.new("domain", None)
            cat = tree.new("category", dom)
        path = (dom, cat, tree.new("topic", cat))
    tree.add(path, vec, words)
    return path


def route(tree: Tree, qvec: np.ndarray, th: Thresholds) -> frozenset[str] | None:
    """The topics a query searches: those under the best ``categories``
    categories of the domains within ``margin`` of the nearest; None when no
    domain is close enough (search everything rather than guess)."""
    doms = tree.ranked("domain", qvec)
    if not doms or doms[0][1] < th.route:
        return None
    chosen = {d for d, s in doms if s >= max(th.route, doms[0][1] - th.margin)}
    cats = tree.ranked("category", qvec, parents=chosen)[: max(1, th.categories)]
    return tree.topics_under({c for c, _ in cats})
