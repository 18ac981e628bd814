"""Providers register lazily by string so ``import naia_memory`` pulls in no
heavy peer (the lm-evaluation-harness registry pattern)."""
from .registry import PROVIDERS, create_provider, provider_names

__all__ = ["PROVIDERS", "create_provider", "provider_names"]
