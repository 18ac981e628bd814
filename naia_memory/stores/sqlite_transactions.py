"""The write transactions of ``SqliteStore``: one BEGIN IMMEDIATE per batch
of writes, held until ``commit``; another process's commits caught up by
re-reading the file; and a transaction SQLite rolled back by itself (a full
disk) said where it happened and never written on afterwards. The store keeps
the rows and the cache; the sealing mixin the key and the roster.
"""
from __future__ import annotations

import functools
import json
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from ..cognition.bm25 import BM25Index
from .cache import RecordCache
from .crypto import WrongPassphrase
from .lock import StoreInUseError
from .port import StaleViewError, StoreError
from .sqlite_roster import Delta, graph_mark
from .sqlite_sealing import _roll_back


def _writes(method: Callable) -> Callable:
    """A store method that writes: a failure that took the whole transaction
    with it (SQLite rolls back by itself on a full disk) is said where it
    happened (``SqliteStore._writing``), not at some later, unrelated write."""
    @functools.wraps(method)
    def wrapper(self, *args: Any, **kwargs: Any) -> Any:
        with self._writing():
            return method(self, *args, **kwargs)
    return wrapper


class Transactions:
    """Mixed into ``SqliteStore``: reads ``db``, ``path``, ``graph``, the
    cache and the sealing mixin's ``_check_header`` and ``_fold_roster``."""

    def _begin(self, *, fresh: bool = True) -> None:
        """Open the write transaction at the first write of a call. ``fresh``:
        refuse it when another process committed after this one last read the
        file, since what the caller is about to write was decided on the older
        view (``StaleViewError``, nothing written); ``hold_writes`` reads the
        file again instead."""
        import apsw

        if fresh and self._stale:  # refused once already: nothing more is written until the file is read again
            raise StaleViewError(f"{self.path}: another process wrote the file while this call ran; nothing was "
                                 "written, and the file is read again at the next call")
        if self._in_txn and not self.db.in_transaction:
            self._mark_lost()  # (missed where it failed): a new transaction, on a cache the next call reads again
        if not self._in_txn:
            try:
                self.db.execute("BEGIN IMMEDIATE")
            except apsw.BusyError as e:
                self._mark_lost()  # the caller may have changed a cached record in place before this write: read again
                raise StoreInUseError(f"{self.path}: another process held the file's write lock for longer than "
                                      f"busy_timeout_ms ({self._busy_ms} ms); "
                                      "nothing was written, try again (or open with a longer busy_timeout_ms)") from e
            if self._sealer is None and self._data_version() != self._seen_version \
                    and self._meta_get("encryption") is not None:  # sealed by an opener with a passphrase since
                self.db.execute("ROLLBACK")
                raise StoreError(f"{self.path} was encrypted by another opener since this one opened it; nothing was "
                                 "written in the clear: reopen it with the passphrase")
            if self._sealer is not None:  # one indexed read under the lock: never write under a key replaced since
                try:
                    self._check_header()
                except WrongPassphrase:
                    self.db.execute("ROLLBACK")
                    raise
            if fresh and self._seen_version != -1 and self._data_version() != self._seen_version:
                # another process committed between this call's catch-up and now (while it embedded, extracted, ...):
                # writing its decisions would undo the other's (a forgotten turn's fact, a superseded fact revived).
                # (-1: this process's own transaction was lost; the caller is undoing its own, and the next call
                # reads the file again whatever it writes now)
                self.db.execute("ROLLBACK")
                self._mark_lost()
                self._stale = True  # (a caller's clean-up, logging what it decided, is refused too)
                raise StaleViewError(f"{self.path}: another process wrote the file while this call ran; nothing was "
                                     "written, and the file is read again at the next call")
            self._delta = Delta()
            self._in_txn = True

    def _mark_lost(self) -> None:
        """SQLite rolled this process's write transaction back by itself (a full
        disk, say) after a failed statement. Nothing is read here (a read can
        fail on that disk too, and the caller is mid-rollback): the transaction
        is dropped, with what it owed the graph and the roster, and the cache,
        which holds its writes, is marked stale, so the next call through the
        engine reads the file again (``changed_elsewhere``) and rebuilds its maps."""
        self._in_txn = False
        self._delta = Delta()
        self.graph.changed.clear()
        self._seen_version = -1

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Around a write statement: a failure that took the whole transaction
        with it is said as such, where it happened."""
        try:
            yield
        except BaseException as e:
            if self._in_txn and not self.db.in_transaction:
                self._mark_lost()
                raise StoreError(f"{self.path}: the file rolled back this process's open write transaction by itself "
                                 f"({type(e).__name__}: {e}); nothing it held was written, and the store reads the "
                                 "file again at its next call") from e
            raise

    def discard(self) -> bool:
        """Drop what this process wrote since its last commit (a re-index
        that failed part-way): the transaction is rolled back and the file
        read again at the next call."""
        if self._in_txn:
            _roll_back(self.db)
        self._mark_lost()
        return True

    def end_write(self) -> None:
        """The caller has undone what it wrote since the last commit (a batch
        refused part-way): end the transaction, so the write lock does not stay
        held until this process next commits (every other process waited out
        its timeout meanwhile). On a failure to commit, roll back and read the
        file again: the cache then holds what the file holds."""
        if not self._in_txn:
            return
        try:
            self.commit()
        except BaseException:
            _roll_back(self.db)  # (a COMMIT that failed on a full disk was rolled back by SQLite already)
            self._mark_lost()  # the cache holds what was not written: read again at the next call
            raise

    def commit(self) -> None:
        if not self._in_txn and not self.graph.changed:
            return  # nothing to write: do not wait for another process's write lock (a reader closing, say)
        self._begin()
        changed = self.graph.take_changes()  # O(changed edges), not a scan of the graph
        try:
            with self._writing():
                if changed and self._sealer is not None:  # the words of the graph are sealed as one blob
                    sealed = self._fields.seal_text(json.dumps(self.graph.to_json(), ensure_ascii=False), b"graph")
                    self._meta_set("graph_sealed", sealed)
                    self._delta.graph = graph_mark(sealed)
                    changed = []
                kept = [row for row in changed if row[2] is not None]
                gone = [(a, b) for a, b, w in changed if w is None]  # taken back by a forget
                if kept:
                    self.db.executemany("INSERT INTO edges(a, b, w) VALUES (?, ?, ?) ON CONFLICT(a, b) DO UPDATE SET w = excluded.w", kept)
                if gone:
                    self.db.executemany("DELETE FROM edges WHERE a = ? AND b = ?", gone)
                self._fold_roster()
                self.db.execute("COMMIT")
        except BaseException:
            if self._in_txn:
                self.graph.changed.update((a, b) for a, b, _ in changed)  # still owed to the database
            raise
        self._in_txn = False
        self._delta = Delta()

    def refresh(self) -> None:
        """Re-read every record from the file: another process may have written
        since this one loaded (a forget must cover its memories too)."""
        self.commit()
        self._reload()

    def hold_writes(self) -> None:
        """Take the file's write lock now, and catch up with what others
        committed before it: from here to the next ``commit`` no other process
        adds a row, so an operation over every row (a re-embedding) covers them
        all. (It used to re-embed the rows it knew and switch the file's
        dimension under another process's newer rows, which then no longer opened.)"""
        self._begin(fresh=False)
        if self._data_version() != self._seen_version:
            self._reload()

    def _reload(self) -> None:
        version = self._data_version()  # before the read: a commit landing during it is caught up next call
        self._check_header()  # before anything is dropped
        self._cache = RecordCache(hnsw_from=self._cache.hnsw_from)
        self._rowid.clear()
        self._by_rowid.clear()
        self._bm25 = BM25Index()
        self._seen_version = -1  # a read that fails part-way leaves a partial cache: the next call reads again
        self._load_or_say_why()
        self._seen_version = version  # only once read whole: a read that failed (a re-key landing in it) is tried again
        self._stale = False

    def _data_version(self) -> int:
        return int(list(self.db.execute("PRAGMA data_version"))[0][0])

    def changed_elsewhere(self) -> bool:
        """True when another connection (another process) committed since this
        one last read the file: SQLite's data_version moves only for others'
        commits. Inside our own write transaction nobody else can have."""
        return not self._in_txn and self._data_version() != self._seen_version

