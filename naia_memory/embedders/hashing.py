"""Deterministic feature-hashing embedder: offline, instant, text-dependent.

Character 2/3-grams and whole words are hashed (blake2b, so stable across
processes) into signed buckets. Texts that share words or syllables get
similar vectors; unrelated texts are near-orthogonal. It is a real, if weak,
embedder for tests and smoke runs, not a constant-vector mock.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .base import normalize


@dataclass
class HashingEmbedder:
    dim: int = 256
    name: str = "hashing"

    def __post_init__(self) -> None:
        if self.dim < 8:
            raise ValueError("HashingEmbedder needs dim >= 8")
        self.name = f"hashing-{self.dim}"

    def _features(self, text: str) -> list[str]:
        t = re.sub(r"\s+", " ", text.lower()).strip()
        words = re.findall(r"\w+", t)
        feats = [f"w:{w}" for w in words]
        for w in words:
            padded = f"<{w}>"
            feats += [f"c2:{padded[i:i + 2]}" for i in range(len(padded) - 1)]
            feats += [f"c3:{padded[i:i + 3]}" for i in range(len(padded) - 2)]
        return feats

    def _vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for f in self._features(text):
            h = int.from_bytes(hashlib.blake2b(f.encode(), digest_size=8).digest(), "little")
            v[h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
        return v

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalize(np.stack([self._vector(t) for t in texts]))

    def embed_query(self, text: str) -> np.ndarray:
        return normalize(self._vector(text)[None, :])[0]
