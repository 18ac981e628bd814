"""Storage ports: primitives only; all cognition lives in the engine."""
from .port import RecordFilter, StoragePort, StoreError, EmbedderMismatchError

__all__ = ["RecordFilter", "StoragePort", "StoreError", "EmbedderMismatchError"]
