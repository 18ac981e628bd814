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
import threading
from typing import Any, Callable, TypeVar

from .stores.port import StaleViewError

F = TypeVar("F", bound=Callable[..., Any])


_calls = threading.local()  # per thread: how deep in decorated calls each system is


def again_when_stale(fn: F) -> F:
    """``fn`` is a method of ``MemorySystem`` or of an object with ``.system``.
    Only the outermost decorated call of a system runs again: one nested in it
    (a decay inside a consolidation) is part of it."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        system = getattr(args[0], "system", args[0])
        depth: dict[int, int] = _calls.__dict__.setdefault("depth", {})
        key = id(system)
        outer = key not in depth
        depth[key] = depth.get(key, 0) + 1
        try:
            try:
                return fn(*args, **kwargs)
            except StaleViewError:
                if not outer:
                    raise
            # nothing was written; run again holding the write lock, on the file as it is
            with system._lock:
                system._refuse_closed()
                return holding_writes(system, lambda: fn(*args, **kwargs))
        finally:
            depth[key] -= 1
            if not depth[key]:
                del depth[key]
    return call  # type: ignore[return-value]


def holding_writes(system: Any, run: Callable[[], Any]) -> Any:
    """``run`` under the shared file's write lock, on the file as it is now
    (read again: the refusal marked it stale), then committed; a failure
    writes nothing and lets the lock go. The caller holds the engine's lock."""
    try:
        system.store.hold_writes()
        system._caught_up(commit=False)  # the engine's maps; a commit now would let the lock go
        out = run()
    except BaseException:
        system.store.discard()  # its transaction must not hold the lock
        raise
    system._commit()  # a call that wrote nothing (a turn the gate kept out) lets the lock go too
    return out


__all__ = ["again_when_stale", "holding_writes"]
