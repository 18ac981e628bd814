"""OpenAI-compatible ``/v1/embeddings`` over HTTP (urllib, no SDK).

Text leaves the process only to the ``base_url`` the caller chose: a redirect
is refused, not followed (the key would go with it). The key is given, or
named by ``api_key_env`` so it is not written into a config file; it never
appears in a repr. The transport (a total timeout, a size cap, every failure
an ``EmbedderError``) is ``http_json``'s, shared with the chat client. The
answer is checked before a vector is used: each vector goes to the text its
``index`` names (the API does not promise order), and an index that is not a
whole number, is missing, repeated or out of range, a value that is not a
number, or a vector of zeros (no direction: a server that failed quietly) is
refused, never a vector attached to the wrong text.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..http_json import check_timeout, check_url, clip, post_json
from .base import EmbedderError, check_shape, normalize


def _positive_int(what: str, v: Any) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"{what} must be a positive whole number, got {v!r}")


@dataclass
class OpenAICompatEmbedder:
    base_url: str
    model: str
    dim: int
    api_key: str | None = field(default=None, repr=False)  # never in a repr a log or a traceback may print
    timeout_s: float = 30.0
    batch_size: int = 64
    name: str = ""
    max_response_bytes: int = 64 << 20
    api_key_env: str | None = None  # the environment variable holding the key (read once, here)

    def __post_init__(self) -> None:
        self.base_url = check_url(self.base_url)
        check_timeout(self.timeout_s)
        for what in ("dim", "batch_size", "max_response_bytes"):
            _positive_int(what, getattr(self, what))
        if self.api_key_env:
            self.api_key = os.environ.get(self.api_key_env)
            if not self.api_key:
                raise ValueError(f"api_key_env: the environment variable {self.api_key_env} is not set")
        self.name = self.name or f"openai-compat-{self.model}"

    def _post(self, texts: list[str]) -> np.ndarray:
        url = f"{self.base_url}/embeddings"
        raw = post_json(url, {"model": self.model, "input": texts}, self.api_key, self.timeout_s,
                        self.max_response_bytes, lambda message, _status: EmbedderError(f"{self.name}: {message}"))
        try:
            rows = json.loads(raw)["data"]
        except (KeyError, TypeError, ValueError) as e:
            raise EmbedderError(f"{self.name}: unparseable answer from {url}: {clip(raw)}") from e
        return check_shape(self._placed(rows, len(texts), url), len(texts), self.dim, self.name)

    def _placed(self, rows: Any, n: int, url: str) -> np.ndarray:
        """Each vector in the row of the text its ``index`` names."""
        if not isinstance(rows, list) or len(rows) != n:
            got = len(rows) if isinstance(rows, list) else type(rows).__name__
            raise EmbedderError(f"{self.name}: {url} answered {got} vectors for {n} texts")
        out = np.empty((n, self.dim), dtype=np.float32)
        seen: set[int] = set()
        for row in rows:
            i = row.get("index") if isinstance(row, dict) else None
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n or i in seen:
                raise EmbedderError(f"{self.name}: {url} answered a vector with index {i!r} for {n} texts "
                                    "(each of 0..n-1 once)")
            seen.add(i)
            vec = row.get("embedding")
            if not isinstance(vec, list) or len(vec) != self.dim \
                    or not all(type(x) in (int, float) for x in vec):  # bool, str, None are not numbers here
                shape = f"{len(vec)} values" if isinstance(vec, list) else type(vec).__name__
                raise EmbedderError(f"{self.name}: {url} answered a vector that is not {self.dim} numbers "
                                    f"(index {i}: {shape})")
            out[i] = vec
        if not np.isfinite(out).all():
            raise EmbedderError(f"{self.name} returned non-finite values")
        zero = np.flatnonzero(~out.any(axis=1))
        if len(zero):
            raise EmbedderError(f"{self.name}: {url} answered a vector of zeros for text {int(zero[0])} "
                                "(no direction: nothing could be found by it)")
        return out

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._post(texts[i:i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return normalize(np.concatenate(parts))

    def embed_query(self, text: str) -> np.ndarray:
        return normalize(self._post([text]))[0]
