"""Changing the passphrase of a store (session 35): the JSON store is sealed
anew in one atomic rename (or encrypted in place, or written in the clear);
a SQLite store's sealed fields are re-sealed in one write transaction. A
failure part-way leaves the store whole under the old key, and another
process that still holds the old key is refused, not misread as damage."""
from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest

pytest.importorskip("cryptography")

import naia_memory.stores.json_store as json_store  # noqa: E402
from naia_memory import LocalStore, MemorySystem  # noqa: E402
from naia_memory.cli import main as cli  # noqa: E402
from naia_memory.embedders import HashingEmbedder  # noqa: E402
from naia_memory.stores.crypto import Damaged, WrongPassphrase  # noqa: E402
from naia_memory.stores.port import StoreError  # noqa: E402

from .conftest import refused_after_another_opener, seal_fails_on  # noqa: E402

OLD, NEW = "correct horse battery staple", "tr0ub4dor&3 but longer"
WORDS = ["Zanzibarville", "파란코끼리"]


def _m(store, tokenizer) -> MemorySystem:
    return MemorySystem(store=store, embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)


def _fill(m, t0) -> None:
    m.encode(content=f"I live in {WORDS[0]}", now=t0)
    m.encode(content=f"나는 {WORDS[1]} 카페에서 일해", now=t0 + timedelta(minutes=1))
    m.consolidate(now=t0 + timedelta(hours=1))
    m.encode(content="My sister studies medicine in Daegu", now=t0 + timedelta(hours=2))  # a journal line after it


def _filled_sqlite(tmp_path, tokenizer, t0) -> tuple:
    """An encrypted SQLite store under the old passphrase, told ``_fill``'s turns."""
    pytest.importorskip("apsw")
    from naia_memory.stores.sqlite_store import SqliteStore

    path = tmp_path / "m.sqlite"
    m = _m(SqliteStore(path, passphrase=OLD), tokenizer)
    _fill(m, t0)
    return path, m, SqliteStore


def _leaks(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if p.is_file() for w in WORDS if w.encode() in p.read_bytes()]


def _state(store) -> tuple:
    return sorted((r.id, r.content, r.status) for r in store.records(None)), store.log(), sorted(store.graph.edges)


def test_a_json_store_changes_its_passphrase_and_keeps_everything(tmp_path, tokenizer, t0):
    path = tmp_path / "m.json"
    m = _m(LocalStore(path, passphrase=OLD), tokenizer)
    _fill(m, t0)
    before = _state(m.store)
    assert Path(f"{path}.journal").exists()  # the journal's lines are under the old key
    m.rekey(passphrase=NEW)
    assert not Path(f"{path}.journal").exists()
    r = m.encode(content="I adopted a cat named Mochi", now=t0 + timedelta(hours=3))  # sealed under the new key
    m.close()
    assert _leaks(tmp_path) == []
    with pytest.raises(WrongPassphrase):
        LocalStore(path, passphrase=OLD)
    again = LocalStore(path, passphrase=NEW)
    state = _state(again)
    assert [x for x in state[0] if x[0] != r.id] == before[0] and state[1][:len(before[1])] == before[1]
    assert again.get(r.id).content == "I adopted a cat named Mochi"
    again.close()


def test_a_plain_json_store_is_encrypted_in_place_and_back(tmp_path, tokenizer, t0):
    path = tmp_path / "m.json"
    m = _m(LocalStore(path), tokenizer)
    _fill(m, t0)
    before = _state(m.store)
    assert _leaks(tmp_path)
    m.rekey(passphrase=NEW)
    assert _leaks(tmp_path) == [] and path.read_bytes().startswith(b"NAIA-ENC1 ")
    m.close()
    with pytest.raises(StoreError, match="encrypted"):
        LocalStore(path)
    m = _m(LocalStore(path, passphrase=NEW), tokenizer)
    assert _state(m.store) == before
    m.rekey(passphrase=None)  # in the clear again
    m.close()
    plain = LocalStore(path)
    assert _state(plain) == before
    plain.rekey(None)  # already plain: nothing to do
    plain.close()
    with pytest.raises(ValueError, match="empty"):
        LocalStore(path).rekey("")


def test_a_json_rekey_that_fails_leaves_the_old_key_working(tmp_path, tokenizer, t0, monkeypatch):
    path = tmp_path / "m.json"
    m = _m(LocalStore(path, passphrase=OLD), tokenizer)
    _fill(m, t0)
    real = json_store.atomic_write_chunks
    calls = []

    def second_write_fails(p, chunks):
        calls.append(p)
        if len(calls) == 2:  # the first folds the journal in under the old key; the second seals under the new one
            raise OSError(28, "No space left on device")
        return real(p, chunks)

    monkeypatch.setattr(json_store, "atomic_write_chunks", second_write_fails)
    with pytest.raises(OSError):
        m.rekey(passphrase=NEW)
    monkeypatch.undo()
    r = m.encode(content="I adopted a cat named Mochi", now=t0 + timedelta(hours=3))  # still under the old key
    before = _state(m.store)
    m.close()
    with pytest.raises(WrongPassphrase):
        LocalStore(path, passphrase=NEW)
    again = LocalStore(path, passphrase=OLD)
    assert _state(again) == before and again.get(r.id) is not None
    assert [p.name for p in tmp_path.glob(".*.tmp")] == []
    again.close()


def test_a_sqlite_store_changes_its_passphrase_in_one_transaction(tmp_path, tokenizer, t0):
    path, m, SqliteStore = _filled_sqlite(tmp_path, tokenizer, t0)
    before = _state(m.store)
    vectors = {r.id: m.store.embeddings([r.id])[0].copy() for r in m.store.records(None)}
    m.rekey(passphrase=NEW)
    wal = Path(f"{path}-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # checkpointed: no page under the old key left in the WAL
    r = m.encode(content="I adopted a cat named Mochi", now=t0 + timedelta(hours=3))
    assert m.recall(query=WORDS[0], now=t0 + timedelta(hours=4)).contents()[0].endswith(WORDS[0])
    m.close()
    assert _leaks(tmp_path) == []
    with pytest.raises(WrongPassphrase):
        SqliteStore(path, passphrase=OLD)
    again = SqliteStore(path, passphrase=NEW)
    state = _state(again)
    assert [x for x in state[0] if x[0] != r.id] == before[0] and state[2] == before[2]
    assert all((again.embeddings([i])[0] == v).all() for i, v in vectors.items())
    again.close()


def test_a_sqlite_rekey_that_fails_part_way_rolls_back(tmp_path, tokenizer, t0, monkeypatch):
    pytest.importorskip("apsw")
    from naia_memory.stores.sqlite_store import SqliteStore

    path = tmp_path / "m.sqlite"
    m = _m(SqliteStore(path, passphrase=OLD), tokenizer)
    _fill(m, t0)
    before = _state(m.store)
    seal_fails_on(monkeypatch, 3, "the machine ran out of something")
    with pytest.raises(RuntimeError):
        m.rekey(passphrase=NEW)
    monkeypatch.undo()
    r = m.encode(content="I adopted a cat named Mochi", now=t0 + timedelta(hours=3))  # the old key still writes
    m.close()
    with pytest.raises(WrongPassphrase):
        SqliteStore(path, passphrase=NEW)
    again = SqliteStore(path, passphrase=OLD)
    assert [x for x in _state(again)[0] if x[0] != r.id] == before[0] and again.get(r.id) is not None
    again.close()


def test_another_opener_under_the_old_key_is_refused_and_writes_nothing(tmp_path, tokenizer, t0):
    path, a, SqliteStore = _filled_sqlite(tmp_path, tokenizer, t0)
    b = _m(SqliteStore(path, passphrase=OLD), tokenizer)
    a.rekey(passphrase=NEW)
    n = refused_after_another_opener(a, b, WrongPassphrase, "re-keyed by another opener", "Daegu", t0)
    again = SqliteStore(path, passphrase=NEW)
    assert len(again) == n and not any("Secret" in r.content for r in again.records(None))
    again.close()


def test_the_command_changes_the_passphrase(tmp_path, tokenizer, t0, monkeypatch, capsys):
    path = tmp_path / "m.json"
    m = _m(LocalStore(path, passphrase=OLD), tokenizer)
    _fill(m, t0)
    n = len(m.store)
    m.close()
    monkeypatch.setenv("OLD_PASS", OLD)
    monkeypatch.setenv("NEW_PASS", NEW)
    store = ["--store", str(path)]
    assert cli([*store, "--passphrase-env", "OLD_PASS", "rekey", "--new-passphrase-env", "EMPTY_VAR"]) == 2
    assert "empty or unset" in capsys.readouterr().err
    assert cli([*store, "--passphrase-env", "NEW_PASS", "rekey", "--new-passphrase-env", "NEW_PASS"]) == 2  # wrong key
    assert cli([*store, "--passphrase-env", "OLD_PASS", "rekey", "--new-passphrase-env", "NEW_PASS"]) == 0
    assert "new passphrase" in capsys.readouterr().out
    assert cli([*store, "--passphrase-env", "NEW_PASS", "stats"]) == 0
    assert f'"memories": {n}' in capsys.readouterr().out
    assert cli(["--store", str(tmp_path / "missing.json"), "rekey", "--plain"]) == 2
    assert not (tmp_path / "missing.json").exists()
    assert cli([*store, "--passphrase-env", "NEW_PASS", "rekey", "--plain"]) == 0
    assert _leaks(tmp_path) and os.stat(path).st_mode & 0o077 == 0


def test_backups_stay_as_made_and_a_forget_after_a_rekey_names_them_stale(tmp_path, tokenizer, t0):
    """A copy of the store made under the old key used to be refreshed by the
    next forget as a copy of the store: under the new key, or in the clear
    after a rekey to None (found by a review, session 35)."""
    path = tmp_path / "m.json"
    m = _m(LocalStore(path, passphrase=OLD), tokenizer)
    _fill(m, t0)
    copy = m.backup(path=str(tmp_path / "copy.json"))  # a copy of the store, under its key
    own = m.backup(path=str(tmp_path / "own.json"), passphrase="the backup's own one")
    m.rekey(passphrase=None)  # in the clear from now on
    victim = next(r for r in m.store.records(None) if WORDS[0] in r.content)
    m.forget(memory_id=victim.id)
    stale = [e for e in m.audit_log() if e.get("op") == "BACKUPS"][-1]["stale"]
    m.close()
    assert sorted(stale) == sorted([str(Path(copy).resolve()), str(Path(own).resolve())])
    assert Path(copy).read_bytes().startswith(b"NAIA-ENC1 ")  # not rewritten in the clear
    for backup, secret in ((copy, OLD), (own, "the backup's own one")):
        kept = LocalStore(backup, passphrase=secret)  # as made: left, and named stale
        assert any(WORDS[0] in r.content for r in kept.records(None))
        kept.close()


def test_a_rekey_interrupted_after_the_rename_keeps_the_new_key_in_force(tmp_path, tokenizer, t0, monkeypatch):
    from naia_memory.stores import atomic_files

    path = tmp_path / "m.json"
    m = _m(LocalStore(path, passphrase=OLD), tokenizer)
    _fill(m, t0)
    real, calls = os.replace, []

    def rename_then_interrupt(a, b):
        real(a, b)
        calls.append(b)
        if len(calls) == 2:  # the snapshot under the new key is in place
            raise KeyboardInterrupt("after the rename")

    monkeypatch.setattr(atomic_files.os, "replace", rename_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        m.rekey(passphrase=NEW)
    monkeypatch.undo()
    m.encode(content="I adopted a cat named Mochi", now=t0 + timedelta(hours=3))  # written under the key on disk
    m.close()
    with pytest.raises(WrongPassphrase):
        LocalStore(path, passphrase=OLD)
    again = LocalStore(path, passphrase=NEW)
    assert any("Mochi" in r.content for r in again.records(None))
    again.close()


def test_a_rekey_landing_while_another_opener_rereads_leaves_it_refused(tmp_path, tokenizer, t0, monkeypatch):
    """The other opener recorded the file's version before its read; a read that
    failed half-way (the re-key landed in it) then looked current, and its next
    write went in under the old key (found by a review, session 35)."""
    path, a, SqliteStore = _filled_sqlite(tmp_path, tokenizer, t0)
    b = _m(SqliteStore(path, passphrase=OLD), tokenizer)
    a.encode(content="I run on Tuesdays", now=t0 + timedelta(hours=4))  # b must re-read
    real = type(b.store)._check_header

    def then_rekeyed(self):
        real(self)
        if self is b.store and not getattr(self, "_raced", False):
            self._raced = True
            a.rekey(passphrase=NEW)  # lands between b's check and its read

    monkeypatch.setattr(type(b.store), "_check_header", then_rekeyed)
    with pytest.raises((Damaged, WrongPassphrase)):
        b.recall(query="Daegu", now=t0 + timedelta(hours=5))
    monkeypatch.undo()
    with pytest.raises(WrongPassphrase, match="re-keyed"):
        b.encode(content="My locker code is 4417", now=t0 + timedelta(hours=6))
    a.close()
    b.store.db.close()
    b.store.db = None
    again = SqliteStore(path, passphrase=NEW)
    assert not any("4417" in r.content for r in again.records(None))
    again.close()


class _CommitFails:
    """The connection, but a COMMIT that SQLite rolls back itself and reports as a full disk."""

    def __init__(self, db):
        self._db = db

    def __getattr__(self, name):
        return getattr(self._db, name)

    def execute(self, sql, *args):
        if sql == "COMMIT":
            self._db.execute("ROLLBACK")
            import apsw

            raise apsw.FullError("database or disk is full")
        return self._db.execute(sql, *args)


def test_a_commit_that_sqlite_rolled_back_itself_reports_its_own_error(tmp_path, tokenizer, t0):
    path, m, SqliteStore = _filled_sqlite(tmp_path, tokenizer, t0)
    apsw = pytest.importorskip("apsw")
    real = m.store.db
    m.store.db = _CommitFails(real)
    with pytest.raises(apsw.FullError):  # not "cannot rollback - no transaction is active"
        m.rekey(passphrase=NEW)
    m.store.db = real
    assert not m.store._in_txn and not real.in_transaction
    r = m.encode(content="I adopted a cat named Mochi", now=t0 + timedelta(hours=3))
    m.close()
    again = SqliteStore(path, passphrase=OLD)
    assert again.get(r.id) is not None
    again.close()


def test_sqlite_edges_a_closed_store_a_plain_one_with_a_passphrase_a_log_read_after_a_rekey(tmp_path, tokenizer, t0):
    apsw = pytest.importorskip("apsw")
    from naia_memory.stores.sqlite_store import SqliteStore

    closed = SqliteStore(tmp_path / "c.sqlite", passphrase=OLD)
    closed.close()
    with pytest.raises(StoreError, match="closed"):
        closed.rekey(NEW)
    plain = tmp_path / "p.sqlite"
    m = _m(SqliteStore(plain), tokenizer)
    m.encode(content="I live in Lisbon", now=t0)
    m.close()
    db = apsw.Connection(str(plain))
    with db:
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")  # as a library before session 35 left it
    db.close()
    with pytest.raises(StoreError, match="not encrypted"):
        SqliteStore(plain, passphrase=OLD)
    db = apsw.Connection(str(plain))
    assert list(db.execute("SELECT value FROM meta WHERE key = 'schema_version'")) == [("1",)]  # nothing written
    db.close()
    path = tmp_path / "m.sqlite"
    a = _m(SqliteStore(path, passphrase=OLD), tokenizer)
    _fill(a, t0)
    b = SqliteStore(path, passphrase=OLD)
    a.rekey(passphrase=NEW)
    with pytest.raises(WrongPassphrase, match="re-keyed"):
        b.log()
    a.close()
    b.db.close()
    b.db = None


def test_the_command_needs_no_embedder_to_rekey(tmp_path, monkeypatch, capsys):
    path = tmp_path / "m.json"
    s = LocalStore(path, passphrase=OLD)
    s.bind_embedder("my-server-embedder", 8)  # one the command cannot rebuild
    s.commit()
    s.close()
    monkeypatch.setenv("OLD_PASS", OLD)
    monkeypatch.setenv("NEW_PASS", NEW)
    assert cli(["--store", str(path), "--passphrase-env", "OLD_PASS", "rekey", "--new-passphrase-env", "NEW_PASS"]) == 0
    LocalStore(path, passphrase=NEW).close()


def test_a_checkpoint_kept_from_finishing_by_a_reader_is_said(tmp_path, tokenizer, t0, caplog):
    path, m, SqliteStore = _filled_sqlite(tmp_path, tokenizer, t0)
    apsw = pytest.importorskip("apsw")
    reader = apsw.Connection(str(path))
    reader.execute("BEGIN")
    list(reader.execute("SELECT count(*) FROM memories"))  # a read transaction holds the WAL's pages
    with caplog.at_level("WARNING", logger="naia_memory"):
        m.rekey(passphrase=NEW)
    assert "pages of the old form stay in the write-ahead log" in caplog.text
    reader.execute("COMMIT")
    reader.close()
    caplog.clear()
    m.rekey(passphrase=OLD + " again")  # nobody reading: checkpointed, nothing said
    assert "write-ahead log" not in caplog.text
    m.close()
