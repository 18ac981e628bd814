from __future__ import annotations

import importlib
from typing import Any

from ..contract import MemoryProvider

PROVIDERS: dict[str, str] = {
    "naia-local": "naia_memory.providers.naia:make_local",
    "sqlite": "naia_memory.providers.naia:make_sqlite",
    "sqlite-vec": "naia_memory.providers.naia:make_sqlite_vec",
    "qdrant": "naia_memory.providers.naia:make_qdrant",
    "lite": "naia_memory.providers.lite:LiteMemoryProvider",
    "mem0": "naia_memory.providers.mem0:Mem0Provider",
    "letta": "naia_memory.providers.letta:LettaProvider",
    "none": "naia_memory.providers.none:NoMemoryProvider",
}


def provider_names() -> list[str]:
    return sorted(PROVIDERS)


def create_provider(name: str, **kwargs: Any) -> MemoryProvider:
    try:
        target = PROVIDERS[name]
    except KeyError:
        raise ValueError(f"unknown provider {name!r}; registered: {provider_names()}") from None
    module, _, attr = target.partition(":")
    factory = getattr(importlib.import_module(module), attr)
    provider = factory(**kwargs)
    if not isinstance(provider, MemoryProvider):
        raise TypeError(f"{target} did not build a MemoryProvider")
    return provider
