"""Okapi BM25 over pre-tokenized documents (Robertson & Zaragoza 2009).

IDF uses the Lucene form ``ln(1 + (N - df + 0.5) / (df + 0.5))`` so it never
goes negative for very common terms; k1=1.2, b=0.75 are the usual defaults.
"""
from __future__ import annotations

import heapq
import math
import threading
from collections import Counter
from itertools import chain
from typing import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np


def idf(n_docs: int, df: int) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def kth_largest(vals: np.ndarray, k: int) -> float:
    """The ``k``-th largest value, exactly, without a full partition of a long
    array: the ``k``-th largest of an even sample is a lower bound on it, so
    only the values at or above that bound need partitioning. At 100k
    documents this is ~5x cheaper than ``np.partition`` over all of them."""
    n = len(vals)
    if n > 4096 and n > 16 * k:
        sample = vals[:: n // (8 * k)]  # >= 8k values, spread evenly
        bound = np.partition(sample, len(sample) - k)[len(sample) - k]
        vals = vals[vals >= bound]  # every value >= the true k-th largest is kept
        n = len(vals)
    return float(np.partition(vals, n - k)[n - k])


def bm25_term(tf: int, doc_len: int, avg_len: float, term_idf: float, k1: float = 1.2, b: float = 0.75) -> float:
    if tf <= 0:
        return 0.0
    norm = k1 * (1.0 - b + b * doc_len / avg_len) if avg_len > 0 else k1
    return term_idf * tf * (k1 + 1.0) / (tf + norm)


class _Posting:
    """One term's documents as growing int32/float32 arrays (rows, tf)."""

    __slots__ = ("rows", "tfs", "n", "live", "tf_max", "len_min")

    def __init__(self) -> None:
        self.rows = np.zeros(4, dtype=np.int32)
        self.tfs = np.zeros(4, dtype=np.float64)  # float64: no conversion per query
        self.n = 0  # entries written, dead rows included
        self.live = 0  # document frequency
        self.tf_max = 0  # over every entry written (dead ones too): a bound, never below the live maximum
        self.len_min = 1 << 30  # the shortest document written

    def append(self, row: int, tf: int, doc_len: int) -> None:
        if self.n == len(self.rows):
            self.rows = np.resize(self.rows, 2 * self.n)
            self.tfs = np.resize(self.tfs, 2 * self.n)
        self.rows[self.n] = row
        self.tfs[self.n] = tf
        self.n += 1
        self.live += 1
        self.tf_max = max(self.tf_max, tf)
        self.len_min = min(self.len_min, doc_len)


class BM25Index:
    """Incremental inverted index; ``add``/``remove`` keep stats exact.

    Why arrays: scoring a common term used to walk its postings in Python,
    O(df) interpreter steps per query term, which made every encode (the
    surprise score searches) grow with the store. Here a term's postings are
    numpy arrays scored in one vectorised expression into a dense
    accumulator. Documents get a row each; a removed document's row is
    marked dead and skipped, and the arrays are rebuilt once dead rows
    outnumber live ones (amortised O(1) per removal).
    """

    long_posting = 4096  # postings shorter than this are cheap to score whole (``_pruned``)

    def __init__(self, k1: float = 1.2, b: float = 0.75):
        self.k1 = k1
        self.b = b
        self.postings: dict[str, _Posting] = {}
        self.doc_tokens: dict[str, tuple[str, ...]] = {}
        self._row: dict[str, int] = {}
        self._ids: list[str | None] = []
        self._len = np.zeros(16, dtype=np.float64)
        self._alive = np.zeros(16, dtype=bool)
        self._tag = np.zeros(16, dtype=np.int16)  # a caller's small-int group per document (stores: its kind)
        self._total_len = 0
        self._dead = 0
        self._local = threading.local()  # a scratch row per thread (``_scratch``)

    def add(self, doc_id: str, tokens: Sequence[str], tag: int = 0) -> None:
        """``tag``: a small group number ``ranked`` can restrict to without
        asking ``keep`` about every document of the other groups."""
        if doc_id in self._row:
            self.remove(doc_id)
        row = len(self._ids)
        if row == len(self._len):
            self._len = np.resize(self._len, 2 * row)
            self._alive = np.resize(self._alive, 2 * row)
            self._tag = np.resize(self._tag, 2 * row)
        self._ids.append(doc_id)
        self._row[doc_id] = row
        self._len[row] = len(tokens)
        self._alive[row] = True
        self._tag[row] = tag
        for term, tf in Counter(tokens).items():
            posting = self.postings.get(term)
            if posting is None:
                posting = self.postings[term] = _Posting()
            posting.append(row, tf, len(tokens))
        self.doc_tokens[doc_id] = tuple(tokens)
        self._total_len += len(tokens)

    def remove(self, doc_id: str) -> None:
        row = self._row.pop(doc_id, None)
        if row is None:
            return
        tokens = self.doc_tokens.pop(doc_id)
        for term in set(tokens):
            posting = self.postings[term]
            posting.live -= 1
            if posting.live == 0:
                del self.postings[term]
        self._alive[row] = False
        self._ids[row] = None
        self._total_len -= len(tokens)
        self._dead += 1
        if self._dead > max(len(self._row), 64):
            self._rebuild()

    def _rebuild(self) -> None:
        docs = [(d, self.doc_tokens[d], int(self._tag[r])) for r, d in enumerate(self._ids) if d is not None]
        self.__init__(self.k1, self.b)
        for d, toks, tag in docs:
            self.add(d, toks, tag)

    def __len__(self) -> int:
        return len(self._row)

    def _accumulate(self, query_tokens: Iterable[str]) -> np.ndarray | None:
        n = len(self._row)
        if n == 0:
            return None
        rows_total = len(self._ids)
        avg = self._total_len / n
        acc = np.zeros(rows_total, dtype=np.float64)
        hit = False
        for term in sorted(set(query_tokens)):  # a fixed order: float sums must not depend on hash seeds
            posting = self.postings.get(term)
            if posting is None:
                continue
            rows = posting.rows[: posting.n]
            acc[rows] += self._term_scores(posting, rows, posting.tfs[: posting.n], n, avg)
            hit = True
        if not hit:
            return None
        if self._dead:
            acc[~self._alive[:rows_total]] = 0.0
        return acc

    def _term_scores(self, posting: _Posting, rows: np.ndarray, tf: np.ndarray, n: int, avg: float) -> np.ndarray:
        norm = self._len[rows] * (self.k1 * self.b / avg) if avg > 0 else np.zeros(len(rows))
        norm += self.k1 * (1.0 - self.b) if avg > 0 else self.k1
        return (idf(n, posting.live) * (self.k1 + 1.0)) * tf / (tf + norm)

    def _pruned(self, query_tokens: Iterable[str], keep: Callable[[str], bool], k: int,
                tags: list[int] | None) -> list[tuple[str, float]] | None:
        """Top-k without walking the long postings of common terms (MaxScore,
        Turtle & Flood 1995): a document only common terms reach scores at
        most the sum of their upper bounds idf * (k1 + 1); when the k-th best
        document the rare terms reach scores more than that, the common terms
        need scoring only for those documents (a binary search in each
        posting). None when the bound does not hold; the caller then scores
        every posting. Same sums, in the same term order, as the full path."""
        n = len(self._row)
        terms = [(t, p) for t in sorted(set(query_tokens)) if (p := self.postings.get(t)) is not None]
        long_from = max(self.long_posting, len(self._ids) // 32)
        common = [(t, p) for t, p in terms if p.n >= long_from]
        rare = [(t, p) for t, p in terms if p.n < long_from]
        if not common or not rare:
            return None
        bound = sum(idf(n, p.live) * (self.k1 + 1.0) for _, p in common)
        avg = self._total_len / n
        partial = np.zeros(len(self._ids), dtype=np.float64)  # what the rare terms alone give (a lower bound)
        for _, p in rare:
            rows = p.rows[: p.n]
            partial[rows] += self._term_scores(p, rows, p.tfs[: p.n], n, avg)
        cand = np.flatnonzero(partial > 0)
        if self._dead:
            cand = cand[self._alive[cand]]
        if tags is not None:
            cand = cand[np.isin(self._tag[cand], tags)]
        if len(cand) < k:
            return None
        lower = partial[cand]
        kth = np.partition(lower, len(lower) - k)[len(lower) - k]  # the k-th best final score is at least this
        if kth <= bound:  # a document only common terms reach could still rank: score every posting
            return None
        cand = cand[lower + bound >= kth]  # the rest cannot reach the top k even with every common term
        total = self._exact(cand, terms, n, avg)
        width = min(len(cand), max(4 * k, 64))
        top = np.argpartition(-total, width - 1)[:width] if width < len(cand) else np.arange(len(cand))
        cut = total[top].min()
        top = np.flatnonzero(total >= cut)  # ties at the cut stay in
        ids = self._ids
        order = sorted(zip((-total[top]).tolist(), [ids[r] for r in cand[top].tolist()]))
        hits = []
        for neg, d in order:
            if -neg < kth:  # every document scoring kth or more is here; below it, not every one is
                return None
            if keep(d):
                hits.append((d, -neg))
                if len(hits) == k:
                    return hits
        return None  # keep() turned too many away: the full path goes deeper

    def _tf(self, p: _Posting, cand: np.ndarray) -> np.ndarray:
        """The term's frequency in each row of ``cand`` (sorted), 0 where
        absent: a binary search each when they are few against the posting,
        else the posting written into a per-thread scratch row and read back
        (two linear passes instead of ``len(cand)`` searches)."""
        rows = p.rows[: p.n]
        if 4 * len(cand) < p.n:
            at = np.minimum(np.searchsorted(rows, cand), p.n - 1)
            return np.where(rows[at] == cand, p.tfs[at], 0.0)
        scratch = self._scratch()
        try:
            scratch[rows] = p.tfs[: p.n]
            return scratch[cand]
        finally:
            scratch[rows] = 0.0  # even on an interrupt: a dirty row would corrupt every later lookup

    def _scratch(self) -> np.ndarray:
        """A row of zeros as long as the index, one per thread, left zeroed by every user."""
        row = getattr(self._local, "scratch", None)
        if row is None or len(row) < len(self._ids):
            row = self._local.scratch = np.zeros(2 * len(self._ids) + 16, dtype=np.float64)
        return row

    def _exact(self, cand: np.ndarray, terms: list[tuple[str, _Posting]], n: int, avg: float) -> np.ndarray:
        """Full scores of the rows ``cand`` (sorted), summed in the full path's
        term order, a missing term adding 0.0, so every sum equals the dense
        accumulator's bit for bit."""
        return self._summed(cand, [(p, self._tf(p, cand)) for _, p in terms], n, avg)

    def _summed(self, cand: np.ndarray, per_term: list[tuple[_Posting, np.ndarray]], n: int, avg: float) -> np.ndarray:
        """The scores of ``cand`` from each term's tf there, added in the order given."""
        total = np.zeros(len(cand), dtype=np.float64)
        for p, tf in per_term:
            total = total + np.where(tf > 0, self._term_scores(p, cand, tf, n, avg), 0.0)
        return total

    def _upper(self, p: _Posting, n: int, avg: float) -> float:
        """The most one term adds to any document: a term's score rises with
        tf and falls with the document's length, so its largest tf in its
        shortest document bounds every entry (at typical lengths about half
        of the looser ``idf * (k1 + 1)``)."""
        norm = self.k1 * (1.0 - self.b + self.b * p.len_min / avg) if avg > 0 else self.k1
        return idf(n, p.live) * p.tf_max * (self.k1 + 1.0) / (p.tf_max + norm)

    def _essential(self, query_tokens: Iterable[str], keep: Callable[[str], bool], k: int,
                   tags: list[int] | None) -> list[tuple[str, float]] | None:
        """Top-k when every query term is common, the case ``_pruned`` cannot
        cut (a short turn of everyday words in a large store: encode's
        surprise lookup). MaxScore again, term by term: candidates come from
        the shortest postings only (the essential terms); a document none of
        them reach scores at most the other terms' summed bounds (``_upper``),
        so once k documents that pass ``keep`` score above that sum, no other
        document can rank. Candidates are dropped as the other terms are
        looked up, once the bounds of the terms they hold plus those still to
        look up cannot clear that sum; the survivors are scored exactly. The
        essential set grows one posting at a time until the bound holds; None
        when it does not while candidates stay few (the caller then scores
        every posting)."""
        n = len(self._row)
        terms = [(t, p) for t in sorted(set(query_tokens)) if (p := self.postings.get(t)) is not None]
        if n == 0 or len(terms) < 2 or sum(p.n for _, p in terms) < self.long_posting:
            return None  # one posting, or postings short enough to score whole
        avg = self._total_len / n
        by_len = sorted(terms, key=lambda tp: (tp[1].n, tp[0]))
        upper = [self._upper(p, n, avg) for _, p in by_len]
        most = len(self._ids) // 4  # past this many candidates the dense accumulator is as cheap
        for m in range(1, len(by_len)):
            floor = math.fsum(upper[m:]) * (1.0 + 1e-9) + 1e-12  # a float sum may round a hair above its bound
            slack = floor * 1e-9 + 1e-12  # the drop below sums in another order than the exact one
            first = by_len[0][1]
            if m == 1:
                cand = first.rows[: first.n]
                tfs = {0: first.tfs[: first.n]}
            else:
                mark = self._scratch()  # the union of the essential postings, in row order
                try:
                    for _, p in by_len[:m]:
                        mark[p.rows[: p.n]] = 1.0
                    cand = np.flatnonzero(mark[: len(self._ids)])
                finally:
                    for _, p in by_len[:m]:
                        mark[p.rows[: p.n]] = 0.0
                tfs = {}
            if len(cand) > most:
                return None
            live = self._alive[cand] if self._dead else None
            if tags is not None:
                on_tag = np.isin(self._tag[cand], tags)
                live = on_tag if live is None else live & on_tag
            if live is not None:
                cand = cand[live]
                tfs = {i: tf[live] for i, tf in tfs.items()}
            for i in range(m):
                if i not in tfs:
                    tfs[i] = self._tf(by_len[i][1], cand)
            reach = sum(np.where(tfs[i] > 0, upper[i], 0.0) for i in range(m))  # what each can score, at most
            others = sorted(range(m, len(by_len)), key=lambda i: -upper[i])
            for j, i in enumerate(others):  # the largest bound first: it separates the most
                tfs[i] = self._tf(by_len[i][1], cand)
                reach = reach + np.where(tfs[i] > 0, upper[i], 0.0)
                left = math.fsum(upper[o] for o in others[j + 1:])
                alive = reach + left > floor - slack
                if not alive.all():
                    cand, reach = cand[alive], reach[alive]
                    tfs = {o: tf[alive] for o, tf in tfs.items()}
            in_order = sorted(tfs, key=lambda i: by_len[i][0])  # exact, in the full path's term order: the same sums
            total = self._summed(cand, [(by_len[i][1], tfs[i]) for i in in_order], n, avg)
            hits = self._certain_top(cand, total, keep, k, floor)
            if hits is not None:
                return hits
        return None

    def _certain_top(self, cand: np.ndarray, total: np.ndarray, keep: Callable[[str], bool], k: int,
                     floor: float) -> list[tuple[str, float]] | None:
        """The first ``k`` rows of ``cand`` by (score desc, id) that pass
        ``keep``, when every one scores above ``floor`` (the most a document
        outside ``cand`` can reach); None when fewer than ``k`` do."""
        above = np.flatnonzero(total > floor)
        if len(above) < k:
            return None
        cand, total = cand[above], total[above]
        ids = self._ids
        width = min(len(cand), max(4 * k, 64))
        while True:
            if width < len(cand):
                top = np.argpartition(-total, width - 1)[:width]
                top = np.flatnonzero(total >= total[top].min())  # ties at the cut stay in
            else:
                top = np.arange(len(cand))
            hits = []
            for neg, d in sorted(zip((-total[top]).tolist(), [ids[r] for r in cand[top].tolist()])):
                if keep(d):
                    hits.append((d, -neg))
                    if len(hits) == k:
                        return hits
            if len(top) >= len(cand):
                return None  # keep() turned too many away: a lower floor (more essential terms) may find them
            width *= 4

    def scores(self, query_tokens: Iterable[str], allowed: set[str] | None = None) -> dict[str, float]:
        acc = self._accumulate(query_tokens)
        if acc is None:
            return {}
        rows = np.flatnonzero(acc > 0)
        out = {self._ids[r]: float(acc[r]) for r in rows.tolist()}
        if allowed is not None:
            out = {d: s for d, s in out.items() if d in allowed}
        return out

    def ranked(self, query_tokens: Iterable[str], keep: Callable[[str], bool], k: int,
               tags: Iterable[int] | None = None) -> list[tuple[str, float]]:
        """Best ``k`` documents that pass ``keep`` (and carry one of ``tags``),
        highest first, ties by id; only the top of the ranking is ever handed
        to ``keep``."""
        if k <= 0:
            return []
        tags = list(tags) if tags is not None else None
        fast = self._pruned(query_tokens, keep, k, tags)
        if fast is None:
            fast = self._essential(query_tokens, keep, k, tags)
        if fast is not None:
            return fast
        acc = self._accumulate(query_tokens)
        if acc is None:
            return []
        if tags is not None:
            wanted = list(tags)
            table = np.zeros(max(wanted + [int(self._tag[: len(acc)].max(initial=0))]) + 1, dtype=bool)
            table[wanted] = True
            acc[~table[self._tag[: len(acc)]]] = 0.0
        nz = np.flatnonzero(acc > 0)  # the documents any query term reached (a bool scan: 5x faster than on floats)
        nonzero = len(nz)
        if nonzero == 0:
            return []
        vals = acc[nz]
        width = min(nonzero, max(4 * k, 64))
        while True:
            cut = kth_largest(vals, width)
            above = nz[vals > cut]
            ids = self._ids
            top = [r for _, _, r in sorted(zip((-acc[above]).tolist(), [ids[r] for r in above.tolist()], above.tolist()))]
            top = chain(top, _in_id_order(nz[vals == cut].tolist(), ids, k))  # ties at the cut stay in
            hits = []
            for r in top:  # ask keep() only until k have passed
                if keep(self._ids[r]):
                    hits.append((self._ids[r], float(acc[r])))
                    if len(hits) == k:
                        return hits
            if width >= nonzero:
                return hits
            width = min(nonzero, width * 4)

    def top_k(self, query_tokens: Iterable[str], k: int, allowed: set[str] | None = None) -> list[tuple[str, float]]:
        if allowed is None:
            return self.ranked(query_tokens, lambda _d: True, k)
        return self.ranked(query_tokens, allowed.__contains__, k)


def _in_id_order(rows: list[int], ids: list, first: int) -> Iterator[int]:
    """``rows`` by id, lazily: the first ``first`` by a partial sort, the rest
    only if the caller walks that far (hundreds of documents can tie at a cut)."""
    pairs = [(ids[r], r) for r in rows]
    if len(pairs) <= first:
        yield from (r for _, r in sorted(pairs))
        return
    head = heapq.nsmallest(first, pairs)
    yield from (r for _, r in head)
    yield from (r for _, r in sorted(pairs)[first:])


def rank(scores: Mapping[str, float], k: int | None = None) -> list[tuple[str, float]]:
    """Deterministic order: higher score first, ties broken by id."""
    ordered = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return ordered if k is None else ordered[:k]
