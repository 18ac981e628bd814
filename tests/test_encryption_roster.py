"""An encrypted SQLite store's roster (session 36, sealing 3): each sealed
field was bound to its row, but a row removed, or put back from an older
copy of the file, left every remaining part passing authentication. The
roster (counts and a keyed XOR of every memory row and log entry, and the
sealed graph's hash) is kept at every commit, O(change), and checked when
the file is read; a store sealed before gets one when first opened with its
key. What it cannot see, the whole file put back to an older copy, is
shown here too."""
from __future__ import annotations

import shutil
from datetime import timedelta

import pytest

pytest.importorskip("cryptography")
apsw = pytest.importorskip("apsw")

from naia_memory import MemorySystem  # noqa: E402
from naia_memory.embedders import HashingEmbedder  # noqa: E402
from naia_memory.stores.crypto import Damaged  # noqa: E402
from naia_memory.stores.sqlite_file import SEALING, meta_get  # noqa: E402
from naia_memory.stores.sqlite_store import SqliteStore  # noqa: E402

PASS = "correct horse battery staple"


def _m(path, tokenizer) -> MemorySystem:
    return MemorySystem(store=SqliteStore(path, passphrase=PASS), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)


def _told(path, tokenizer, t0) -> None:
    m = _m(path, tokenizer)
    m.encode(content="I work at a bakery in Lisbon", now=t0)
    m.encode(content="My sister Mina studies medicine in Daegu", now=t0 + timedelta(minutes=1))
    m.consolidate(now=t0 + timedelta(hours=1))
    m.close()


def _changed(path, tokenizer, t0) -> None:
    """A later session: the job changes (a fact superseded), a turn is forgotten."""
    m = _m(path, tokenizer)
    m.encode(content="I quit the bakery, now I work at a bank in Porto", now=t0 + timedelta(days=1))
    m.consolidate(now=t0 + timedelta(days=1, hours=1))
    gone = next(r.id for r in m.store.records(None) if "Mina" in r.content and r.kind.value == "episode")
    m.forget(memory_id=gone)
    m.close()


def _sql(path, *statements) -> None:
    db = apsw.Connection(str(path))
    with db:
        for sql, args in statements:
            db.execute(sql, args)
    db.close()


def _refused(path, match: str) -> None:
    held = path.read_bytes()
    with pytest.raises(Damaged, match=match):
        SqliteStore(path, passphrase=PASS)
    assert path.read_bytes() == held  # refused, not repaired


@pytest.mark.parametrize("sql, said", [
    ("DELETE FROM memories WHERE rowid = (SELECT max(rowid) FROM memories)", "memory rows are not the ones last written"),
    ("DELETE FROM log WHERE seq = (SELECT max(seq) FROM log)", "its log is not the one last written"),
    ("DELETE FROM meta WHERE key = 'roster'", "roster .* is missing"),
])
def test_a_row_a_log_entry_or_the_roster_removed_is_refused(tmp_path, tokenizer, t0, sql, said):
    path = tmp_path / "m.sqlite"
    _told(path, tokenizer, t0)
    _sql(path, (sql, ()))
    _refused(path, said)


def test_a_row_and_the_graph_put_back_from_an_older_copy_are_refused(tmp_path, tokenizer, t0):
    path, old = tmp_path / "m.sqlite", tmp_path / "old.sqlite"
    _told(path, tokenizer, t0)
    shutil.copy(path, old)
    _changed(path, tokenizer, t0)
    db = apsw.Connection(str(old))
    fact = {rid: rest for rid, *rest in db.execute("SELECT id, record, embedding, kind, project, status, created_at, valid_from, valid_to, ntokens FROM memories WHERE kind = 'fact'")}
    graph = list(db.execute("SELECT value FROM meta WHERE key = 'graph_sealed'"))[0][0]
    db.close()
    current = SqliteStore(path, passphrase=PASS)
    superseded = [r.id for r in current.records(None) if r.status == "superseded" and r.id in fact]
    current.close()
    assert superseded  # the bakery fact, replaced in the later session
    rid = superseded[0]
    db = apsw.Connection(str(path))
    now = list(db.execute("SELECT record, embedding, kind, project, status, created_at, valid_from, valid_to, ntokens FROM memories WHERE id = ?", (rid,)))[0]
    db.close()
    put_back = "UPDATE memories SET " + ", ".join(f"{c} = ?" for c in "record, embedding, kind, project, status, created_at, valid_from, valid_to, ntokens".split(", ")) + " WHERE id = ?"
    # the whole row from before the change (active again), its record bound to its own row, so it authenticates
    _sql(path, (put_back, (*fact[rid], rid)))
    _refused(path, "memory rows are not the ones last written")
    _sql(path, (put_back, (*now, rid)))
    SqliteStore(path, passphrase=PASS).close()  # as it was: opens again
    _sql(path, ("UPDATE meta SET value = ? WHERE key = 'graph_sealed'", (graph,)))
    _refused(path, "entity graph is not the one last written")


def test_the_whole_file_put_back_is_not_seen(tmp_path, tokenizer, t0):
    """The limit the README names: roster and rows rolled back together agree."""
    path, old = tmp_path / "m.sqlite", tmp_path / "old.sqlite"
    _told(path, tokenizer, t0)
    shutil.copy(path, old)
    _changed(path, tokenizer, t0)
    shutil.copy(old, path)
    s = SqliteStore(path, passphrase=PASS)
    assert any("Mina" in r.content for r in s.records(None))  # the forgotten turn is back, unnoticed
    s.close()


def test_two_processes_a_refused_batch_and_a_forget_keep_the_roster_true(tmp_path, tokenizer, t0):
    path = tmp_path / "m.sqlite"
    _told(path, tokenizer, t0)
    a, b = _m(path, tokenizer), _m(path, tokenizer)
    a.encode(content="I run on Tuesdays", now=t0 + timedelta(days=2))
    b.encode(content="I swim on Fridays", now=t0 + timedelta(days=2, minutes=1))  # b catches up, then writes
    a.recall(query="what do I do on Fridays", now=t0 + timedelta(days=3))  # strengthening: rows updated
    with pytest.raises(Exception):
        b.encode_many([{"content": "fine turn", "now": t0 + timedelta(days=4)}, {"content": 42}])
    b.consolidate(now=t0 + timedelta(days=5))
    a.forget(memory_id=next(r.id for r in a.store.records(None) if "Tuesdays" in r.content))
    a.close()
    b.close()
    s = SqliteStore(path, passphrase=PASS)  # would be refused if any commit had folded its rows wrongly
    assert not any("Tuesdays" in r.content for r in s.records(None))
    assert any("Fridays" in r.content for r in s.records(None))
    s.close()


def test_a_store_sealed_before_gets_its_roster_when_opened_with_its_key(tmp_path, tokenizer, t0):
    path = tmp_path / "m.sqlite"
    _told(path, tokenizer, t0)
    _sql(path, ("DELETE FROM meta WHERE key = 'roster'", ()), ("UPDATE meta SET value = '2' WHERE key = 'sealing'", ()),
         ("UPDATE meta SET value = '2' WHERE key = 'schema_version'", ()))
    s = SqliteStore(path, passphrase=PASS)
    assert meta_get(s.db, "sealing") == SEALING and meta_get(s.db, "roster") is not None
    s.close()
    _sql(path, ("DELETE FROM memories WHERE rowid = (SELECT min(rowid) FROM memories)", ()))
    _refused(path, "memory rows")


def test_a_plain_store_keeps_no_roster(tmp_path, tokenizer, t0):
    path = tmp_path / "p.sqlite"
    m = MemorySystem(store=SqliteStore(path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    m.encode(content="I work at a bakery in Lisbon", now=t0)
    m.close()
    db = apsw.Connection(str(path))
    assert list(db.execute("SELECT count(*) FROM meta WHERE key IN ('roster', 'sealing')")) == [(0,)]
    db.close()


def test_a_row_in_then_out_leaves_the_roster_as_it_was_and_marks_differ_by_every_part():
    from naia_memory.stores.sqlite_roster import Delta, Roster, log_mark, memory_mark, roster_key

    key = roster_key(b"k" * 32)
    base = Roster(2, 12345, 1, 678, "g")
    mark = memory_mark(key, "fact_1", "sealed record", b"sealed vector")
    back = base.plus(Delta(memories=1, rows=mark)).plus(Delta(memories=-1, rows=mark))
    assert back == base and Roster.from_text(base.to_text()) == base
    assert len({mark, memory_mark(key, "fact_2", "sealed record", b"sealed vector"),
                memory_mark(key, "fact_1", "sealed recor", b"dsealed vector"),  # lengths keep parts apart
                memory_mark(roster_key(b"j" * 32), "fact_1", "sealed record", b"sealed vector")}) == 4
    assert log_mark(key, 1, "entry") != log_mark(key, 2, "entry")
    assert base.differences(base) == [] and len(base.differences(Roster(1, 12345, 1, 678, None))) == 2


def test_a_readable_column_changed_behind_the_sealed_record_is_refused(tmp_path, tokenizer, t0):
    """Ids, kinds, statuses and times stay readable for the file's indexes; a
    status edited there (an old fact shown as current to a tool reading SQL)
    no longer matches the sealed record."""
    path = tmp_path / "m.sqlite"
    _told(path, tokenizer, t0)
    _sql(path, ("UPDATE memories SET status = 'archived' WHERE rowid = (SELECT min(rowid) FROM memories)", ()))
    _refused(path, "readable columns")
