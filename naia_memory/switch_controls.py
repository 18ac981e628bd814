"""Memory on/off and incognito conversations of a ``MemorySystem``, saved.

A mixin (like ``LifecycleControls``): the switches are log entries
(``switches.py``), read when the engine opens the store and again whenever
it catches up with the file (another process flipped one on a shared SQLite
file, a failed commit was dropped, a re-key or re-index took the write lock).

Two directions, two orders:

- Closing (memory off, a conversation made incognito) takes effect at once,
  under the switch lock only, and is saved at once when the memory is free;
  when a consolidation holds it through a model call, the call returns at
  once and a thread saves the switch as soon as the memory is let go ("stop
  remembering" never waits behind a model). A switch whose save fails stays
  in effect in this process (a full disk never takes it back) and stays
  owed: written by the next call that commits (``_commit``,
  ``_commit_with_owed``) or ``close``, and kept over every re-read of the
  file meanwhile. A closing
  switch waits for a turn this process is embedding (the turn is stored
  under the setting it began with), never for a consolidation.
- Opening (memory on, incognito off) catches up with the file, is saved,
  and takes effect only once saved: a failed call leaves memory as closed as
  it was.

Each switch call decides on the file's state, not on what this process last
read: a switch another process flipped meanwhile is neither missed nor
undone by a call that thought there was nothing to do.
"""
from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Callable

from .contract import InvalidInput
from .records import ensure_aware
from .switches import Switches, apply_entry, incognito_entry, memory_entry, switches_from
from .validate import check_name
from .stale_retry import again_when_stale

if TYPE_CHECKING:
    from .encoding import Encoder
    from .stores.port import StoragePort

log = logging.getLogger("naia_memory")

Entry = dict[str, Any]


class SwitchControls:
    """``enable`` / ``disable`` / ``set_incognito`` / ``incognito_sessions``."""

    store: "StoragePort"
    encoder: "Encoder"
    _lock: threading.RLock
    _switch_lock: threading.RLock
    _closed: bool
    _process_off: bool  # the constructor's enabled=False: off in this process until enable(), not saved
    _closing: bool  # close() has begun
    _owed_switches: list[Entry]  # closing entries not yet saved (their save failed, or waits for the lock)
    _switches: Switches

    # ------------------------------------------------------------------ reading
    def _read_switches(self) -> None:
        """What the log says, with what is owed to it, applied to the encoder.
        Called at open and after every re-read of the store."""
        with self._switch_lock:
            logged = self.store.log()
            self._switches = switches_from([*logged, *_not_in(self._owed_switches, logged)])
            self._apply_switches()

    def _apply_switches(self) -> None:
        s = self._switches
        self.encoder.enabled = not (self._process_off or s.off)
        self.encoder.incognito = set(s.incognito)
        self.encoder.once_incognito = s.ever_incognito
        for key in s.incognito:  # a conversation made incognito carries nothing into its next turn
            self.encoder.last_turn.pop(key, None)

    def _catch_up_if_free(self) -> None:
        """A reader of the switches catches up with the file when the memory is
        free, and never waits for it (a health check behind a model call)."""
        if self._closed or not self._lock.acquire(blocking=False):
            return
        try:
            if not self._closed:
                self._check_open()
        finally:
            self._lock.release()

    def _refused_now(self, session: str | None, project: str) -> str | None:
        """Why a turn must not enter, as the file says now: asked after a long
        embedder call, when another process may have flipped a switch. Only
        the switches are read again, not the memories (the turn's id was
        taken against those; a store that changed is caught up at the next call)."""
        changed = getattr(self.store, "changed_elsewhere", None)
        if changed is not None and changed():
            self._read_switches()
        return self.encoder.refused(session, project)

    @property
    def enabled(self) -> bool:
        self._catch_up_if_free()
        return self.encoder.enabled

    @property
    def switches(self) -> Switches:
        """What the store says (with what is owed to it): memory off, and
        every (project, session) kept out. ``enabled`` adds ``enabled=False``."""
        self._catch_up_if_free()
        return self._switches  # (one attribute read: no lock, so a reader never waits behind an import's embedding)

    def incognito_sessions(self, *, project: str = "default") -> list[str]:
        """The conversations of ``project`` kept out of memory, by name."""
        check_name(project, "project")
        return sorted(s for p, s in self.switches.incognito if p == project)

    # ------------------------------------------------------------------ switching
    def enable(self) -> None:
        """Turn memory on: for a host that started it off (``enabled=False``),
        and for a store the user turned off, which stays off across restarts
        until this is called."""
        self._open_switch(lambda s: memory_entry(True, ensure_aware(None)) if s.off else None,
                          then=lambda: setattr(self, "_process_off", False))

    def disable(self) -> None:
        """Memory off: turns are not kept and nothing is recalled until
        ``enable()``, in this process at once and, once saved, in every later one."""
        self._close_switch(memory_entry(False, ensure_aware(None)))

    def set_incognito(self, *, session: str, on: bool = True, project: str = "default") -> None:
        """An incognito conversation: nothing said in ``session`` is embedded,
        scored, stored or carried as context into a later turn, now and after
        a restart, until turned off. Recall still answers from what was kept
        before."""
        check_name(session, "session")  # None would mark nothing (turns without a session are never incognito)
        check_name(project, "project")
        if not isinstance(on, bool):
            raise InvalidInput(f"on must be true or false, got {on!r}")
        if on:
            self._close_switch(incognito_entry(project, session, True, ensure_aware(None)))
        else:
            self._open_switch(lambda s: incognito_entry(project, session, False, ensure_aware(None))
                              if (project, session) in s.incognito else None)

    def _close_switch(self, entry: Entry) -> None:
        with self._switch_lock:
            self._refuse_closed()
            if self._closing:  # close() has made its last save: a switch now would be said done and never saved
                raise RuntimeError("this MemorySystem is closing")
            self._owed_switches.append(entry)  # (a repeat is dropped when saved: the file is read first)
            self._switches = apply_entry(self._switches, entry)
            self._apply_switches()
        if not self._lock.acquire(blocking=False):  # a consolidation holds the memory (a model call)
            threading.Thread(target=self._save_when_free, name="naia-memory-switch", daemon=True).start()
            return
        try:
            self._save_caught_up()  # catches up with the file (the owed entries are kept over it)
        except BaseException as e:
            log.warning("a switch is in effect in this process but was not saved (%s: %s); it is written with the "
                        "next commit or at close", type(e).__name__, e)
            raise
        finally:
            self._lock.release()

    def _save_when_free(self) -> None:
        try:
            with self._lock:
                if self._owed_switches and self._closed:  # closed meanwhile, after its own last try
                    log.error("a switch made while the memory was closing was never saved: after a restart it is "
                              "not in effect")
                elif self._owed_switches:
                    self._save_caught_up()
        except Exception as e:
            log.error("a switch is in effect in this process but was not saved (%s: %s); it is written with the "
                      "next commit or at close", type(e).__name__, e)

    @again_when_stale
    def _open_switch(self, entry_for: Callable[[Switches], Entry | None], then: Callable[[], None] | None = None) -> None:
        with self._lock, self._switch_lock:
            self._check_open()  # the file's state decides, not what this process last read
            entry = entry_for(self._switches)
            if entry is not None:
                self._owed_switches.append(entry)
            if self._owed_switches:
                try:
                    self._save_switches()
                except BaseException:
                    self._owed_switches = [e for e in self._owed_switches if e is not entry]  # memory stays as closed
                    # a commit that failed with its transaction still open (SQLite) would write the entry later:
                    # the store drops what it holds uncommitted and reads its file again
                    discard = getattr(self.store, "discard", None)
                    if entry is not None and discard is not None and getattr(self.store, "autosave", True):
                        discard()
                    raise
            if then is not None:
                then()
            self._read_switches()

    def _save_switches(self) -> None:
        """Write the owed entries that change what the file says (under the
        engine lock, after catching up with the file), and commit unless the
        caller commits (``autosave=False``: the store then holds them). Each
        leaves the owed list only once that returned."""
        if getattr(self.store, "autosave", True):
            self._commit_with_owed()
        else:  # the host commits: until then they stay owed, so a discard or a failed commit does not lose them
            self._log_owed()

    def _commit_with_owed(self) -> None:
        """The commit of a call that commits whatever ``autosave`` says
        (consolidate, forget, edit, decay, backup, re-index, settle, revert):
        a switch still owed goes out in it, not only with the next encode."""
        sent = self._log_owed()
        self.store.commit()
        self._owed_saved(sent)

    def _log_owed(self) -> list[Entry]:
        """Append the owed entries that change what the file says; returns all
        that were owed (those that change nothing are settled by the same commit)."""
        if not self._owed_switches:  # every encode's commit passes here: nothing owed takes no lock
            return []
        with self._switch_lock:
            sent = list(self._owed_switches)
        if not sent:  # (saved by another thread meanwhile)
            return sent
        logged = self.store.log()
        state, changing = switches_from(logged), []
        for e in _not_in(sent, logged):  # one the log holds already (autosave=False: the host committed it) is saved,
            # and must not be written again after a later entry of another process's (an old "off" over its "on")
            after = apply_entry(state, e)
            if after != state:
                changing.append(e)
            state = after
        if changing:
            self.store.append_log(changing)
        return sent

    def _owed_saved(self, sent: list[Entry]) -> None:
        if sent:
            with self._switch_lock:
                self._owed_switches = [e for e in self._owed_switches if not any(e is s for s in sent)]

    @again_when_stale
    def _save_caught_up(self) -> None:
        """Read what other processes wrote, then save what is owed; again if
        another commit landed in between (``stale_retry``)."""
        self._check_open()
        self._save_switches()

    def _save_owed_at_close(self) -> None:
        """Called by ``close`` under the engine lock, before the store closes:
        a switch still owed gets one more try, said in the log if that fails."""
        if not self._owed_switches:
            return
        try:
            self._save_caught_up()  # a store that failed a commit reads its file first, then takes the entries
        except Exception as e:
            log.error("a switch made in this process was never saved (%s: %s): after a restart it is not in effect",
                      type(e).__name__, e)


def _not_in(owed: list[Entry], logged: list[Entry]) -> list[Entry]:
    """The owed entries the log does not hold (each carries its call's own
    mark, so an equal one in the log is this one)."""
    return [e for e in owed if e not in logged] if owed else owed


__all__ = ["SwitchControls"]
