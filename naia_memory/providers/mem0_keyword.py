"""A keyword search for mem0's faiss store, so mem0 runs its own hybrid search offline.

mem0 2.x adds a BM25 score to its semantic score when its vector store has
``keyword_search`` (``Memory._search_vector_store``: semantic candidates,
plus a sigmoid of each one's BM25 score, plus entity boosts). faiss has
none; mem0's Qdrant store has one, but it encodes BM25 with fastembed's
``Qdrant/bm25`` files, which come from the Hugging Face hub, and nothing is
downloaded here. This store is mem0's own faiss store plus the BM25 that
path computes: Okapi BM25 (k1 = 1.2, b = 0.75, fastembed's defaults) with
Qdrant's IDF, ln(1 + (N - n + 0.5) / (n + 0.5)), over lower-cased words
stemmed by the English Snowball stemmer, as fastembed's ``Bm25`` tokenises
(its stop-word list is not reproduced; stop words get little IDF anyway).
mem0 ranks and fuses; this only answers its keyword query.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Any

from mem0.vector_stores.faiss import FAISS, OutputData

from ..cognition.bm25 import bm25_term, idf
from ..cognition.tokenize import stem_en

_WORD = re.compile(r"\w+", re.UNICODE)


def bm25_terms(text: str) -> list[str]:
    return [stem_en(w) for w in _WORD.findall(text.lower())]


class KeywordFAISS(FAISS):
    """mem0's faiss store with ``keyword_search``."""

    k1 = 1.2
    b = 0.75

    def _terms(self, vector_id: str, payload: dict[str, Any]) -> Counter:
        cache = self.__dict__.setdefault("_bm25_terms", {})
        text = payload.get("text_lemmatized") or payload.get("data") or ""
        key = (vector_id, text)
        if key not in cache:
            cache[key] = Counter(bm25_terms(text))
        return cache[key]

    def keyword_search(self, query: str, top_k: int = 5, filters: dict | None = None) -> list[OutputData]:
        cache = self.__dict__.get("_bm25_terms")
        if cache is not None and len(cache) > 2 * len(self.docstore) + 64:  # deleted or edited memories
            self._bm25_terms = {k: v for k, v in cache.items() if k[0] in self.docstore}
        docs = [(vid, p) for vid, p in self.docstore.items() if self._apply_filters(p, filters)]
        q = set(bm25_terms(query or ""))
        if not docs or not q:
            return []
        tfs = [(vid, p, self._terms(vid, p)) for vid, p in docs]
        n = len(tfs)
        avg = sum(sum(tf.values()) for _, _, tf in tfs) / n or 1.0
        df = Counter(t for _, _, tf in tfs for t in q if t in tf)
        idfs = {t: idf(n, df[t]) for t in q}  # Qdrant's IDF is the same formula as naia's
        scored = []
        for vid, p, tf in tfs:
            length = sum(tf.values())
            s = sum(bm25_term(tf[t], length, avg, idfs[t], self.k1, self.b) for t in q if t in tf)
            if s > 0:
                scored.append((s, vid, p))
        scored.sort(key=lambda x: (-x[0], x[1]))
        return [OutputData(id=vid, score=s, payload=p) for s, vid, p in scored[:top_k]]


__all__ = ["KeywordFAISS", "bm25_terms"]
