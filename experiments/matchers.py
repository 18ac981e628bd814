"""Matching a gold persona fact against recalled texts (AIHub-141 protocol).

The four matchers of the reference protocol, from most lenient to strictest:
keyword (any remaining token is a substring of any recalled text),
polarity-aware keyword (and both sides agree on negation), hard (the whole
stripped phrase is a substring) and embedding (best cosine >= threshold).
"""
from __future__ import annotations

import re
from typing import Callable, Sequence

import numpy as np

_LEAD = re.compile(r"^\s*(나는|내가|나|사용자는|사용자가|사용자|user)\s*", re.IGNORECASE)
_TRAIL = re.compile(r"[\s.!?,~…]+$")
_PARTICLES = ("에서는", "에서", "으로", "이다", "이고", "하고", "에게", "까지", "부터", "처럼", "보다", "은", "는", "이", "가", "을", "를",
              "에", "로", "와", "과", "도", "의", "다", "만")
STOPWORDS = frozenset("있다 없다 한다 하다 하는 이다 있는 것을 것이 것은 그리고 매우 정말 자주 잘 좀 더 많이 때문에 대한 위해".split())
NEGATION = re.compile(r"(안 |못 |없|않|싫|아니|지 않)")


def strip_fact(fact: str) -> str:
    return _TRAIL.sub("", _LEAD.sub("", fact.strip())).strip()


def _strip_particle(tok: str) -> str:
    for p in _PARTICLES:
        if tok.endswith(p) and len(tok) - len(p) >= 2:
            return tok[: -len(p)]
    return tok


def keywords(fact: str) -> list[str]:
    toks = [_strip_particle(t) for t in re.split(r"\s+", strip_fact(fact)) if t]
    return [t for t in toks if len(t) >= 2 and t not in STOPWORDS]


def negated(text: str) -> bool:
    return NEGATION.search(text) is not None


def keyword_match(fact: str, texts: Sequence[str]) -> bool:
    kws = keywords(fact)
    return any(k in t for k in kws for t in texts)


def polarity_match(fact: str, texts: Sequence[str]) -> bool:
    kws, neg = keywords(fact), negated(fact)
    return any(negated(t) == neg and any(k in t for k in kws) for t in texts)


def hard_match(fact: str, texts: Sequence[str]) -> bool:
    phrase = strip_fact(fact)
    return len(phrase) >= 4 and any(phrase in t for t in texts)


def embedding_match(fact_vec: np.ndarray, text_vecs: np.ndarray, threshold: float) -> bool:
    return text_vecs.shape[0] > 0 and float((text_vecs @ fact_vec).max()) >= threshold


TEXT_MATCHERS: dict[str, Callable[[str, Sequence[str]], bool]] = {
    "keyword": keyword_match,
    "polarity": polarity_match,
    "hard": hard_match,
}
