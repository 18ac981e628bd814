"""Memory on/off and incognito conversations, kept in the store's log.

A host that restarts (a server updated, a crash, the next run of a script)
must not forget that the user turned memory off or kept a conversation out
of it: an incognito conversation stored after a restart is the failure that
matters here. Until session 38 both switches lived in the process only.

They are entries of the decision log, which every store already writes with
its memories in one commit, seals where the store is encrypted, and which
another process sees when it catches up with a shared SQLite file. So the
switches need no storage of their own, survive ``forget`` (no memory id is
in them), and the log says when each was flipped:

    {"op": "MEMORY", "on": false, "at": "...", "call": "9f2c..."}
    {"op": "INCOGNITO", "project": "default", "session": "tonight", "on": true, "at": "...", "call": "..."}

The latest entry for a switch wins. Pure: entries in, ``Switches`` out.
"""
from __future__ import annotations

import secrets

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable

from .stores.port import StoreError

MEMORY_OP = "MEMORY"
INCOGNITO_OP = "INCOGNITO"


class SwitchEntryError(StoreError):
    """A switch entry in the log that cannot be read (a hand-edited file): a
    damaged store, said, never guessed, since guessing "on" could store a
    conversation the user kept out."""


@dataclass(frozen=True)
class Switches:
    """What the log says: memory off for the whole store, and the (project,
    session) pairs kept out of it."""

    off: bool = False
    incognito: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    # every conversation that was ever kept out: after incognito ends, its next turn carries nothing from before
    ever_incognito: frozenset[tuple[str, str]] = field(default_factory=frozenset)


def _call() -> str:
    """Each switch call's own mark: two calls within one tick of the clock (a
    frozen clock in a host's tests, Windows' 15.6 ms) are still two entries,
    so an owed one is never taken for one the log already holds."""
    return secrets.token_hex(8)


def memory_entry(on: bool, at: datetime) -> dict[str, Any]:
    return {"op": MEMORY_OP, "on": bool(on), "at": at.isoformat(), "call": _call()}


def incognito_entry(project: str, session: str, on: bool, at: datetime) -> dict[str, Any]:
    return {"op": INCOGNITO_OP, "project": project, "session": session, "on": bool(on), "at": at.isoformat(), "call": _call()}


def apply_entry(state: Switches, entry: dict[str, Any], n: int = -1) -> Switches:
    """``state`` after one log entry (any entry but a switch leaves it as it is)."""
    op = entry.get("op") if isinstance(entry, dict) else None
    if op not in (MEMORY_OP, INCOGNITO_OP):
        return state
    where = f"log entry {n} ({op})" if n >= 0 else f"switch entry ({op})"
    on = entry.get("on")
    if not isinstance(on, bool):
        raise SwitchEntryError(f"{where}: 'on' must be true or false, got {on!r}")
    if op == MEMORY_OP:
        return Switches(not on, state.incognito, state.ever_incognito)
    project, session = entry.get("project"), entry.get("session")
    if not (isinstance(project, str) and project and isinstance(session, str) and session):
        raise SwitchEntryError(f"{where}: needs a project and a session, got {project!r}, {session!r}")
    key = (project, session)
    return Switches(state.off, state.incognito | {key} if on else state.incognito - {key},
                    state.ever_incognito | {key} if on else state.ever_incognito)


def switches_from(entries: Iterable[dict[str, Any]]) -> Switches:
    """Replay the switch entries among ``entries``, in order (the latest wins)."""
    state = Switches()
    for n, e in enumerate(entries):
        state = apply_entry(state, e, n)
    return state


__all__ = ["INCOGNITO_OP", "MEMORY_OP", "SwitchEntryError", "Switches", "apply_entry", "incognito_entry", "memory_entry",
           "switches_from"]
