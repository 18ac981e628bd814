"""OpenAI-compatible ``/v1/embeddings`` over HTTP (urllib, no SDK).

Text leaves the process only to the ``base_url`` the caller chose; there is
no environment-variable lookup. Errors carry the server's full answer.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .base import EmbedderError, check_shape, normalize


@dataclass
class OpenAICompatEmbedder:
    base_url: str
    model: str
    dim: int
    api_key: str | None = None
    timeout_s: float = 30.0
    batch_size: int = 64
    name: str = ""

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/")
        self.name = self.name or f"openai-compat-{self.model}"

    def _post(self, texts: list[str]) -> np.ndarray:
        body = json.dumps({"model": self.model, "input": texts}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(f"{self.base_url}/embeddings", data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                raw = resp.read().decode()
        except urllib.error.HTTPError as e:
            raise EmbedderError(f"{self.name}: HTTP {e.code}: {e.read().decode(errors='replace')}") from e
        except urllib.error.URLError as e:
            raise EmbedderError(f"{self.name}: cannot reach {self.base_url}: {e.reason}") from e
        try:
            data = sorted(json.loads(raw)["data"], key=lambda d: d["index"])
            m = np.array([d["embedding"] for d in data], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as e:
            raise EmbedderError(f"{self.name}: unparseable answer: {raw[:2000]}") from e
        return check_shape(m, len(texts), self.dim, self.name)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._post(texts[i:i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return normalize(np.concatenate(parts))

    def embed_query(self, text: str) -> np.ndarray:
        return normalize(self._post([text]))[0]
