"""A review of session 36's change (a helper session; its scripts were the
repros) found these; each test fails on the code before the fix. Most are
about the roster: a write path that left it out of step with the rows made
a good file read as damaged, and one re-key sealed tampering in."""
from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest

pytest.importorskip("cryptography")
apsw = pytest.importorskip("apsw")

from naia_memory import MemorySystem  # noqa: E402
from naia_memory.embedders import HashingEmbedder  # noqa: E402
from naia_memory.stores.crypto import Damaged, WrongPassphrase  # noqa: E402
from naia_memory.stores.port import StaleViewError, StoreError  # noqa: E402
from naia_memory.stores.sqlite_store import SqliteStore  # noqa: E402

PASS = "correct horse battery staple"


def _m(store, tokenizer, embedder=None) -> MemorySystem:
    return MemorySystem(store=store, embedder=embedder or HashingEmbedder(dim=64), tokenizer=tokenizer)


def _reopens(path, passphrase=PASS) -> int:
    s = SqliteStore(path, passphrase=passphrase)
    n = len(s)
    s.close()
    return n


def test_a_full_disk_mid_write_is_said_and_the_file_still_opens(tmp_path, tokenizer, t0):
    """SQLite rolls a transaction back by itself on a full disk; the bare
    ROLLBACK after it raised "no transaction is active" (hiding the error),
    left the store thinking it held one, and the next commits folded the lost
    rows into the roster: the file was refused for good."""
    path = tmp_path / "m.sqlite"
    m = _m(SqliteStore(path, passphrase=PASS), tokenizer)
    m.encode(content="I live in Lisbon", now=t0)
    pages = list(m.store.db.execute("PRAGMA page_count"))[0][0]
    list(m.store.db.execute(f"PRAGMA max_page_count={pages}"))
    with pytest.raises(StoreError, match="rolled back this process's open write transaction"):
        m.encode(content="Turn: " + "lorem ipsum dolor sit amet " * 400, now=t0 + timedelta(minutes=1))
    assert not m.store._in_txn and not m.store.db.in_transaction
    list(m.store.db.execute("PRAGMA max_page_count=1073741823"))
    m.encode(content="I like tea", now=t0 + timedelta(days=1))
    n = len(m.store)
    m.close()
    assert _reopens(path) == n


def test_two_forgets_scrubbing_one_log_entry_leave_a_file_that_opens(tmp_path):
    path = tmp_path / "m.sqlite"
    s = SqliteStore(path, passphrase=PASS)
    s.bind_embedder("h", 4)
    s.append_log([{"op": "X", "ids": ["fact_aaaaaaaaaaaaaaaa", "fact_bbbbbbbbbbbbbbbb"], "reason": "secret"}])
    s.commit()
    s.close()
    a, b = SqliteStore(path, passphrase=PASS), SqliteStore(path, passphrase=PASS)
    b._begin()  # b holds the write lock mid-forget
    b.scrub_log({"fact_bbbbbbbbbbbbbbbb"})
    later = threading.Thread(target=lambda: (time.sleep(0.3), b.commit()))
    later.start()
    a.scrub_log({"fact_aaaaaaaaaaaaaaaa"})  # waits for the lock, then reads what b left
    a.commit()
    later.join()
    assert "secret" not in str(a.log())
    a.close()
    b.close()
    _reopens(path)


def test_a_reread_inside_this_process_own_write_transaction_counts_its_writes(tmp_path, tokenizer, t0):
    """``hold_writes`` (a re-index) re-reads the file inside its own write
    transaction when another process committed: its own unfolded writes
    looked like rows added behind its back."""
    path = tmp_path / "m.sqlite"
    fire = []

    class Meanwhile(HashingEmbedder):
        def embed_passages(self, texts):
            while fire:
                fire.pop()()
            return super().embed_passages(texts)

    a = _m(SqliteStore(path, passphrase=PASS, autosave=False), tokenizer, Meanwhile(dim=64))
    a.encode(content="I live in Lisbon", now=t0)
    a.store.commit()
    b = _m(SqliteStore(path, passphrase=PASS), tokenizer)
    fire.append(lambda: b.encode(content="I run on Tuesdays", now=t0 + timedelta(minutes=1)))
    a.encode(content="I swim on Fridays", now=t0 + timedelta(minutes=2))  # autosave off: a's transaction stays open
    a.reindex(HashingEmbedder(dim=32))
    a.close()
    b.store.db.close()
    b.store.db = None
    assert _reopens(path) == 3


@pytest.mark.parametrize("passphrase", [None, PASS])
def test_a_delete_takes_out_the_row_of_that_id_not_a_rowid_reused_since(tmp_path, tokenizer, t0, passphrase):
    """Another process forgot the memory (it had the highest rowid) and stored
    a new one, which SQLite gave the same rowid: deleting by the rowid this
    process remembered erased the new memory (and, encrypted, left the roster
    counting it)."""
    path = tmp_path / "m.sqlite"
    a = _m(SqliteStore(path, passphrase=passphrase), tokenizer)
    a.encode(content="I live in Lisbon", now=t0)
    x = a.encode(content="I run on Tuesdays", now=t0 + timedelta(minutes=1)).id
    b = _m(SqliteStore(path, passphrase=passphrase), tokenizer)
    b.forget(memory_id=x)
    y = b.encode(content="I swim on Fridays", now=t0 + timedelta(minutes=2)).id
    # what a forget does for a memory it read just before the other process committed: since session 40 a write
    # on a view older than another process's commit is refused whole (the engine then runs the call again)
    with pytest.raises(StaleViewError):
        a.store.delete(x)
    a.store.commit()
    assert {i for (i,) in a.store.db.execute("SELECT id FROM memories")} >= {y}
    assert a.get(x) is None and a.get(y) is not None  # the engine reads the file first: b's forget and b's turn
    a.close()
    b.close()
    s = SqliteStore(path, passphrase=passphrase)
    assert s.get(y) is not None
    s.close()


@pytest.mark.parametrize("passphrase", [None, PASS])
def test_a_record_that_cannot_be_written_holds_no_lock_and_marks_nothing(tmp_path, tokenizer, t0, passphrase):
    path = tmp_path / "m.sqlite"
    m = _m(SqliteStore(path, passphrase=passphrase), tokenizer)
    kept = m.encode(content="I live in Lisbon", now=t0).id
    bad = m.store.get(kept)
    bad = type(bad).from_json({**bad.to_json(), "id": "ep_bad", "content": "broken \ud800 surrogate"})
    with pytest.raises(UnicodeEncodeError):
        m.store.put(bad, m.store.embeddings([kept])[0])
    assert m.store.get("ep_bad") is None and not m.store.db.in_transaction
    SqliteStore(path, passphrase=passphrase).close()  # another opener is not kept waiting for a lock
    bad = type(bad).from_json({**m.store.get(kept).to_json(), "content": "broken \ud800 again"})
    with pytest.raises(UnicodeEncodeError):
        m.store.update(bad)
    m.store.commit()
    m.close()
    assert _reopens(path, passphrase) == 1


def test_a_rekey_does_not_seal_in_rows_removed_behind_the_store(tmp_path, tokenizer, t0):
    path = tmp_path / "m.sqlite"
    m = _m(SqliteStore(path, passphrase=PASS), tokenizer)
    m.encode(content="I live in Lisbon", now=t0)
    m.encode(content="I run on Tuesdays", now=t0 + timedelta(minutes=1))
    m.close()
    s = SqliteStore(path, passphrase=PASS)
    db = apsw.Connection(str(path))
    with db:
        db.execute("DELETE FROM memories WHERE rowid = (SELECT max(rowid) FROM memories)")
    db.close()
    with pytest.raises(Damaged, match="memory rows"):
        s.rekey("a new passphrase")
    s.close()
    with pytest.raises(Damaged, match="memory rows"):
        SqliteStore(path, passphrase=PASS)  # still refused under its key: nothing was re-sealed


def test_a_change_of_form_during_an_open_is_said_not_read_as_damage(tmp_path, tokenizer, t0, monkeypatch):
    """The open checked the key, then another opener wrote the file in the
    clear before the fields were read: 'failed authentication' sent a user to
    their backups for nothing."""
    path = tmp_path / "m.sqlite"
    m = _m(SqliteStore(path, passphrase=PASS), tokenizer)
    m.encode(content="I live in Lisbon", now=t0)
    m.store.db.execute("DELETE FROM meta WHERE key = 'sealing'")  # so the next open binds (and reads) under the lock
    real = SqliteStore._check_key

    def then_cleared(self, passphrase):
        real(self, passphrase)
        m.rekey(passphrase=None)

    monkeypatch.setattr(SqliteStore, "_check_key", then_cleared)
    with pytest.raises(WrongPassphrase, match="written in the clear by another opener"):
        SqliteStore(path, passphrase=PASS)
    monkeypatch.undo()
    m.close()
    assert _reopens(path, None) == 1


def test_the_list_of_backups_is_sealed_and_one_written_in_the_clear_is_refused(tmp_path, tokenizer, t0):
    """A forget copies the store over every backup it lists: a path written
    into the readable list (``~/.bashrc``) would have been overwritten."""
    path = tmp_path / "m.sqlite"
    m = _m(SqliteStore(path, passphrase=PASS), tokenizer)
    m.encode(content="I live in Lisbon", now=t0)
    m.backup(path=str(tmp_path / "copy.sqlite"))
    raw = list(m.store.db.execute("SELECT value FROM meta WHERE key = 'backups'"))[0][0]
    assert "copy.sqlite" not in raw and m.store.backups()[0]["path"].endswith("copy.sqlite")
    m.close()
    db = apsw.Connection(str(path))
    with db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'backups'", ('[{"path": "/tmp/victim", "sealed_separately": false}]',))
    db.close()
    s = SqliteStore(path, passphrase=PASS)
    with pytest.raises(Damaged, match="list of backups is not sealed"):
        s.backups()
    s.close()


# ---- a second review, of the fixes above (each fails on the code before) -------------------------------------------

def _capped(store, extra: int = 0) -> None:
    """The disk fills up: the file may not grow past its pages now (plus ``extra``)."""
    list(store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
    pages = list(store.db.execute("PRAGMA page_count"))[0][0]
    list(store.db.execute(f"PRAGMA max_page_count={pages + extra}"))


def _uncapped(store) -> None:
    list(store.db.execute("PRAGMA max_page_count=1073741823"))


@pytest.mark.parametrize("passphrase", [None, PASS])
def test_a_batch_lost_to_a_full_disk_leaves_no_memory_in_the_engine_that_the_file_lacks(tmp_path, tokenizer, t0, passphrase):
    """The re-read that answered a lost transaction happened inside the
    engine's rollback, which then found none of the batch's turns to take out
    of its own maps: they stayed in its index (and topics) for good."""
    path = tmp_path / "m.sqlite"
    m = _m(SqliteStore(path, passphrase=passphrase), tokenizer)
    m.encode(content="I live in Lisbon", now=t0)
    _capped(m.store, extra=6)
    turns = [{"content": f"My dog Rex number {i} " + "x" * 2500, "now": t0 + timedelta(minutes=i + 1)} for i in range(6)]
    with pytest.raises(StoreError, match="rolled back this process's open write transaction"):
        m.encode_many(turns=turns)
    _uncapped(m.store)
    assert m.store.changed_elsewhere()  # the cache held the lost turns: the next call reads the file again
    m.recall(query="Rex", now=t0 + timedelta(days=1))
    ids = {r.id for r in m.store.records(None)}
    assert set().union(*m.index._entities.values()) | m.index.pending <= ids and len(ids) == 1
    m.close()
    assert _reopens(path, passphrase) == 1


@pytest.mark.parametrize("passphrase", [None, PASS])
def test_a_lost_transaction_is_said_by_the_write_that_lost_it(tmp_path, tokenizer, t0, passphrase):
    """Only ``put`` looked; an ``update`` (fading, here) that lost the
    transaction left it to the next, unrelated encode to fail (its own turn
    not stored)."""
    path = tmp_path / "m.sqlite"
    m = _m(SqliteStore(path, passphrase=passphrase), tokenizer)
    for i in range(30):
        m.encode(content=f"I had a sandwich number {i} " + "x" * (3000 + 41 * i), now=t0 + timedelta(minutes=i))
    _capped(m.store)
    with pytest.raises(StoreError, match="rolled back this process's open write transaction"):
        m.apply_decay(now=t0 + timedelta(days=3000))
    _uncapped(m.store)
    assert m.encode(content="I moved to Berlin last week", now=t0 + timedelta(days=3001)).stored
    n = len(m.store)
    m.close()
    assert _reopens(path, passphrase) == n


def test_encrypting_a_store_whose_project_names_an_id_keeps_it_openable(tmp_path, tokenizer, t0):
    """The renaming rewrote an id inside a project's name in the sealed record
    but not in the readable column, which the open then refused for good."""
    path = tmp_path / "m.sqlite"
    m = _m(SqliteStore(path), tokenizer)
    x = m.encode(content="I live in Lisbon", now=t0).id
    m.encode(content="I run on Tuesdays", project=f"follow-up-{x}", now=t0 + timedelta(minutes=1))
    m.rekey(passphrase=PASS)
    m.close()
    s = SqliteStore(path, passphrase=PASS)
    assert sorted(r.project for r in s.records(None)) == ["default", f"follow-up-{x}"]
    s.close()


@pytest.mark.parametrize("passphrase", [None, PASS])
def test_two_processes_noting_a_backup_each_keep_both(tmp_path, passphrase):
    path = tmp_path / "m.sqlite"
    s = SqliteStore(path, passphrase=passphrase)
    s.bind_embedder("h", 4)
    s.close()
    a, b = SqliteStore(path, passphrase=passphrase), SqliteStore(path, passphrase=passphrase)
    b._begin()
    b.note_backup(str(tmp_path / "copy_b.sqlite"), False)
    later = threading.Thread(target=lambda: (time.sleep(0.3), b.commit()))
    later.start()
    a.note_backup(str(tmp_path / "copy_a.sqlite"), False)  # waits for b's lock, then reads b's entry
    a.commit()
    later.join()
    assert sorted(x["path"].rsplit("/", 1)[1] for x in a.backups()) == ["copy_a.sqlite", "copy_b.sqlite"]
    a.close()
    b.close()
