"""An encrypted SQLite store's key (``SqliteStore``'s part that is about
sealing): the passphrase checked before anything is written, a new file
sealed, an old one's fields bound to their rows, the passphrase changed in
one transaction, and another opener's change of key noticed. The store keeps
the cache, the rows and the transactions; ``sqlite_file.Fields`` says how one
field is sealed.
"""
from __future__ import annotations

import json
import logging

from .crypto import Damaged, Sealer, WrongPassphrase
from .port import StoreError
from .sqlite_file import SEALING, Fields, meta_get, meta_put

log = logging.getLogger("naia_memory")


def _roll_back(db) -> None:
    """Undo the open transaction, if SQLite has not already (a failed COMMIT on
    a full disk rolls back by itself; a second ROLLBACK raised and hid the error)."""
    if db.in_transaction:
        db.execute("ROLLBACK")


class SealedFile:
    """Mixed into ``SqliteStore``: reads ``db``, ``path``, ``_sealer``,
    ``_fields`` and its transaction methods."""

    def _check_key(self, passphrase: str | None) -> None:
        """Before ``migrate`` writes anything: an encrypted file's key checked,
        a passphrase given for a plain store that holds something refused
        (``_open_sealer`` looks again under the write lock)."""
        header = self._meta_get("encryption")
        if header is not None:
            if passphrase is None:
                raise StoreError(f"{self.path} is encrypted; open it with passphrase=")
            self._sealer = Sealer.from_header(header.encode("utf-8"), passphrase, self.path)
        elif passphrase is not None and self._holds_anything():
            raise StoreError(f"{self.path} is not encrypted; open it without a passphrase")

    def _holds_anything(self) -> bool:
        tables = {t for (t,) in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return self._meta_get("embedder") is not None or any(
            list(self.db.execute(f"SELECT 1 FROM {t} LIMIT 1")) for t in ("memories", "log", "edges") if t in tables)

    def _open_sealer(self, passphrase: str | None) -> None:
        if self._sealer is not None:
            if self._meta_get("sealing") != SEALING:
                self._bind_rows()
        elif passphrase is not None:
            # anything written in the clear (a store emptied by forget keeps its log and edges) makes it a plain
            # store: sealing it from here on left plaintext rows nothing could read back, and forget then failed.
            # So does a plain opener that has bound it (it may write next); looked at and sealed in one write
            # transaction, so a plain opener cannot slip a row in between
            sealer = Sealer.new(passphrase)
            self.db.execute("BEGIN IMMEDIATE")
            try:
                if meta_get(self.db, "encryption") is not None or self._holds_anything():
                    raise StoreError(f"{self.path} is not encrypted, or another opener has just made it so; "
                                     "open it without a passphrase (or again, with it)")
                meta_put(self.db, "encryption", sealer.header.decode("utf-8"))
                meta_put(self.db, "sealing", SEALING)
                self.db.execute("COMMIT")
            except BaseException:
                _roll_back(self.db)
                raise
            self._sealer = sealer

    def rekey(self, passphrase: str | None) -> None:
        """Seal an encrypted store under another passphrase (a new salt and
        key): every sealed field (records, vectors, log entries, the graph)
        opened under the old key and sealed under the new one, with the new
        header, in one write transaction, so the file is whole under one key
        or the other; then the WAL is checkpointed, so no page under the old
        key is left beside it. Another process that has the store open under
        the old key is refused its next read or write (``WrongPassphrase``)
        and writes nothing. A plain SQLite file is not encrypted in place
        (its FTS5 index holds the words; export it through the JSON store).
        Backups are left as made and from now on count as sealed apart from
        the store (a forget names them stale instead of copying the store,
        under the new key, over a copy made under the old one)."""
        import apsw

        if self.db is None:
            raise StoreError(f"{self.path}: this store is closed")
        if self._sealer is None or passphrase is None:
            raise NotImplementedError(
                f"{self.path}: a SQLite store can change the passphrase it was created with, not gain or drop "
                "encryption in place; copy it into a store created with (or without) a passphrase instead")
        new = Sealer.new(passphrase)  # an empty passphrase is refused before anything is written
        old_fields, new_fields = self._fields, Fields(new, self.path)
        self.commit()
        self._begin()  # the write lock: no other process adds a row under the old key meanwhile
        try:
            self._check_header()  # and none re-keyed it first
            self._reseal(old_fields, new_fields)
            graph = self._meta_get("graph_sealed")
            if graph is not None:
                self._meta_set("graph_sealed", new_fields.seal_text(old_fields.open_text(graph, b"graph"), b"graph"))
            self._meta_set("encryption", new.header.decode("utf-8"))
            backups = self.backups()
            if backups:
                self._meta_set("backups", [{**b, "sealed_separately": True} for b in backups])
            self.db.execute("COMMIT")
        except BaseException:
            _roll_back(self.db)
            raise
        finally:
            self._in_txn = False
        self._sealer, self._fields = new, new_fields  # ids made from here on are hashed under the new key
        try:
            busy = self.erase_freed()
        except apsw.BusyError:
            busy = True
        if busy:
            log.warning("%s: re-keyed, but another connection is reading it, so pages under the old key stay in the "
                        "write-ahead log until the next checkpoint (when the other connections let go)", self.path)

    def _reseal(self, old: Fields, new: Fields) -> None:
        """Every record, vector and log entry opened as ``old`` wrote it and
        sealed as ``new`` writes it (inside the caller's write transaction)."""
        rows = list(self.db.execute("SELECT rowid, id, record, embedding FROM memories"))
        texts = [old.open_text(rec, b"record", rid) for _, rid, rec, _ in rows]
        for (_, rid, _, _), text in zip(rows, texts):  # what is bound to a row now must have been its own
            if json.loads(text).get("id") != rid:
                raise Damaged(f"{self.path}: the row of {rid} holds another memory's record; nothing was re-sealed")
        self.db.executemany("UPDATE memories SET record = ?, embedding = ? WHERE rowid = ?", [
            (new.seal_text(text, b"record", rid), new.seal_vec(old.open_vec(blob, rid), rid), rowid)
            for (rowid, rid, _, blob), text in zip(rows, texts)])
        entries = list(self.db.execute("SELECT seq, entry FROM log"))
        self.db.executemany("UPDATE log SET entry = ? WHERE seq = ?", [
            (new.seal_text(old.open_text(e, b"log", seq), b"log", seq), seq) for seq, e in entries])

    def _bind_rows(self) -> None:
        """A store sealed before sealing 2 (session 35): its fields re-sealed
        bound to their rows, once, in one write transaction, when it is first
        opened with its key (another opener may have just done it)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            if meta_get(self.db, "sealing") != SEALING:
                self._reseal(Fields(self._sealer, self.path, bound=False), Fields(self._sealer, self.path))
                meta_put(self.db, "sealing", SEALING)
            self.db.execute("COMMIT")
        except BaseException:
            _roll_back(self.db)
            raise

    def _check_header(self) -> None:
        """An encrypted store re-keyed by another opener since this one read its
        header: refused, not read as damage (or written under the old key)."""
        if self._sealer is not None and self._meta_get("encryption") != self._sealer.header.decode("utf-8"):
            raise WrongPassphrase(f"{self.path} was re-keyed by another opener since this one opened it; nothing "
                                  "was written: reopen it with the new passphrase")

