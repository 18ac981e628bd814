"""The in-process hot copy every store keeps: records by id and their vectors
in one contiguous float32 matrix (AIDA's "numpy cosine beats a vector DB at
human scale"), so filters, gets and exact cosine top-k cost no I/O.

The fields a ``RecordFilter`` reads (project, kind, status, times) are kept
as numpy columns beside the matrix, so a filter is a vectorised mask, not a
Python call per record: the search path stays near the cost of ``M @ q``.
Stores call ``replace`` whenever a record changes, which keeps the columns
true (the journal needs the same call to persist the change).
"""
from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np

from ..contract import MemoryKind
from ..cognition.bm25 import kth_largest
from ..records import MemoryRecord
from ..recall.columns import Columns, row_fields
from .ann import HnswIndex
from .port import EmbedderMismatchError, RecordFilter, StoreError


_INF = float("inf")


class _Codes(dict):
    """Small ints for the strings a filter compares (projects, statuses)."""

    def code(self, value: str) -> int:
        c = self.get(value)
        if c is None:
            c = self[value] = len(self)
        return c


def _member(col: np.ndarray, codes: list[int | None], size: int) -> np.ndarray:
    """``np.isin`` for a handful of small codes: one lookup table, one gather."""
    table = np.zeros(size + 1, dtype=bool)
    table[[c for c in codes if c is not None]] = True
    return table[col]


COLUMNS = ("project", "kind", "status", "created", "start", "end", "topic", "derived",
           # what the recall stages read of a candidate (recall.columns)
           "importance", "uses", "last", "archived", "stale", "assistant", "asks", "fact", "mclass", "speaker",
           "attribute")


class _Columns:
    """Per-row filter fields, capacity-doubling like the vector buffer."""

    def __init__(self, capacity: int = 16) -> None:
        self.project = np.zeros(capacity, dtype=np.int32)
        self.kind = np.zeros(capacity, dtype=np.int32)
        self.status = np.zeros(capacity, dtype=np.int32)
        self.created = np.zeros(capacity, dtype=np.float64)
        self.start = np.zeros(capacity, dtype=np.float64)
        self.end = np.zeros(capacity, dtype=np.float64)
        self.topic = np.zeros(capacity, dtype=np.int32)  # 0: not placed in the hierarchy
        self.derived = np.zeros(capacity, dtype=bool)  # a summary or reflection (MemoryRecord.derived)
        self.importance = np.zeros(capacity, dtype=np.float64)
        self.uses = np.zeros(capacity, dtype=np.float64)
        self.last = np.zeros(capacity, dtype=np.float64)
        self.archived = np.zeros(capacity, dtype=bool)
        self.stale = np.zeros(capacity, dtype=bool)
        self.assistant = np.zeros(capacity, dtype=bool)
        self.asks = np.zeros(capacity, dtype=bool)
        self.fact = np.zeros(capacity, dtype=bool)
        self.mclass = np.zeros(capacity, dtype=np.int32)
        self.speaker = np.zeros(capacity, dtype=np.int32)  # 0: nobody named
        self.attribute = np.zeros(capacity, dtype=np.int32)  # 0: no attribute

    def grow(self, n: int) -> None:
        if n <= len(self.project):
            return
        cap = max(16, 2 * len(self.project), n)
        for name in COLUMNS:
            old = getattr(self, name)
            new = np.zeros(cap, dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def copy_row(self, dst: int, src: int) -> None:
        for name in COLUMNS:
            col = getattr(self, name)
            col[dst] = col[src]


class _Subset:
    """A second, contiguous matrix for the rows of one kind (facts), with the
    main row of each: consolidation searches only facts, and a product over
    facts alone keeps its cost from growing with every episode stored."""

    def __init__(self, dim: int = 0) -> None:
        self.ids: list[str] = []
        self.pos: dict[str, int] = {}
        self.buf = np.zeros((16, dim), dtype=np.float32)
        self.main = np.zeros(16, dtype=np.int64)

    def __contains__(self, rid: str) -> bool:
        return rid in self.pos

    def reset(self, dim: int) -> None:
        self.buf = np.zeros((max(16, len(self.ids)), dim), dtype=np.float32)

    def add(self, rid: str, main_row: int, vec: np.ndarray) -> None:
        m = len(self.ids)
        if m == self.buf.shape[0]:
            grown = np.zeros((2 * m, self.buf.shape[1]), dtype=np.float32)
            grown[:m] = self.buf[:m]
            self.buf = grown
            self.main = np.resize(self.main, 2 * m)
        self.buf[m] = vec
        self.main[m] = main_row
        self.pos[rid] = m
        self.ids.append(rid)

    def remove(self, rid: str) -> None:
        at = self.pos.pop(rid)
        last = self.ids.pop()
        if last != rid:
            m = len(self.ids)
            self.ids[at] = last
            self.pos[last] = at
            self.buf[at] = self.buf[m]
            self.main[at] = self.main[m]


class RecordCache:
    SUBSET_KIND = MemoryKind.FACT

    def __init__(self, hnsw_from: int | None = None) -> None:
        """``hnsw_from``: from this many rows, vector candidates come from an
        HNSW graph (``stores/ann.py``) and are scored exactly; None: exact always."""
        self.hnsw_from = hnsw_from
        self._ann: HnswIndex | None = None  # over every row
        self._sub_ann: HnswIndex | None = None  # over the fact rows
        self.records: dict[str, MemoryRecord] = {}
        self.ids: list[str] = []
        self.row: dict[str, int] = {}
        # a removal moves the last row into the freed one, so rows stop being in the order records came in; what
        # walks the records (and the JSON snapshot, whence a reopened store's order) goes by when each came in,
        # as SQLite's rowids and Qdrant's seq do: ties "to the one added later" then agree across stores and reopens
        self._rank: dict[str, int] = {}
        self._next_rank = 0
        self._shuffled = False
        self.buf = np.zeros((0, 0), dtype=np.float32)  # capacity-doubling
        self._cols = _Columns()
        self._projects = _Codes()
        self._statuses = _Codes()
        self._kinds = _Codes()
        self._topics = _Codes({"": 0})  # code 0: not placed in the hierarchy
        self._classes = _Codes()
        self._speakers = _Codes({None: 0})
        self._attributes = _Codes({None: 0})
        self._sub = _Subset()

    @property
    def vectors(self) -> np.ndarray:
        return self.buf[: len(self.ids)]

    @property
    def dim(self) -> int:
        return int(self.buf.shape[1])

    def reset_vectors(self, n: int, dim: int) -> None:
        self.buf = np.zeros((max(n, 16), dim), dtype=np.float32)
        self._sub.reset(dim)
        self._ann = self._sub_ann = None  # every vector changes: the graphs are rebuilt on the next search

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, record: MemoryRecord, vec: np.ndarray) -> None:
        if record.id in self.records:
            raise StoreError(f"duplicate id {record.id}")
        vec = np.asarray(vec, dtype=np.float32).reshape(-1)
        if self.dim != vec.shape[0]:
            raise StoreError(f"vector of dim {vec.shape[0]} does not fit store of dim {self.dim}")
        n = len(self.ids)
        if n == self.buf.shape[0]:
            grown = np.zeros((max(16, 2 * n), self.dim), dtype=np.float32)
            grown[:n] = self.buf[:n]
            self.buf = grown
        self.buf[n] = vec
        self.records[record.id] = record
        self.row[record.id] = n
        self.ids.append(record.id)
        self._rank[record.id] = self._next_rank
        self._next_rank += 1
        self._cols.grow(n + 1)
        self._fill(n, record)
        if record.kind is self.SUBSET_KIND:
            self._sub.add(record.id, n, vec)
            if self._sub_ann is not None:
                self._sub_ann.add_many([record.id], vec)
        if self._ann is not None:
            self._ann.add_many([record.id], vec)

    def _fill(self, row: int, r: MemoryRecord) -> None:
        c = self._cols
        c.project[row] = self._projects.code(r.project)
        c.kind[row] = self._kinds.code(r.kind.value)
        c.status[row] = self._statuses.code(r.status)
        c.created[row] = r.created_at.timestamp()
        c.start[row] = (r.valid_from or r.created_at).timestamp()
        c.end[row] = r.valid_to.timestamp() if r.valid_to is not None else _INF
        path = r.path
        c.topic[row] = self._topics.code(path[2]) if path is not None else 0
        c.derived[row] = r.derived
        (c.importance[row], c.uses[row], c.last[row], _stamp, c.archived[row], c.stale[row], c.assistant[row],
         c.asks[row], c.fact[row], mclass, speaker, attribute) = row_fields(r)
        c.mclass[row] = self._classes.code(mclass)
        c.speaker[row] = self._speakers.code(speaker)
        c.attribute[row] = self._attributes.code(attribute)

    def replace(self, record: MemoryRecord) -> None:
        """A changed record (status, validity...): keep the filter columns true."""
        self.records[record.id] = record
        row = self.row[record.id]
        self._fill(row, record)
        if (record.kind is self.SUBSET_KIND) != (record.id in self._sub):
            if record.id in self._sub:
                self._sub.remove(record.id)
                if self._sub_ann is not None:
                    self._sub_ann.remove(record.id)
            else:
                self._sub.add(record.id, row, self.buf[row])
                if self._sub_ann is not None:
                    self._sub_ann.add_many([record.id], self.buf[row])

    def set_vector(self, record_id: str, vec: np.ndarray) -> None:
        vec = np.asarray(vec, dtype=np.float32)
        self.buf[self.row[record_id]] = vec
        if record_id in self._sub:
            self._sub.buf[self._sub.pos[record_id]] = vec
            if self._sub_ann is not None:
                self._sub_ann.add_many([record_id], vec)
        if self._ann is not None:
            self._ann.add_many([record_id], vec)  # the old label dies, the new vector gets one

    def remove(self, record_id: str) -> None:
        row = self.row.pop(record_id)
        if record_id in self._sub:
            self._sub.remove(record_id)
            if self._sub_ann is not None:
                self._sub_ann.remove(record_id)
        if self._ann is not None:
            self._ann.remove(record_id)
        del self._rank[record_id]
        last = self.ids[-1]
        if last != record_id:
            self._shuffled = True
            self.ids[row] = last
            self.row[last] = row
            self.buf[row] = self.buf[len(self.ids) - 1]
            self._cols.copy_row(row, len(self.ids) - 1)
            if last in self._sub:
                self._sub.main[self._sub.pos[last]] = row
        self.ids.pop()
        del self.records[record_id]

    def mask(self, flt: RecordFilter) -> np.ndarray:
        """Rows that pass ``flt``, as a boolean array (``RecordFilter.matches``
        over every row, vectorised)."""
        n = len(self.ids)
        c = self._cols
        m = np.ones(n, dtype=bool)
        if flt.project is not None:
            code = self._projects.get(flt.project)
            if code is None:
                return np.zeros(n, dtype=bool)
            m &= c.project[:n] == code
        if flt.kinds is not None:
            m &= _member(c.kind[:n], [self._kinds.get(k.value) for k in flt.kinds], len(self._kinds))
        if flt.statuses is not None:
            m &= _member(c.status[:n], [self._statuses.get(s) for s in flt.statuses], len(self._statuses))
        if flt.created_before is not None:
            m &= c.created[:n] <= flt.created_before.timestamp()
        if flt.valid_at is not None:
            at = flt.valid_at.timestamp()
            m &= (c.start[:n] <= at) & (at < c.end[:n])
        if flt.evidence:
            m &= ~c.derived[:n]
        if flt.topics is not None:  # unplaced rows (code 0) pass, as in RecordFilter.matches
            m &= _member(c.topic[:n], [0] + [self._topics.get(t) for t in flt.topics], len(self._topics))
        return m

    def candidate_columns(self, ids: Sequence[str]) -> Columns:
        """The recall stages' fields of ``ids`` (``recall.columns``), one gather per column."""
        rows = np.fromiter((self.row[i] for i in ids), dtype=np.int64, count=len(ids))
        c = self._cols
        return Columns(importance=c.importance[rows], uses=c.uses[rows], last=c.last[rows], stamp=c.start[rows],
                       archived=c.archived[rows], stale=c.stale[rows], assistant=c.assistant[rows], asks=c.asks[rows],
                       fact=c.fact[rows], memory_class=c.mclass[rows], speaker=c.speaker[rows],
                       attribute=c.attribute[rows], class_names=tuple(self._classes),
                       speaker_names=tuple(self._speakers), attribute_names=tuple(self._attributes))

    def iter(self, flt: RecordFilter | None = None) -> Iterator[MemoryRecord]:
        ids = list(self.ids) if flt is None else [self.ids[i] for i in np.flatnonzero(self.mask(flt)).tolist()]
        if self._shuffled:
            ids.sort(key=self._rank.__getitem__)  # the order they came in (see ``__init__``)
        for rid in ids:
            r = self.records.get(rid)
            if r is not None:  # removed while the caller walked
                yield r

    def embeddings(self, ids: Sequence[str]) -> np.ndarray:
        if not ids:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.vectors[[self.row[i] for i in ids]]

    def vector_top_k(self, query: np.ndarray, k: int, flt: RecordFilter) -> list[tuple[str, float]]:
        """One matrix product scores every row (only the fact rows when the
        filter asks for facts), the filter is one mask, and only the best
        ``k`` (with any row tied at the cut) are sorted, by score then id.
        Past ``hnsw_from`` rows of the part searched, an HNSW graph proposes
        the candidates instead (``_approximate_top_k``)."""
        if k <= 0 or not self.ids:
            return []
        q = np.asarray(query, dtype=np.float32)
        facts = flt.kinds is not None and tuple(flt.kinds) == (self.SUBSET_KIND,)
        size = len(self._sub.ids) if facts else len(self.ids)
        if self.hnsw_from is not None and size >= self.hnsw_from:
            return self._approximate_top_k(q, k, flt, facts)
        return self._exact_top_k(q, k, flt, facts)

    def _part(self, flt: RecordFilter, facts: bool) -> tuple[Sequence[str], np.ndarray, np.ndarray]:
        """The ids, vectors and filter mask of the part searched (facts only:
        their own matrix)."""
        if facts:
            m = len(self._sub.ids)
            return self._sub.ids, self._sub.buf[:m], self.mask(flt)[self._sub.main[:m]]
        return self.ids, self.vectors, self.mask(flt)

    @staticmethod
    def _top(sims: np.ndarray, allowed: np.ndarray, count: int, ids: Sequence[str], k: int) -> list[tuple[str, float]]:
        """The best ``k`` allowed rows by score, then id (ties at the cut included before the cut)."""
        n = len(ids)
        if count < n:
            sims = np.where(allowed, sims, -np.inf)
        k = min(k, count)
        cut = kth_largest(sims, k) if k < n else sims[allowed].min()
        top = np.flatnonzero(sims >= cut)
        hits = sorted(zip((-sims[top]).tolist(), [ids[i] for i in top.tolist()]))
        return [(i, -s) for s, i in hits[:k]]

    def _exact_top_k(self, q: np.ndarray, k: int, flt: RecordFilter, facts: bool) -> list[tuple[str, float]]:
        ids, mat, allowed = self._part(flt, facts)
        count = int(allowed.sum())
        if count == 0:
            return []
        return self._top(mat @ q, allowed, count, ids, k)

    def vector_top_k_many(self, queries: np.ndarray, k: int, flt: RecordFilter) -> list[list[tuple[str, float]]]:
        """``vector_top_k`` for many queries: one matrix-matrix product per
        256 queries reads the matrix once, where a query at a time reads it
        once each (consolidating a batch of candidates at 30k memories spent
        most of its time there). Past ``hnsw_from``, one graph search each."""
        q = np.asarray(queries, dtype=np.float32).reshape(-1, self.dim)
        if k <= 0 or not self.ids or len(q) == 0:
            return [[] for _ in range(len(q))]
        facts = flt.kinds is not None and tuple(flt.kinds) == (self.SUBSET_KIND,)
        size = len(self._sub.ids) if facts else len(self.ids)
        if self.hnsw_from is not None and size >= self.hnsw_from:
            return [self._approximate_top_k(row, k, flt, facts) for row in q]
        ids, mat, allowed = self._part(flt, facts)
        count = int(allowed.sum())
        if count == 0:
            return [[] for _ in range(len(q))]
        out: list[list[tuple[str, float]]] = []
        for b in range(0, len(q), 256):
            sims = q[b:b + 256] @ mat.T
            out.extend(self._top(row, allowed, count, ids, k) for row in sims)
        return out

    def _graph(self, facts: bool) -> HnswIndex:
        """The HNSW graph of the part searched, built on first use and rebuilt
        once removals have left too many dead labels in it."""
        g = self._sub_ann if facts else self._ann
        if g is None or g.stale:
            g = HnswIndex(self.dim)
            if facts:
                g.add_many(self._sub.ids, self._sub.buf[: len(self._sub.ids)])
                self._sub_ann = g
            else:
                g.add_many(self.ids, self.vectors)
                self._ann = g
        return g

    def _approximate_top_k(self, q: np.ndarray, k: int, flt: RecordFilter, facts: bool) -> list[tuple[str, float]]:
        """Candidates from the HNSW graph, filtered and scored exactly against
        the matrix; the graph is asked for more until ``k`` pass the filter,
        and a filter that passes too few rows for that is answered exactly."""
        graph = self._graph(facts)
        allowed = self.mask(flt)
        part = len(self._sub.ids) if facts else len(self.ids)
        count = int(allowed[self._sub.main[:part]].sum()) if facts else int(allowed.sum())
        width = max(4 * k, 64)
        while count and width < part // 4 and width < 8 * count:
            cand = [self.row[i] for i in graph.search(q, width)]
            rows = np.asarray(cand, dtype=np.int64)[allowed[cand]] if cand else np.zeros(0, dtype=np.int64)
            if len(rows) >= min(k, count):
                sims = self.buf[rows] @ q
                hits = sorted(zip((-sims).tolist(), [self.ids[r] for r in rows.tolist()]))
                return [(i, -s) for s, i in hits[:k]]
            width *= 4
        return self._exact_top_k(q, k, flt, facts)  # a narrow filter: exact over what it allows


def check_embedder(path: str, stored: dict | None, name: str, dim: int) -> bool:
    """True when the store is new (no embedder yet); raises on a mismatch."""
    if stored is None:
        return True
    if int(stored["dim"]) != int(dim) or stored.get("name") != name:
        raise EmbedderMismatchError(path, stored, name, dim)
    return False
