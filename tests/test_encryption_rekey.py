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
from naia_memory.stores.crypto import WrongPassphrase  # noqa: E402
from naia_memory.stores.port import StoreError  # noqa: E402

OLD, NEW = "correct horse battery staple", "tr0ub4dor&3 but longer"
WORDS = ["Zanzibarville", "파란코끼리"]


def _m(store, tokenizer) -> MemorySystem:
    return MemorySystem(store=store, embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)


def _fill(m, t0) -> None:
    m.encode(content=f"I live in {WORDS[0]}", now=t0)
    m.encode(content=f"나는 {WORDS[1]} 카페에서 일해", now=t0 + timedelta(minutes=1))
    m.consolidate(now=t0 + timedelta(hours=1))
    m.encode(content="My sister studies medicine in Daegu", now=t0 + timedelta(hours=2))  # a journal line after it


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
    pytest.importorskip("apsw")
    from naia_memory.stores.sqlite_store import SqliteStore

    path = tmp_path / "m.sqlite"
    m = _m(SqliteStore(path, passphrase=OLD), tokenizer)
    _fill(m, t0)
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
    from naia_memory.stores import sqlite_file
    from naia_memory.stores.sqlite_store import SqliteStore

    path = tmp_path / "m.sqlite"
    m = _m(SqliteStore(path, passphrase=OLD), tokenizer)
    _fill(m, t0)
    before = _state(m.store)
    real, calls = sqlite_file.Fields.seal_text, []

    def fails_on_the_third(self, text, purpose, row=None):
        calls.append(purpose)
        if len(calls) == 3:
            raise RuntimeError("the machine ran out of something")
        return real(self, text, purpose, row)

    monkeypatch.setattr(sqlite_file.Fields, "seal_text", fails_on_the_third)
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
    pytest.importorskip("apsw")
    from naia_memory.stores.sqlite_store import SqliteStore

    path = tmp_path / "m.sqlite"
    a = _m(SqliteStore(path, passphrase=OLD), tokenizer)
    _fill(a, t0)
    b = _m(SqliteStore(path, passphrase=OLD), tokenizer)
    a.rekey(passphrase=NEW)
    with pytest.raises(WrongPassphrase, match="re-keyed by another opener"):
        b.encode(content=f"My code word is {WORDS[0]}Secret", now=t0 + timedelta(hours=5))
    with pytest.raises(WrongPassphrase, match="re-keyed by another opener"):
        b.recall(query="Daegu", now=t0 + timedelta(hours=5))
    n = len(a.store)
    a.close()
    b.store.db.close()
    b.store.db = None
    again = SqliteStore(path, passphrase=NEW)
    assert len(again) == n and not any("Secret" in r.content for r in again.records(None))
    again.close()


def test_a_plain_sqlite_store_is_not_encrypted_in_place(tmp_path, tokenizer, t0):
    pytest.importorskip("apsw")
    from naia_memory.stores.sqlite_store import SqliteStore

    path = tmp_path / "m.sqlite"
    m = _m(SqliteStore(path), tokenizer)
    m.encode(content="I live in Lisbon", now=t0)
    with pytest.raises(NotImplementedError, match="not gain or drop"):
        m.rekey(passphrase=NEW)
    m.close()
    sealed = _m(SqliteStore(tmp_path / "s.sqlite", passphrase=OLD), tokenizer)
    with pytest.raises(NotImplementedError, match="not gain or drop"):
        sealed.rekey(passphrase=None)
    sealed.close()


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


def test_backups_stay_as_made_until_a_forget_refreshes_the_copies_of_the_store(tmp_path, tokenizer, t0):
    path = tmp_path / "m.json"
    m = _m(LocalStore(path, passphrase=OLD), tokenizer)
    _fill(m, t0)
    copy = m.backup(path=str(tmp_path / "copy.json"))  # a copy of the store, under its key
    own = m.backup(path=str(tmp_path / "own.json"), passphrase="the backup's own one")
    m.rekey(passphrase=NEW)
    LocalStore(copy, passphrase=OLD).close()  # untouched by the rekey
    victim = next(r for r in m.store.records(None) if WORDS[0] in r.content)
    m.forget(memory_id=victim.id)
    m.close()
    refreshed = LocalStore(copy, passphrase=NEW)  # copied again, under the store's new key
    assert all(WORDS[0] not in r.content for r in refreshed.records(None))
    refreshed.close()
    kept = LocalStore(own, passphrase="the backup's own one")  # its own passphrase: left (and named stale)
    assert any(WORDS[0] in r.content for r in kept.records(None))
    kept.close()
