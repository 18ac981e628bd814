from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np


class EmbedderError(RuntimeError):
    """An embedder failed or answered with the wrong shape; never papered over."""


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32, L2-normalised."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """(dim,) float32, L2-normalised."""
        ...


def normalize(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return m / norms


def check_shape(m: np.ndarray, n: int, dim: int, who: str) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    if m.ndim != 2 or m.shape != (n, dim):
        raise EmbedderError(f"{who} returned shape {m.shape}, expected ({n}, {dim})")
    if not np.isfinite(m).all():
        raise EmbedderError(f"{who} returned non-finite values")
    return m
