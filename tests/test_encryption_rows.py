"""An encrypted SQLite store's sealed fields are bound to their rows (session
35, sealing 2): ids, kinds and times stay readable there, so one who holds
the file could swap two memories' sealed vectors, records or log entries,
and each still opened under the key. Each now carries its row (the memory's
id, the log entry's number) in its associated data; a store sealed before is
re-sealed once, in one transaction, when it is first opened with its key."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest

pytest.importorskip("cryptography")
apsw = pytest.importorskip("apsw")

from naia_memory import MemorySystem  # noqa: E402
from naia_memory.embedders import HashingEmbedder  # noqa: E402
from naia_memory.stores.crypto import Damaged, WrongPassphrase  # noqa: E402
from naia_memory.stores.sqlite_file import SEALING, SQLITE_SCHEMA_VERSION, Fields, meta_get  # noqa: E402
from naia_memory.stores.sqlite_store import SqliteStore  # noqa: E402

PASS = "correct horse battery staple"


def _store(path, tokenizer, t0) -> tuple:
    m = MemorySystem(store=SqliteStore(path, passphrase=PASS), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    m.encode(content="I live in Lisbon and work at a bakery", now=t0)
    m.encode(content="My sister Mina studies medicine in Daegu", now=t0 + timedelta(minutes=1))
    m.consolidate(now=t0 + timedelta(hours=1))
    state = sorted((r.id, r.content) for r in m.store.records(None)), m.store.log()
    m.close()
    return state


def _swap(path, table: str, column: str, key: str) -> None:
    db = apsw.Connection(str(path))
    (a, va), (b, vb) = list(db.execute(f"SELECT {key}, {column} FROM {table} ORDER BY {key} LIMIT 2"))
    with db:
        db.execute(f"UPDATE {table} SET {column} = ? WHERE {key} = ?", (vb, a))
        db.execute(f"UPDATE {table} SET {column} = ? WHERE {key} = ?", (va, b))
    db.close()


@pytest.mark.parametrize("column", ["embedding", "record"])
def test_two_memories_sealed_parts_swapped_are_refused(tmp_path, tokenizer, t0, column):
    path = tmp_path / "m.sqlite"
    _store(path, tokenizer, t0)
    _swap(path, "memories", column, "rowid")
    with pytest.raises(Damaged):
        SqliteStore(path, passphrase=PASS)


def test_two_log_entries_swapped_are_refused(tmp_path, tokenizer, t0):
    path = tmp_path / "m.sqlite"
    _store(path, tokenizer, t0)
    _swap(path, "log", "entry", "seq")
    with pytest.raises(Damaged):  # since sealing 3 the roster refuses the file at open; before, the read of the log
        s = SqliteStore(path, passphrase=PASS)
        try:
            s.log()
        finally:
            s.close()


def _unbind(path) -> None:
    """Rewrite a store as sealing 1 wrote it: fields sealed to their purpose only, no 'sealing' in meta."""
    s = SqliteStore(path, passphrase=PASS)
    s.db.execute("BEGIN IMMEDIATE")
    s._reseal(Fields(s._sealer, s.path), Fields(s._sealer, s.path, bound=False))
    s.db.execute("DELETE FROM meta WHERE key = 'sealing'")
    s.db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    s.db.execute("COMMIT")
    s.db.close()
    s.db = None


def test_a_store_sealed_before_is_bound_when_first_opened_with_its_key(tmp_path, tokenizer, t0):
    path = tmp_path / "m.sqlite"
    state = _store(path, tokenizer, t0)
    _unbind(path)
    raw = path.read_bytes()
    with pytest.raises(WrongPassphrase):
        SqliteStore(path, passphrase="not it")
    assert path.read_bytes() == raw  # the key is checked before anything is re-sealed
    s = SqliteStore(path, passphrase=PASS)
    assert (sorted((r.id, r.content) for r in s.records(None)), s.log()) == state
    assert meta_get(s.db, "sealing") == SEALING and meta_get(s.db, "schema_version") == SQLITE_SCHEMA_VERSION
    s.close()
    _swap(path, "memories", "embedding", "rowid")  # and from now on a swap is caught
    with pytest.raises(Damaged):
        SqliteStore(path, passphrase=PASS)


def test_a_new_encrypted_store_is_bound_from_the_start(tmp_path, tokenizer, t0):
    path = tmp_path / "m.sqlite"
    _store(path, tokenizer, t0)
    db = apsw.Connection(str(path))
    assert json.loads(list(db.execute("SELECT value FROM meta WHERE key = 'sealing'"))[0][0]) == SEALING
    db.close()


def test_a_record_swapped_before_the_binding_is_not_bound_to_the_wrong_row(tmp_path, tokenizer, t0):
    path = tmp_path / "m.sqlite"
    _store(path, tokenizer, t0)
    _unbind(path)
    _swap(path, "memories", "record", "rowid")  # under sealing 1 this opened: bound now, it would pass for good
    def sealed():
        db = apsw.Connection(str(path))
        try:
            return list(db.execute("SELECT id, record, embedding FROM memories ORDER BY rowid")), \
                list(db.execute("SELECT seq, entry FROM log ORDER BY seq"))
        finally:
            db.close()

    before = sealed()
    with pytest.raises(Damaged, match="another memory's record"):
        SqliteStore(path, passphrase=PASS)
    assert sealed() == before  # nothing re-sealed
