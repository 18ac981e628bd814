"""The SQLite file under ``SqliteStore``: how it is opened and checked, its
schema and migrations, how a field is written (sealed when the store is
encrypted), and the sqlite-vec query. The store keeps the cache and the
transactions; what is about the file itself is here.
"""
from __future__ import annotations

import json
import os
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..records import MemoryRecord
from .crypto import Sealer
from .port import RecordFilter, StoreError

SQLITE_SCHEMA_VERSION = 3
# how an encrypted store's fields are sealed (meta "sealing"): 2 binds each to its row (a record and its vector
# to the memory's id, a log entry to its number), so a sealed part moved to another row fails authentication;
# 3 adds the roster (``sqlite_roster``), so a row removed, or put back from an older copy, is seen
SEALING = 3
VECTOR_INDEXES = ("matrix", "sqlite-vec")


def _v1(db, dim: int | None) -> None:
    db.execute("""
        CREATE TABLE IF NOT EXISTS memories (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL, project TEXT NOT NULL, status TEXT NOT NULL,
            created_at TEXT NOT NULL, valid_from TEXT, valid_to TEXT,
            ntokens INTEGER NOT NULL,
            record TEXT NOT NULL,
            embedding BLOB NOT NULL
        );
        CREATE INDEX IF NOT EXISTS memories_scope ON memories(project, status, kind);
        CREATE INDEX IF NOT EXISTS memories_validity ON memories(valid_from, valid_to);
        CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(tokens, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 0');
        CREATE VIRTUAL TABLE IF NOT EXISTS memories_vocab USING fts5vocab(memories_fts, 'row');
        CREATE VIRTUAL TABLE IF NOT EXISTS memories_inst USING fts5vocab(memories_fts, 'instance');
        CREATE TABLE IF NOT EXISTS edges (a TEXT NOT NULL, b TEXT NOT NULL, w REAL NOT NULL, PRIMARY KEY (a, b));
        CREATE TABLE IF NOT EXISTS log (seq INTEGER PRIMARY KEY, entry TEXT NOT NULL);
    """)


def _v2(db, dim: int | None) -> None:
    """Nothing in the schema: an encrypted store's fields are re-sealed bound
    to their rows when it is next opened with its key (``SqliteStore``), and
    the number tells a library from before that this file is not its own."""


def _v3(db, dim: int | None) -> None:
    """Nothing in the schema either: an encrypted store gets its roster when
    next opened with its key, and a library from before (which would write
    rows without keeping the roster) refuses the file by this number."""


MIGRATIONS: dict[int, Callable] = {1: _v1, 2: _v2, 3: _v3}


def _term(token: str) -> str:
    """Morphemes go into FTS5 hex-encoded: exactly one FTS5 token each, whatever
    punctuation or script they hold, so FTS5 never re-tokenizes the engine's
    tokens ("i'm" would otherwise become "i" and "m")."""
    return token.encode("utf-8").hex()


def fts_text(tokens: Sequence[str]) -> str:
    return " ".join(_term(t) for t in tokens)


def create_private(path: str) -> None:
    """Create ``path`` readable by the user only (0600) if it does not exist."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


def open_connection(path: str, busy_timeout_ms: int):
    """An apsw connection with sqlite-vec loaded, WAL and secure delete on, the
    file's integrity checked (O(file), on every open) and a ``meta`` table. A
    file that is not a readable store, or a damaged one, is refused and left
    untouched."""
    import apsw
    import sqlite_vec

    create_private(path)  # SQLite gives its -wal and -shm files the database file's mode
    db = apsw.Connection(path)
    db.enable_load_extension(True)
    db.load_extension(sqlite_vec.loadable_path())
    db.enable_load_extension(False)
    db.setbusytimeout(busy_timeout_ms)
    # secure_delete: a forgotten memory's text is overwritten in the file, not left in free pages
    # one statement each, results read: apsw runs a multi-statement string
    # lazily, so a pragma after one that returns a row never ran
    try:
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON", "secure_delete=ON"):
            list(db.execute(f"PRAGMA {pragma}"))
        check = [r[0] for r in db.execute("PRAGMA quick_check")]
    except apsw.Error as e:
        db.close()
        raise StoreError(f"{path} is not a readable SQLite store ({type(e).__name__}: {e}); "
                         "the file was left untouched") from e
    if check != ["ok"]:
        db.close()
        raise StoreError(f"{path} is damaged (quick_check: {'; '.join(map(str, check[:3]))}); "
                         "the file was left untouched (restore a backup)")
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    return db


def meta_get(db, key: str) -> Any:
    row = list(db.execute("SELECT value FROM meta WHERE key = ?", (key,)))
    return json.loads(row[0][0]) if row else None


def meta_put(db, key: str, value: Any) -> None:
    """Set one meta value (JSON), inside whatever transaction the caller holds."""
    db.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
               (key, json.dumps(value)))


def meta_drop(db, key: str) -> None:
    db.execute("DELETE FROM meta WHERE key = ?", (key,))


def migrate(db, path: str) -> None:
    """Bring the schema to this library's version, one numbered step at a time."""
    version = meta_get(db, "schema_version") or 0
    if version > SQLITE_SCHEMA_VERSION:
        raise StoreError(f"{path} has schema {version}, newer than this library ({SQLITE_SCHEMA_VERSION})")
    emb = meta_get(db, "embedder")
    with db:
        for v in range(version + 1, SQLITE_SCHEMA_VERSION + 1):
            MIGRATIONS[v](db, emb["dim"] if emb else None)
            meta_put(db, "schema_version", v)


class Fields:
    """How a record's JSON, its vector, a log entry or the graph is written:
    as is, or sealed with AES-256-GCM under the store's key, each with its
    purpose and (``bound``, sealing 2) its row in the associated data: a
    sealed vector cannot pass for a sealed record, nor one memory's vector
    (or log entry) for another's. ``bound=False`` reads what sealing 1 wrote."""

    def __init__(self, sealer: Sealer | None, path: str, bound: bool = True) -> None:
        self.sealer = sealer
        self.path = path
        self.bound = bound

    def _ad(self, purpose: bytes, row: str | int | None) -> bytes:
        return purpose + b"|" + str(row).encode("utf-8") if self.bound and row is not None else purpose

    def seal_text(self, text: str, purpose: bytes, row: str | int | None = None) -> str:
        if self.sealer is None:
            return text
        return self.sealer.seal(text.encode("utf-8"), self._ad(purpose, row)).decode("ascii")

    def open_text(self, text: str, purpose: bytes, row: str | int | None = None) -> str:
        if self.sealer is None:
            return text
        return self.sealer.open(text.encode("ascii"), self._ad(purpose, row), self.path).decode("utf-8")

    def seal_vec(self, vec: np.ndarray, row: str) -> bytes:
        raw = np.asarray(vec, dtype="<f4").tobytes()
        return raw if self.sealer is None else self.sealer.seal(raw, self._ad(b"vector", row))

    def open_vec(self, blob: bytes, row: str) -> np.ndarray:
        raw = blob if self.sealer is None else self.sealer.open(blob, self._ad(b"vector", row), self.path)
        return np.frombuffer(raw, dtype="<f4")


def vec_top_k(db, query: np.ndarray, k: int, flt: RecordFilter, by_rowid: Mapping[int, str],
              records: Mapping[str, MemoryRecord], embeddings: Callable[[Sequence[str]], np.ndarray]) -> list[tuple[str, float]]:
    """The ``k`` nearest records that pass ``flt``, through the vec0 table.
    vec0 picks the candidates (a wider net while too few pass the filter); the
    scores are recomputed from the same float32 vectors as the matrix path, so
    ties break on id identically."""
    n = len(records)
    if n == 0 or k <= 0:
        return []
    q = np.asarray(query, dtype="<f4")
    width = min(n, max(4 * k, 64))
    while True:
        rows = db.execute("SELECT rowid FROM memories_vec WHERE embedding MATCH ? AND k = ?", (q.tobytes(), width))
        ids = [i for (rid,) in rows if flt.matches(records[i := by_rowid[rid]])]
        sims = embeddings(ids) @ q if ids else []
        hits = sorted(zip(ids, map(float, sims)), key=lambda x: (-x[1], x[0]))[:k]
        if len(hits) == k or width >= n:
            return hits
        width = min(n, width * 4)
