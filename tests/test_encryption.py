"""Encryption at rest (issue 10): the JSON store and its journal are AES-256-GCM
under a scrypt key; a wrong passphrase is a clear error and changes nothing,
a flipped byte anywhere is detected and nothing is loaded, and an encrypted
backup round-trips."""
from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

pytest.importorskip("cryptography")

from naia_memory import EngineConfig, LocalStore, MemorySystem
from naia_memory.embedders import HashingEmbedder
from naia_memory.stores.crypto import Damaged, WrongPassphrase
from naia_memory.stores.port import StoreError

PASS = "correct horse battery staple"
WORDS = ["Zanzibarville", "파란코끼리"]


def _system(path, tokenizer, passphrase=PASS):
    return MemorySystem(store=LocalStore(path, passphrase=passphrase), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer,
                        config=EngineConfig())


def _plain(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if p.is_file() for w in WORDS if w.encode() in p.read_bytes()]


def _fill(m, t0):
    m.encode(content=f"I live in {WORDS[0]}", now=t0)
    m.encode(content=f"나는 {WORDS[1]} 카페에서 일해", now=t0 + timedelta(minutes=1))
    m.consolidate(now=t0 + timedelta(hours=1))


def test_encrypted_store_round_trips_and_no_word_is_on_disk(tmp_path, tokenizer, t0):
    path = tmp_path / "m.json"
    m = _system(path, tokenizer)
    _fill(m, t0)
    m.recall(query=WORDS[0], now=t0 + timedelta(hours=2))  # a journal line too
    assert Path(f"{path}.journal").exists() or path.exists()
    assert _plain(tmp_path) == []
    before = sorted((r.id, r.content, r.status) for r in m.store.records(None))
    m.close()
    assert path.read_bytes().startswith(b"NAIA-ENC1 ") and _plain(tmp_path) == []
    again = _system(path, tokenizer)
    assert sorted((r.id, r.content, r.status) for r in again.store.records(None)) == before
    assert again.recall(query=WORDS[0], now=t0 + timedelta(hours=3)).contents()[0].endswith(WORDS[0])
    again.close()


def test_wrong_or_missing_passphrase_is_a_clear_error_and_the_file_is_untouched(tmp_path, tokenizer, t0):
    path = tmp_path / "m.json"
    m = _system(path, tokenizer)
    _fill(m, t0)
    m.close()
    raw = path.read_bytes()
    with pytest.raises(WrongPassphrase, match="wrong passphrase"):
        LocalStore(path, passphrase="not it")
    with pytest.raises(StoreError, match="encrypted; open it with passphrase"):
        LocalStore(path)
    assert path.read_bytes() == raw
    LocalStore(path, passphrase=PASS).close()  # the lock was released by the failed opens


@pytest.mark.parametrize("where", ["header", "body", "journal"])
def test_a_flipped_byte_is_detected_and_nothing_loads(tmp_path, tokenizer, t0, where):
    path = tmp_path / "m.json"
    m = _system(path, tokenizer)
    _fill(m, t0)
    if where == "journal":
        m.store.commit()
        m.encode(content="one more line for the journal", now=t0 + timedelta(hours=3))
        m.store._lock.release()  # a crash: the journal is not folded in
        target = Path(f"{path}.journal")
        assert target.exists()
    else:
        m.close()
        target = path
    data = bytearray(target.read_bytes())
    if where == "header":
        i = data.index(b'"salt": "') + 12
    elif where == "body":
        i = data.index(b"\n") + 40
    else:
        i = 20
    data[i] ^= 0x01
    target.write_bytes(bytes(data))
    with pytest.raises((Damaged, WrongPassphrase)):
        LocalStore(path, passphrase=PASS)


def test_encrypted_backup_of_a_plain_store_round_trips(tmp_path, tokenizer, t0):
    m = MemorySystem(store=LocalStore(tmp_path / "plain.json"), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    _fill(m, t0)
    dest = m.backup(path=str(tmp_path / "safe" / "backup.json"), passphrase=PASS)
    want = sorted((r.id, r.content) for r in m.store.records(None))
    m.close()
    assert _plain(tmp_path / "safe") == []
    with pytest.raises(WrongPassphrase):
        LocalStore(dest, passphrase="nope")
    restored = LocalStore(dest, passphrase=PASS)
    assert sorted((r.id, r.content) for r in restored.records(None)) == want
    restored.close()
    with pytest.raises(StoreError, match="not encrypted"):
        LocalStore(tmp_path / "plain.json", passphrase=PASS)


def test_encrypted_sqlite_seals_words_and_vectors_and_round_trips(tmp_path, tokenizer, t0):
    pytest.importorskip("apsw")
    from naia_memory.stores.sqlite_store import SqliteStore

    path = tmp_path / "m.sqlite"
    m = MemorySystem(store=SqliteStore(path, passphrase=PASS), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    _fill(m, t0)
    hits = m.recall(query=WORDS[0], now=t0 + timedelta(hours=2)).contents()
    assert hits and hits[0].endswith(WORDS[0])  # keyword search works without FTS rows
    hexes = [w.lower().encode().hex().encode() for w in WORDS]
    leaks = lambda: [p.name for p in tmp_path.rglob("*") if p.is_file() for n in [w.encode() for w in WORDS] + hexes
                     if n in p.read_bytes()]
    assert leaks() == []  # the WAL too, while the store is open
    before = sorted((r.id, r.content) for r in m.store.records(None))
    log = m.audit_log()
    m.close()
    assert leaks() == []
    with pytest.raises(WrongPassphrase):
        SqliteStore(path, passphrase="nope")
    with pytest.raises(StoreError, match="encrypted"):
        SqliteStore(path)
    again = SqliteStore(path, passphrase=PASS)
    assert sorted((r.id, r.content) for r in again.records(None)) == before and again.log() == log
    assert again.graph.edges  # the sealed graph came back
    again.close()
    with pytest.raises(ValueError, match="sqlite-vec"):
        SqliteStore(tmp_path / "v.sqlite", vector_index="sqlite-vec", passphrase=PASS)


def test_a_tampered_sqlite_record_is_detected(tmp_path, tokenizer, t0):
    apsw = pytest.importorskip("apsw")
    from naia_memory.stores.sqlite_store import SqliteStore

    path = tmp_path / "m.sqlite"
    m = MemorySystem(store=SqliteStore(path, passphrase=PASS), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    _fill(m, t0)
    m.close()
    db = apsw.Connection(str(path))
    (rowid, record), = list(db.execute("SELECT rowid, record FROM memories ORDER BY rowid LIMIT 1"))
    flipped = record[:30] + ("A" if record[30] != "A" else "B") + record[31:]
    with db:
        db.execute("UPDATE memories SET record = ? WHERE rowid = ?", (flipped, rowid))
    db.close()
    with pytest.raises(Damaged, match="failed authentication"):
        SqliteStore(path, passphrase=PASS)


def test_a_plain_sqlite_store_emptied_by_forget_is_still_refused_a_passphrase(tmp_path, tokenizer, t0):
    """Session 32 (a review): the refusal looked at the memories table only;
    a plain store emptied by forget (its log keeps plain entries) was marked
    encrypted from then on, and every later forget failed on those rows."""
    from naia_memory.stores.port import StoreError
    from naia_memory.stores.sqlite_store import SqliteStore

    p = tmp_path / "m.sqlite"
    m = MemorySystem(store=SqliteStore(p), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    m.encode(content="I live in Zanzibarville now", now=t0)
    m.forget(everything=True)
    m.close()
    before = p.read_bytes()
    with pytest.raises(StoreError, match="not encrypted"):
        SqliteStore(p, passphrase="correct horse battery staple")
    assert p.read_bytes() == before
    m = MemorySystem(store=SqliteStore(p), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)  # still plain, still works
    r = m.encode(content="My diary code is Qwertyzzz", now=t0 + timedelta(days=1))
    assert m.forget(memory_id=r.id) == 1
    m.close()
