"""Entity co-occurrence graph and spreading activation (Collins & Loftus 1975).

Activation spreads from the query's entities to neighbours, split in
proportion to edge weight and damped by ``decay`` at every hop:
``a(nb) += a(node) * decay * w(node, nb) / sum_w(node)``. Contributions under
``threshold`` are dropped so activation stays local.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Iterable, Mapping


def _key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


@dataclass
class EntityGraph:
    """Undirected weighted co-occurrence graph; weights grow on reuse."""

    edges: dict[tuple[str, str], float] = field(default_factory=dict)
    adjacency: dict[str, dict[str, float]] = field(default_factory=dict)
    changed: set[tuple[str, str]] = field(default_factory=set, repr=False, compare=False)

    def _bump(self, a: str, b: str, amount: float) -> None:
        k = _key(a, b)
        w = self.edges.get(k, 0.0) + amount
        self.edges[k] = w
        self.changed.add(k)  # a journaling store writes only these
        self.adjacency.setdefault(a, {})[b] = w
        self.adjacency.setdefault(b, {})[a] = w

    def add_cooccurrence(self, entities: Iterable[str], amount: float = 1.0) -> None:
        uniq = sorted(set(entities))
        for a, b in combinations(uniq, 2):
            self._bump(a, b, amount)
        for e in uniq:
            self.adjacency.setdefault(e, {})

    def reinforce(self, entities: Iterable[str], amount: float = 0.1) -> None:
        """Strengthen edges that already exist among entities used together again."""
        uniq = sorted(set(entities))
        for a, b in combinations(uniq, 2):
            if _key(a, b) in self.edges:
                self._bump(a, b, amount)

    def set_edge(self, a: str, b: str, weight: float | None) -> None:
        """An edge's weight, or ``None`` to remove it (forgetting takes back
        what forgotten memories put there)."""
        if weight is not None:
            self._bump(a, b, weight - self.edges.get(_key(a, b), 0.0))
            return
        k = _key(a, b)
        if self.edges.pop(k, None) is not None:
            self.changed.add(k)
        self.adjacency.get(a, {}).pop(b, None)
        self.adjacency.get(b, {}).pop(a, None)

    def drop_node(self, entity: str) -> None:
        """Remove a word and every edge it has."""
        for nb in list(self.adjacency.get(entity, {})):
            self.set_edge(entity, nb, None)
        self.adjacency.pop(entity, None)

    def neighbors(self, entity: str, limit: int = 10) -> list[tuple[str, float]]:
        nbs = self.adjacency.get(entity, {})
        return sorted(nbs.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]

    def to_json(self) -> list[list]:
        return [[a, b, w] for (a, b), w in sorted(self.edges.items())]

    def take_changes(self) -> list[list]:
        """Edges changed since the last call, with their absolute weights
        (so replaying them twice is harmless)."""
        rows = [[a, b, self.edges.get((a, b))] for a, b in sorted(self.changed)]  # None: removed
        self.changed.clear()
        return rows

    def set_weights(self, rows: Iterable[list]) -> None:
        for a, b, w in rows:
            self.set_edge(a, b, None if w is None else float(w))

    @classmethod
    def from_json(cls, rows: Iterable[list]) -> "EntityGraph":
        g = cls()
        for a, b, w in rows:
            g._bump(a, b, float(w))
        g.changed.clear()
        return g


def spreading_activation(
    adjacency: Mapping[str, Mapping[str, float]],
    seeds: Mapping[str, float],
    decay: float = 0.5,
    max_hops: int = 2,
    threshold: float = 0.05,
) -> dict[str, float]:
    activation = {s: float(a) for s, a in seeds.items() if s in adjacency}
    frontier = dict(activation)
    for _ in range(max_hops):
        spread: dict[str, float] = {}
        for node, a in frontier.items():
            nbs = adjacency.get(node, {})
            total = sum(nbs.values())
            if total <= 0:
                continue
            for nb, w in nbs.items():
                delta = a * decay * w / total
                if delta >= threshold:
                    spread[nb] = spread.get(nb, 0.0) + delta
        if not spread:
            break
        for nb, d in spread.items():
            activation[nb] = activation.get(nb, 0.0) + d
        frontier = spread
    return activation
