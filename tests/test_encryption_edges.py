"""Encryption at rest, at its edges: bugs a review found in session 33, each
test failing on the code before it. An encrypted SQLite file's readable ids
were hashes of the text (a guess could be checked without the passphrase);
a journal line removed or moved lost its commit without a word; an edited
scrypt parameter was a bare ValueError; a damaged log entry failed a forget
half-way; an empty passphrase left a plain file behind; a plain and an
encrypted opener of one new file left plaintext in a file marked
encrypted."""
from __future__ import annotations

import base64
import hashlib
import json
from datetime import timedelta
from pathlib import Path

import pytest

from naia_memory import LocalStore, MemorySystem
from naia_memory.embedders import HashingEmbedder
from naia_memory.stores.crypto import Damaged
from naia_memory.stores.port import StoreError

apsw = pytest.importorskip("apsw")
pytest.importorskip("cryptography")
from naia_memory.stores.sqlite_store import SqliteStore  # noqa: E402

PASS = "correct horse battery staple"


def _m(store, tokenizer) -> MemorySystem:
    return MemorySystem(store=store, embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)


def test_an_encrypted_stores_ids_say_nothing_of_the_text(tmp_path, tokenizer, t0):
    m = _m(SqliteStore(tmp_path / "m.sqlite", passphrase=PASS), tokenizer)
    rid = m.encode(content="Remember this. My locker code is 4812.", project="p", now=t0).id
    m.close()
    guesses = {f"p_{i}" for i in range(1, 50)}  # what an id hashed from project, time, text and counter would be
    plain = {hashlib.blake2b(f"p|{t0.isoformat()}|Remember this. My locker code is 4812.|{n}".encode(), digest_size=8).hexdigest()
             for n in range(1, 50)}
    assert rid.split("_", 1)[1] not in plain and guesses


def test_a_journal_line_removed_or_moved_is_refused_not_lost(tmp_path, tokenizer, t0):
    for mode in ("drop", "swap"):
        path = tmp_path / mode / "m.json"
        m = _m(LocalStore(path, passphrase=PASS), tokenizer)
        m.encode(content="first turn about Zanzibarville", now=t0)
        for i, w in enumerate(["Quokkaphone", "Plumbatrix", "Marmalade"]):
            m.encode(content=f"turn {i} about {w}", now=t0 + timedelta(minutes=i + 1))
        m.store._lock.release()  # a crash: the journal not folded in
        journal = Path(f"{path}.journal")
        lines = journal.read_bytes().splitlines(keepends=True)
        journal.write_bytes(b"".join(lines[:1] + lines[2:] if mode == "drop" else [lines[1], lines[0]] + lines[2:]))
        before = journal.read_bytes()
        with pytest.raises(StoreError, match="missing or out of order"):
            LocalStore(path, passphrase=PASS)
        assert journal.read_bytes() == before


def test_an_edited_scrypt_parameter_is_damage_not_a_bare_value_error(tmp_path, tokenizer, t0):
    path = tmp_path / "m.json"
    m = _m(LocalStore(path, passphrase=PASS), tokenizer)
    m.encode(content="a turn about Zanzibarville", now=t0)
    m.close()
    raw = path.read_bytes()
    for bad in (b'"n": 32767', b'"p": 0', b'"n": 1073741824'):
        path.write_bytes(raw.replace(b'"n": 32768', bad) if bad.startswith(b'"n"') else raw.replace(b'"p": 1', bad))
        with pytest.raises(Damaged):
            LocalStore(path, passphrase=PASS)


def test_a_damaged_log_entry_stops_a_forget_before_anything_is_deleted(tmp_path, tokenizer, t0):
    path = tmp_path / "m.sqlite"
    m = _m(SqliteStore(path, passphrase=PASS), tokenizer)
    victim = m.encode(content="my brother works at Quokkaphone", now=t0).id
    m.consolidate(now=t0 + timedelta(minutes=1))
    m.close()
    m = _m(SqliteStore(path, passphrase=PASS), tokenizer)
    db = apsw.Connection(str(path))
    (seq, entry), = list(db.execute("SELECT seq, entry FROM log ORDER BY seq LIMIT 1"))
    raw = bytearray(base64.b64decode(entry))
    raw[20] ^= 1
    with db:
        db.execute("UPDATE log SET entry = ? WHERE seq = ?", (base64.b64encode(bytes(raw)).decode(), seq))
    with pytest.raises(Damaged):  # since sealing 3 the roster sees it as the file is read again
        m.forget(memory_id=victim)
    assert list(db.execute("SELECT count(*) FROM memories WHERE id = ?", (victim,))) == [(1,)]
    assert not m.store._in_txn
    m.store.db.close()
    m.store.db = None
    held = path.read_bytes()
    with pytest.raises(Damaged, match="its log is not the one last written"):
        SqliteStore(path, passphrase=PASS)  # and a new opener is refused, the file left as it was
    assert path.read_bytes() == held
    db.close()


def test_an_empty_passphrase_leaves_no_file(tmp_path):
    with pytest.raises(ValueError, match="must not be empty"):
        SqliteStore(tmp_path / "n.sqlite", passphrase="")
    assert not (tmp_path / "n.sqlite").exists()


def test_a_plain_and_an_encrypted_opener_of_one_new_file_never_mix(tmp_path, tokenizer, t0):
    path = tmp_path / "m.sqlite"
    plain = _m(SqliteStore(path), tokenizer)  # bound to its embedder: a plain store
    with pytest.raises(StoreError, match="not encrypted"):
        SqliteStore(path, passphrase=PASS)
    plain.close()
    path2 = tmp_path / "m2.sqlite"
    raw = SqliteStore(path2)  # opened, nothing bound yet
    sealed = SqliteStore(path2, passphrase=PASS)  # seals the new file
    with pytest.raises(StoreError, match="encrypted by another opener"):
        raw.append_log([{"op": "NOTE", "reason": "Zanzibarville"}])
        raw.commit()
    sealed.close()
    assert b"Zanzibarville" not in path2.read_bytes()
    raw.db.close()
    raw.db = None
