"""The engine's upkeep: decay, backup, re-embedding and the background
consolidation timer (memory on/off and incognito: ``switch_controls``).

A mixin of ``MemorySystem`` (like ``OwnerControls``), split out so the engine
module holds encode, consolidate and recall; these work on the engine's store,
config, lock and components, which ``MemorySystem.__init__`` sets.
"""
from __future__ import annotations

import inspect
import logging
import math
import numbers
import threading
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .cognition.decay import retention, retention_many, should_archive
from .contract import InvalidInput, MemoryKind
from .embedders.base import IMPORT_BATCH, Embedder, embed_in_batches
from .ownership import locked
from .recall.context import index_text
from .records import ACTIVE, ARCHIVED, MemoryRecord, ensure_aware
from .stores.port import RecordFilter, StoragePort
from .stale_retry import again_when_stale

if TYPE_CHECKING:
    from .engine import MemorySystem

log = logging.getLogger("naia_memory")


def _reembedded(store: StoragePort, embedder: Embedder, batch_size: int = IMPORT_BATCH,
                progress: Callable[[int, int], None] | None = None) -> tuple[list[MemoryRecord], np.ndarray]:
    """Every record and its vector under ``embedder``, checked (``embed_in_batches``)."""
    recs = list(store.records())
    # a turn is indexed with the turn it answered; a skill's "context" is where it ran, not a turn
    return recs, embed_in_batches(embedder, [index_text(r.content, r.metadata.get("context") if r.kind is MemoryKind.EPISODE
                                                        else None) for r in recs], batch_size, progress)


class LifecycleControls:
    """Decay, backup, reindex and the consolidation timer of a ``MemorySystem``."""

    _timer: threading.Timer | None
    _timer_interval: float | None
    _closed: bool

    # ------------------------------------------------------------------ lifecycle
    @again_when_stale
    def apply_decay(self, *, now: datetime | None = None, _commit: bool = True) -> int:
        """Archive (soft-delete) memories whose strength fell below the threshold."""
        now = ensure_aware(now)
        n = 0
        with self._lock:
            self._check_open()
            rs = list(self.store.records(RecordFilter(statuses=(ACTIVE,), created_before=now)))
            strengths = retention_many([r.memory_class for r in rs], [r.importance for r in rs], [r.recall_count for r in rs],
                                       [r.last_accessed.timestamp() for r in rs], now.timestamp(), self.config.decay_params)
            # one numpy pass, then Python only for what fades (consolidation runs this on every call)
            fading = np.flatnonzero(strengths < self.config.decay_params.archive_threshold).tolist()
            for r, s in ((rs[j], float(strengths[j])) for j in fading):
                if should_archive(s, r.memory_class, self.config.decay_params):
                    r.status = ARCHIVED
                    r.metadata["archived_at"] = now.isoformat()
                    r.metadata["strength_at_archive"] = round(s, 6)
                    r.updated_at = now
                    self.store.update(r)
                    n += 1
            if n:
                self.store.append_log([{"op": "ARCHIVE", "count": n, "at": now.isoformat()}])
            if _commit:
                self._commit_with_owed()
        return n

    @locked
    def strength(self, memory_id: str, *, now: datetime | None = None) -> float:
        r = self._require(memory_id)
        return retention(r.memory_class, r.importance, r.recall_count, r.last_accessed, ensure_aware(now), self.config.decay_params)

    @again_when_stale
    def backup(self, *, path: str, passphrase: str | None = None) -> str:
        """A consistent copy of the durable store at ``path``, readable by the
        user only; ``passphrase``: the copy is encrypted under it (JSON store)."""
        with self._lock:
            self._check_open()  # a closed system's view may be older than the file another one now writes
            if self._owed_switches:  # the copy holds them too: a backup made while "off" was owed restores off
                self._commit_with_owed()
            dest = Path(path).expanduser()
            _not_the_store(dest, getattr(self.store, "path", None))
            dest.parent.mkdir(parents=True, exist_ok=True)
            if passphrase is None:
                self.store.backup_to(str(dest))
            elif "passphrase" in inspect.signature(self.store.backup_to).parameters:
                self.store.backup_to(str(dest), passphrase=passphrase)
            else:
                raise NotImplementedError(f"{type(self.store).__name__} cannot write an encrypted backup; "
                                          "the JSON store (LocalStore) can")
            note = getattr(self.store, "note_backup", None)
            if note is not None:  # a later forget rewrites this copy too
                try:
                    note(str(dest.resolve()), passphrase is not None)
                    self._commit_with_owed()
                except BaseException:  # not noted, so out of a forget's reach: the copy goes with the failed call
                    _remove(dest)
                    raise
            return str(dest)

    def rekey(self, *, passphrase: str | None) -> dict[str, str]:
        """Change the passphrase the store is encrypted under, encrypt a plain
        store in place, or (``None``) write it in the clear again; JSON and
        SQLite alike. Whole in the old form or the new one if it fails
        part-way. Backups are not touched, and from then on count as sealed
        apart from the store (a forget names them stale rather than copy the
        store over them). Returns old id -> new id for the memories renamed:
        a plain SQLite store that gains a key renames every memory to an id
        hashed under it (its ids stay readable in the file); empty otherwise."""
        with self._lock:
            self._check_open()
            rekey = getattr(self.store, "rekey", None)
            if rekey is None:
                raise NotImplementedError(f"{type(self.store).__name__} is not encrypted by this library; "
                                          "the JSON and SQLite stores are")
            self._commit_with_owed()
            renamed = rekey(passphrase) or {}
            # the engine's own maps, read again as after another process's writes: they may hold the old ids, and a
            # store that re-read its file under the write lock may hold rows another process committed just before
            self._caught_up()
            return renamed

    @classmethod
    def open_reindexing(cls, path_or_store: str | Path | StoragePort, *, embedder: Embedder, **kwargs: Any) -> "MemorySystem":
        """Open a store written with another embedder and re-embed everything.
        The new vectors are made and checked before the store is rebound: an
        embedder that fails leaves the file as it was (and a store opened here
        closed again)."""
        from .stores.json_store import LocalStore

        opened = isinstance(path_or_store, (str, Path))
        store = LocalStore(path_or_store) if opened else path_or_store
        stored = store.meta().get("embedder") or {}
        if not stored or (stored.get("name"), stored.get("dim")) == (embedder.name, embedder.dim):
            return cls(store=store, embedder=embedder, **kwargs)
        try:
            recs, vecs = _reembedded(store, embedder)
        except BaseException:
            if opened:
                store.close()  # nothing changed yet: closing writes nothing
            raise
        try:
            store.rebind_embedder(embedder.name, embedder.dim)
            system = cls(store=store, embedder=embedder, **kwargs)
            system._take_vectors(embedder, recs, vecs)
        except BaseException:
            _discard(store)  # the old vectors are what the file holds
            if opened:
                store.close()  # and the store is let go with them
            raise
        return system

    def reindex(self, embedder: Embedder, *, batch_size: int = IMPORT_BATCH, progress: Callable[[int, int], None] | None = None) -> int:
        """Re-embed every memory with another embedder (e.g. after a dimension change).
        Every vector is made and checked before the store is touched: an embedder
        that fails part-way, or answers with a wrong shape or a NaN, leaves the
        memory on its old vectors."""
        with self._lock:
            self._check_open()
            hold = getattr(self.store, "hold_writes", None)  # a shared SQLite file: no other process adds a row
            if hold is not None:                              # until the new vectors are in (the last commit below)
                hold()
                # it read the file again if another process had written since this call began (places given to its
                # rows are saved by the last commit below: a commit now would let the write lock go)
                self._caught_up(commit=False)
            try:
                recs, vecs = _reembedded(self.store, embedder, batch_size, progress)
            except BaseException:
                if hold is not None:
                    self.store.commit()  # nothing was written: this lets the other processes go on
                raise
            try:
                self.store.rebind_embedder(embedder.name, embedder.dim)
            except BaseException:  # (on SQLite it drops and makes the vector table again) nothing of it stays
                _discard(self.store)
                raise
            return self._take_vectors(embedder, recs, vecs)

    def _take_vectors(self, embedder: Embedder, recs: list[MemoryRecord], vecs: np.ndarray) -> int:
        with self._lock:
            before = self.embedder, self.pipeline.embedder, self.hierarchy.dim
            try:
                for r, v in zip(recs, vecs):
                    self.store.set_embedding(r.id, v)
                self.embedder = embedder
                self.pipeline.embedder = embedder
                self.hierarchy.dim = embedder.dim  # the trees' centroids were the old embedder's: rebuild them
                self._place_unplaced(commit=False)  # placed by the new vectors, saved in the one commit below
                self.store.append_log([{"op": "REINDEX", "embedder": embedder.name, "dim": embedder.dim,
                                        "count": len(recs), "at": ensure_aware(None).isoformat()}])
                self._commit_with_owed()
            except BaseException:  # the file still holds the old vectors: the store reads it again, and this goes back
                if _discard(self.store):  # (a store in memory only keeps what it holds, and so does this)
                    self.embedder, self.pipeline.embedder, self.hierarchy.dim = before
                raise
            return len(recs)

    # ------------------------------------------------------------------ background consolidation
    def start_consolidation(self, interval_s: float = 1800.0) -> None:
        """Run ``consolidate`` every ``interval_s`` seconds until stopped. Never automatic."""
        if isinstance(interval_s, bool) or not isinstance(interval_s, numbers.Real) or not math.isfinite(interval_s) \
                or interval_s <= 0:  # a NaN or an inf killed the timer's thread while it still read as running
            raise InvalidInput(f"interval_s must be a positive number of seconds, got {interval_s!r}")
        with self._lock:
            self._check_open()  # a closed system would tick only to fail, and read as running for good
            self.stop_consolidation()
            self._timer_interval = interval_s
            self._schedule()

    def _schedule(self) -> None:
        self._timer = threading.Timer(self._timer_interval, self._tick)
        self._timer.daemon = True
        self._timer.start()

    def _tick(self) -> None:
        try:
            self.consolidate()
        except Exception:  # keep the timer alive, but never silently
            log.exception("background consolidation failed")
        with self._lock:  # only the timer in charge goes on: one restarted meanwhile is another chain's
            if self._timer is threading.current_thread() and not self._closed:
                self._schedule()

    def stop_consolidation(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    @property
    def consolidation_running(self) -> bool:
        return self._timer is not None


def _discard(store: StoragePort) -> bool:
    """The store drops what it holds uncommitted and reads its file again (``discard``); False where it cannot."""
    discard = getattr(store, "discard", None)
    return bool(discard()) if discard is not None else False


# the files a store keeps beside its own: the JSON journal and lock, SQLite's WAL, shared memory and rollback journal
_SIDE_FILES = (".journal", ".lock", "-wal", "-shm", "-journal")


def _not_the_store(dest: Path, own: object) -> None:
    """A backup written over the store's own file (or a file it keeps beside
    it, or inside a Qdrant folder) would truncate what it copies, and every
    later forget, rewriting the noted backup, would do it again: the store
    lost. Refused before anything is written."""
    if not isinstance(own, (str, Path)) or "://" in str(own):
        return  # a store in memory only, or a server
    store, target = Path(own).expanduser().resolve(), dest.resolve()
    mine = {store, *(Path(f"{store}{x}") for x in _SIDE_FILES)}
    if target in mine or store in target.parents:
        raise InvalidInput(f"{dest} is the store's own file (or one it keeps): a backup goes to another path")


def _remove(path: Path) -> None:
    """A file or a folder (a Qdrant backup), if it is there. Called while
    another error is raised: a copy that cannot be removed is said in the log
    (a forget will not reach it), not raised over that error."""
    import shutil

    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    except OSError as e:
        log.warning("the backup at %s was not noted in the store and could not be removed (%s): a forget will not "
                    "reach it; delete it by hand", path, e)
