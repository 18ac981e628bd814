"""A call that met another process's commit at its first write runs again.

On a shared SQLite file each call first reads what other processes committed
(``MemorySystem._check_open``), then may take seconds (an embedder, a model)
before it writes, without holding the file's write lock, so the others go on
meanwhile. A commit landing in that window made the call write from an older
view: a consolidation stored facts of a turn the other process had just
forgotten, a recall wrote back as active a fact the other had superseded. The
store now refuses that first write (``StaleViewError``: nothing written), and
the call runs once more, this time holding the write lock from the start
(``hold_writes``), on what the file then holds: it cannot be refused twice,
and the others wait for it only when they collided. Stores with one writer
(JSON, Qdrant) never refuse.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

from .stores.port import StaleViewError

F = TypeVar("F", bound=Callable[..., Any])


def again_when_stale(fn: F) -> F:
    """``fn`` is a method of ``MemorySystem`` or of an object with ``.system``."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except StaleViewError:
            pass  # nothing was written; the store reads the file again below
        system = getattr(args[0], "system", args[0])
        with system._lock:
            system._refuse_closed()
            system.store.hold_writes()  # the write lock, and the file read again (the refusal marked it stale)
            system._caught_up()  # the engine's maps from what the file holds
            try:
                out = fn(*args, **kwargs)
            except BaseException:
                system.store.discard()  # a failed call wrote nothing: its open transaction must not hold the lock
                raise
            system._commit()  # a call that wrote nothing (a turn the gate kept out) lets the lock go too
            return out
    return call  # type: ignore[return-value]


__all__ = ["again_when_stale"]
