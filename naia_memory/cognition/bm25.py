"""Okapi BM25 over pre-tokenized documents (Robertson & Zaragoza 2009).

IDF uses the Lucene form ``ln(1 + (N - df + 0.5) / (df + 0.5))`` so it never
goes negative for very common terms; k1=1.2, b=0.75 are the usual defaults.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence


def idf(n_docs: int, df: int) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def bm25_term(tf: int, doc_len: int, avg_len: float, term_idf: float, k1: float = 1.2, b: float = 0.75) -> float:
    if tf <= 0:
        return 0.0
    norm = k1 * (1.0 - b + b * doc_len / avg_len) if avg_len > 0 else k1
    return term_idf * tf * (k1 + 1.0) / (tf + norm)


@dataclass
class BM25Index:
    """Incremental inverted index; ``add``/``remove`` keep stats exact."""

    k1: float = 1.2
    b: float = 0.75
    postings: dict[str, dict[str, int]] = field(default_factory=dict)
    lengths: dict[str, int] = field(default_factory=dict)
    doc_tokens: dict[str, tuple[str, ...]] = field(default_factory=dict)
    _total_len: int = 0

    def add(self, doc_id: str, tokens: Sequence[str]) -> None:
        if doc_id in self.lengths:
            self.remove(doc_id)
        for term, tf in Counter(tokens).items():
            self.postings.setdefault(term, {})[doc_id] = tf
        self.lengths[doc_id] = len(tokens)
        self.doc_tokens[doc_id] = tuple(tokens)
        self._total_len += len(tokens)

    def remove(self, doc_id: str) -> None:
        if doc_id not in self.lengths:
            return
        for term in set(self.doc_tokens.pop(doc_id)):
            docs = self.postings[term]
            docs.pop(doc_id, None)
            if not docs:
                del self.postings[term]
        self._total_len -= self.lengths.pop(doc_id)

    def __len__(self) -> int:
        return len(self.lengths)

    def scores(self, query_tokens: Iterable[str], allowed: set[str] | None = None) -> dict[str, float]:
        n = len(self.lengths)
        if n == 0:
            return {}
        avg = self._total_len / n
        out: dict[str, float] = {}
        for term in set(query_tokens):
            docs = self.postings.get(term)
            if not docs:
                continue
            t_idf = idf(n, len(docs))
            for doc_id, tf in docs.items():
                if allowed is not None and doc_id not in allowed:
                    continue
                out[doc_id] = out.get(doc_id, 0.0) + bm25_term(tf, self.lengths[doc_id], avg, t_idf, self.k1, self.b)
        return out

    def top_k(self, query_tokens: Iterable[str], k: int, allowed: set[str] | None = None) -> list[tuple[str, float]]:
        return rank(self.scores(query_tokens, allowed), k)


def rank(scores: Mapping[str, float], k: int | None = None) -> list[tuple[str, float]]:
    """Deterministic order: higher score first, ties broken by id."""
    ordered = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return ordered if k is None else ordered[:k]
