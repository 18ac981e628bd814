"""The engine's hierarchy (HGVM): one tree per project, built as memories
arrive, kept where every store keeps memories.

Each placed memory carries its path in ``metadata["path"]`` ([domain,
category, topic]); the trees are rebuilt from those paths and the stored
vectors on open, so every backend (JSON, SQLite, Qdrant) stores the
hierarchy without a table of its own and a reopen gives the same tree.
Switched by ``EngineConfig.hierarchy`` (placing, listing) and
``EngineConfig.routing`` (recall searches inside the routed sub-trees).
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from .cognition.hierarchy import Thresholds, Tree, node_number, place, route
from .config import EngineConfig
from .contract import MemoryKind
from .records import PATH_KEY, MemoryRecord
from .stores.port import StoragePort

def path_of(r: MemoryRecord) -> tuple[str, str, str] | None:
    return r.path


def placeable(r: MemoryRecord) -> bool:
    """Turns and the facts drawn from them live in topics; reflections, skills
    and structured facts are stored without a path on purpose (they are
    searched whatever the route), and a reopen or an edit must not place them."""
    return r.kind in (MemoryKind.EPISODE, MemoryKind.FACT) and not r.metadata.get("structured")


class Hierarchy:
    def __init__(self, store: StoragePort, config: EngineConfig, dim: int) -> None:
        self.store, self.config, self.dim = store, config, dim
        self.trees: dict[str, Tree] = {}
        self.stale = False  # the trees may lag the store (rebuilt when next listed)

    @property
    def on(self) -> bool:
        """Placing memories: the hierarchy switch, or routing or summaries (which need the tree)."""
        return self.config.hierarchy or self.config.routing or self.config.summaries

    @property
    def thresholds(self) -> Thresholds:
        c = self.config
        return Thresholds(topic=c.topic_threshold, category=c.category_threshold, domain=c.domain_threshold,
                          route=c.route_threshold, categories=c.route_categories, margin=c.route_margin)

    def tree(self, project: str) -> Tree:
        if project not in self.trees:
            self.trees[project] = Tree(self.dim, centred=self.config.hierarchy_centred)
        return self.trees[project]

    def rebuild(self, records: Iterable[MemoryRecord]) -> list[MemoryRecord]:
        """Trees from the stored paths; with the hierarchy on, memories stored
        without one (before it was switched on) are placed, oldest first, and
        returned so the caller can save them."""
        self.trees = {}
        self.stale = False
        recs = sorted(records, key=lambda r: (r.created_at, r.id))
        placed = [r for r in recs if path_of(r) is not None]
        if placed:
            vecs = self.store.embeddings([r.id for r in placed])
            for r, v in zip(placed, vecs):
                t = self.tree(r.project)
                t.adopt(path_of(r))
                t.add(path_of(r), v, r.entities)
        if not self.on:
            return []
        todo = [r for r in recs if path_of(r) is None and placeable(r)]
        if todo:
            for r, v in zip(todo, self.store.embeddings([r.id for r in todo])):
                self.place(r, v)
        return todo

    def place(self, r: MemoryRecord, vec: np.ndarray) -> None:
        """Give a new memory its path (before it is stored, so one commit holds both)."""
        if not self.on or not placeable(r):
            return
        r.metadata[PATH_KEY] = list(place(self.tree(r.project), vec, self.thresholds, r.entities))

    def adopt(self, r: MemoryRecord, vec: np.ndarray) -> None:
        """Count a memory the engine placed itself (a topic's summary, in its topic)."""
        path = path_of(r)
        if path is not None:
            t = self.tree(r.project)
            t.adopt(path)
            t.add(path, vec, r.entities)

    def remove(self, r: MemoryRecord) -> None:
        path = path_of(r)
        if path is None or r.project not in self.trees:
            return
        vec = self.store.embeddings([r.id])
        if len(vec):
            self.trees[r.project].remove(path, vec[0], r.entities)

    def unplace(self, r: MemoryRecord, vec: np.ndarray) -> None:
        """Take back a placing whose memory was then not stored (its write
        failed): the topic would count a member that does not exist, and
        routing would send queries to it."""
        path = path_of(r)
        if path is not None and r.project in self.trees:
            self.trees[r.project].remove(path, vec, r.entities)

    def route(self, project: str, qvec: np.ndarray | None) -> frozenset[str] | None:
        if qvec is None or not self.config.routing or project not in self.trees:
            return None
        return route(self.trees[project], qvec, self.thresholds)

    def topics(self, project: str) -> list[dict[str, Any]]:
        """Every node of the project's tree, domains first, with its parent,
        how many memories it holds and its most frequent words."""
        t = self.trees.get(project)
        if t is None:
            return []
        order = {"domain": 0, "category": 1, "topic": 2}
        nodes = sorted((n for n in t.nodes.values() if n.count > 0),
                       key=lambda n: (order[n.level], node_number(n.id), n.id))
        return [{"id": n.id, "level": n.level, "parent": n.parent, "memories": n.count, "label": n.label()} for n in nodes]
