"""An encrypted SQLite store's key (``SqliteStore``'s part that is about
sealing): the passphrase checked before anything is written, a new file
sealed, an old one's fields bound to their rows and given a roster, the
passphrase changed (or the file encrypted, or written in the clear) in one
transaction, another opener's change of key noticed, and the roster kept and
checked. The store keeps the cache, the rows and the transactions;
``sqlite_file.Fields`` says how one field is sealed, ``sqlite_roster`` what
the roster holds.
"""
from __future__ import annotations

import json
import logging

from typing import Mapping

from .crypto import Damaged, Sealer, WrongPassphrase
from .id_rename import keyed_ids, renamed
from .port import StoreError
from .sqlite_file import SEALING, Fields, fts_text, meta_drop, meta_get, meta_put
from .sqlite_roster import Delta, Roster, graph_mark, log_mark, memory_mark, roster_key

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
                self._write_roster(Fields(sealer, self.path), Roster())
                self.db.execute("COMMIT")
            except BaseException:
                _roll_back(self.db)
                raise
            self._sealer = sealer

    def rekey(self, passphrase: str | None) -> dict[str, str]:
        """Seal the store under another passphrase (a new salt and key), under
        one for the first time, or (``None``) write it in the clear: every
        sealed field (records, vectors, log entries, the graph) opened under
        the old key and written under the new one, with the new header, in
        one write transaction, so the file is whole one way or the other;
        then the WAL is checkpointed, so no page of the old form is left
        beside it. Another process that has the store open as it was is
        refused its next read or write and writes nothing.

        Encrypting a plain file also drops its FTS5 rows (their terms are the
        words) and renames every memory to an id hashed under the new key (a
        plain id is a hash of the text, which the readable id column would
        let anyone confirm a guess of; ``id_rename``): the returned map is
        old id -> new id, empty when no id changed. Writing it in the clear
        rebuilds the FTS5 rows. Backups are left as made and from now on
        count as sealed apart from the store (a forget names them stale
        instead of copying the store, under the new key, over a copy made
        under the old one)."""
        import apsw

        if self.db is None:
            raise StoreError(f"{self.path}: this store is closed")
        if self._sealer is None and passphrase is None:
            return {}  # already in the clear
        if passphrase is not None and self.vector_index == "sqlite-vec":
            raise ValueError(f"{self.path}: sqlite-vec keeps plaintext vectors; reopen the store with "
                             "vector_index='matrix' to encrypt it (nothing was written)")
        new = Sealer.new(passphrase) if passphrase is not None else None  # an empty passphrase is refused here
        old_fields, new_fields = self._fields, Fields(new, self.path)
        gains, drops = self._sealer is None, new is None
        self.commit()
        self._begin(fresh=False)  # the write lock: no other process adds a row in the old form meanwhile
        try:
            self._check_header()  # and none re-keyed (or sealed) it first
            if not gains:  # a file changed behind this opener is refused, not sealed in under a fresh roster
                self._check_roster(self._count_roster(old_fields))
            backups = self.backups()
            ids = keyed_ids((i for (i,) in self.db.execute("SELECT id FROM memories")), new.id_key) if gains else {}
            self._reseal(old_fields, new_fields, ids)
            self._move_graph(old_fields, new_fields)
            if gains:
                self.db.execute("INSERT INTO memories_fts(memories_fts) VALUES ('delete-all')")
                self.db.execute("DROP TABLE IF EXISTS memories_vec")  # built by a sqlite-vec session: plain vectors
            if drops:
                self._index_terms()
                for key in ("encryption", "sealing", "roster"):
                    meta_drop(self.db, key)
            else:
                meta_put(self.db, "encryption", new.header.decode("utf-8"))
                meta_put(self.db, "sealing", SEALING)
                self._write_roster(new_fields, self._count_roster(new_fields))
            if self._meta_get("backups") is not None:  # (an empty list sealed under the old key would not open)
                self._put_backups(new_fields, [{**b, "sealed_separately": True} for b in backups])
            self.db.execute("COMMIT")
        except BaseException:
            _roll_back(self.db)
            raise
        finally:
            self._in_txn = False
        self._sealer, self._fields = new, new_fields  # ids made from here on are hashed under the new key
        if gains or drops:
            self._reload()  # new ids, and the graph read from where it now lives
        try:
            busy = self.erase_freed()
        except apsw.BusyError:
            busy = True
        if busy:
            log.warning("%s: re-keyed, but another connection is reading it, so pages of the old form stay in the "
                        "write-ahead log until a truncating checkpoint: the next forget, or the last connection to "
                        "the file closing", self.path)
        return ids

    def _reseal(self, old: Fields, new: Fields, ids: Mapping[str, str] | None = None) -> None:
        """Every record, vector and log entry opened as ``old`` wrote it and
        written as ``new`` writes it, each memory under its new id if ``ids``
        renames it (inside the caller's write transaction)."""
        ids = ids or {}
        rows = list(self.db.execute("SELECT rowid, id, record, embedding FROM memories"))
        texts = [old.open_text(rec, b"record", rid) for _, rid, rec, _ in rows]
        for (_, rid, _, _), text in zip(rows, texts):  # what is bound to a row now must have been its own
            if json.loads(text).get("id") != rid:
                raise Damaged(f"{self.path}: the row of {rid} holds another memory's record; nothing was re-sealed")
        if ids:
            texts = [json.dumps(renamed(json.loads(t), ids), ensure_ascii=False) for t in texts]
        self.db.executemany("UPDATE memories SET id = ?, record = ?, embedding = ? WHERE rowid = ?", [
            (ids.get(rid, rid), new.seal_text(text, b"record", ids.get(rid, rid)),
             new.seal_vec(old.open_vec(blob, rid), ids.get(rid, rid)), rowid)
            for (rowid, rid, _, blob), text in zip(rows, texts)])
        entries = [(seq, old.open_text(e, b"log", seq)) for seq, e in self.db.execute("SELECT seq, entry FROM log")]
        if ids:
            entries = [(seq, json.dumps(renamed(json.loads(e), ids, inside=True), ensure_ascii=False, default=str))
                       for seq, e in entries]
        self.db.executemany("UPDATE log SET entry = ? WHERE seq = ?", [
            (new.seal_text(e, b"log", seq), seq) for seq, e in entries])

    def _move_graph(self, old: Fields, new: Fields) -> None:
        """The entity graph where ``new`` keeps it: one sealed blob, or the
        plain ``edges`` table."""
        if old.sealer is not None:
            sealed = self._meta_get("graph_sealed")
            edges = json.loads(old.open_text(sealed, b"graph")) if sealed is not None else []
        else:
            edges = [[a, b, w] for a, b, w in self.db.execute("SELECT a, b, w FROM edges ORDER BY a, b")]
        if new.sealer is not None:
            if edges or old.sealer is not None:
                meta_put(self.db, "graph_sealed", new.seal_text(json.dumps(edges, ensure_ascii=False), b"graph"))
            self.db.execute("DELETE FROM edges")
        else:
            meta_drop(self.db, "graph_sealed")
            self.db.executemany("INSERT INTO edges(a, b, w) VALUES (?, ?, ?) ON CONFLICT(a, b) DO UPDATE SET w = excluded.w",
                                edges)

    def _index_terms(self) -> None:
        """A store written in the clear keeps its terms in FTS5 for other tools (``SqliteStore``)."""
        rows = [(rowid, json.loads(rec)["tokens"]) for rowid, rec in self.db.execute("SELECT rowid, record FROM memories")]
        self.db.executemany("INSERT INTO memories_fts(rowid, tokens) VALUES (?, ?)",
                            [(rowid, fts_text(tokens)) for rowid, tokens in rows])

    def _bind_rows(self) -> None:
        """A store sealed before sealing 3, brought to it once, in one write
        transaction, when it is first opened with its key (another opener may
        have just done it): fields sealed before sealing 2 (session 35)
        re-sealed bound to their rows, then the roster counted and sealed."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self._check_header()  # re-keyed or written in the clear by another opener since the key was checked
            sealing = meta_get(self.db, "sealing")
            if sealing != SEALING:
                fields = Fields(self._sealer, self.path)
                if sealing is None or sealing < 2:
                    self._reseal(Fields(self._sealer, self.path, bound=False), fields)
                listed = meta_get(self.db, "backups")
                if isinstance(listed, list):  # written in the clear before sealing 3
                    self._put_backups(fields, listed)
                self._write_roster(fields, self._count_roster(fields))
                meta_put(self.db, "sealing", SEALING)
            self.db.execute("COMMIT")
        except BaseException:
            _roll_back(self.db)
            raise

    # ---- the roster (sqlite_roster) ------------------------------------------------------
    def _count_roster(self, fields: Fields) -> Roster:
        """The roster of what the file holds now, every row read (a new key, a first count)."""
        key = roster_key(fields.sealer.id_key)
        rows = memories = 0
        for rid, record, vector in self.db.execute("SELECT id, record, embedding FROM memories"):
            rows ^= memory_mark(key, rid, record, vector)
            memories += 1
        entries, log_x = self._log_roster(key)
        return Roster(memories, rows, entries, log_x, graph_mark(self._meta_get("graph_sealed")))

    def _log_roster(self, key: bytes) -> tuple[int, int]:
        n = x = 0
        for seq, entry in self.db.execute("SELECT seq, entry FROM log"):
            x ^= log_mark(key, seq, entry)
            n += 1
        return n, x

    def _write_roster(self, fields: Fields, roster: Roster) -> None:
        meta_put(self.db, "roster", fields.seal_text(roster.to_text(), b"roster"))

    def _read_roster(self) -> Roster:
        sealed = self._meta_get("roster")
        if sealed is None:  # sealing 3 promises one: taken out of the file
            raise Damaged(f"{self.path}: its roster (what the file holds, sealed) is missing; not loaded")
        return Roster.from_text(self._fields.open_text(sealed, b"roster"))

    def _check_roster(self, found: Roster) -> None:
        """The rows just read against the roster last written: a file that
        lost a row, or got one back from an older copy, is refused."""
        written = self._read_roster()
        if self._in_txn:  # read inside this process's own write transaction: what it wrote is not folded in yet
            written = written.plus(self._delta)
        problems = written.differences(found)
        if problems:
            raise Damaged(f"{self.path}: {'; '.join(problems)}; not loaded (restore a backup)")

    def _mark(self, rid: str, record: str, vector: bytes) -> None:
        """A row as written now, into this transaction's delta."""
        if self._sealer is not None:
            self._delta.rows ^= memory_mark(roster_key(self._sealer.id_key), rid, record, vector)

    def _unmark(self, rid: str) -> tuple[str, bytes] | None:
        """A row as the file holds it before this write (read under the write
        lock, so another process's change since counts), out of the delta;
        its sealed record and vector returned."""
        if self._sealer is None:
            return None
        row = list(self.db.execute("SELECT record, embedding FROM memories WHERE id = ?", (rid,)))
        if not row:
            return None
        self._mark(rid, *row[0])
        return row[0]

    def _mark_log(self, entries: list[tuple[int, str | None, str]]) -> None:
        """Log entries (number, sealed text before or None for a new one, sealed text now) into the delta."""
        if self._sealer is None:
            return
        key = roster_key(self._sealer.id_key)
        for seq, was, now in entries:
            self._delta.log ^= log_mark(key, seq, now) ^ (log_mark(key, seq, was) if was is not None else 0)
            self._delta.entries += was is None

    def _fold_roster(self) -> None:
        """This transaction's changes into the roster, under its write lock (so
        another process's commits since are in the roster it reads)."""
        if self._sealer is not None and self._delta:
            self._write_roster(self._fields, self._read_roster().plus(self._delta))
            self._delta = Delta()  # folded: a COMMIT retried after a failure must not fold it twice

    # ---- the list of backups (sealed in an encrypted store: a path written into it would be overwritten by a forget)
    def backups(self) -> list[dict]:
        self._check_header()  # a plain opener of a file sealed since reads no sealed text as a list
        listed = self._meta_get("backups")
        if listed is None:
            return []
        if self._sealer is None:
            return list(listed)
        if not isinstance(listed, str):
            raise Damaged(f"{self.path}: its list of backups is not sealed (written outside this library); a forget "
                          "would have written a copy of the store to the paths it names; not used")
        return json.loads(self._fields.open_text(listed, b"backups"))

    def _put_backups(self, fields: Fields, backups: list[dict]) -> None:
        meta_put(self.db, "backups", backups if fields.sealer is None else fields.seal_text(json.dumps(backups), b"backups"))

    def _check_header(self) -> None:
        """A store re-keyed, encrypted or written in the clear by another opener
        since this one read its header: refused, not read as damage (or
        written in the form it no longer has)."""
        header = self._meta_get("encryption")
        if self._sealer is None:
            if header is not None:
                raise StoreError(f"{self.path} was encrypted by another opener since this one opened it; nothing was "
                                 "written in the clear: reopen it with the passphrase")
        elif header is None:
            raise WrongPassphrase(f"{self.path} was written in the clear by another opener since this one opened it; "
                                  "nothing was written: reopen it without a passphrase")
        elif header != self._sealer.header.decode("utf-8"):
            raise WrongPassphrase(f"{self.path} was re-keyed by another opener since this one opened it; nothing "
                                  "was written: reopen it with the new passphrase")

