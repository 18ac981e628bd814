"""The default JSON store's journal: commits cost the change, not the store,
and nothing committed is lost to a crash or a second writer."""
from __future__ import annotations

import json
import math
from datetime import timedelta
from pathlib import Path

import pytest

from naia_memory import LocalStore, MemorySystem
from naia_memory.embedders.hashing import HashingEmbedder
from naia_memory.stores import json_store
from naia_memory.stores.journal import Journal
from naia_memory.stores.lock import StoreInUseError
from naia_memory.stores.port import StoreError

LINES = ["나는 서울에 살아", "I work as a nurse at a hospital", "주말마다 한강에서 자전거 타",
         "My sister Mina lives in Busan", "요즘 도시락 싸 다녀", "I play bass in a band"]


def _system(path, tokenizer):
    return MemorySystem(store=LocalStore(path), embedder=HashingEmbedder(), tokenizer=tokenizer)


def _crash(m: MemorySystem) -> None:
    """What a killed process leaves: no close(), so no compaction; the OS drops the lock."""
    m.stop_consolidation()
    m.store._lock.release()


def _state(store: LocalStore):
    recs = {r.id: r.to_json() for r in store.records(None)}
    return recs, store.graph.to_json(), store.log()


def _filled(path, tokenizer, t0, *, consolidate: bool = False) -> MemorySystem:
    m = _system(path, tokenizer)
    for i, line in enumerate(LINES):
        m.encode(content=line, now=t0 + timedelta(minutes=i))
    if consolidate:
        m.consolidate(now=t0 + timedelta(hours=1))
    return m


def _reopens_as(path, expected) -> None:
    again = LocalStore(path)
    assert _state(again) == expected
    again.close()


def test_commits_append_to_the_journal_and_leave_the_snapshot_alone(tmp_path, tokenizer, t0):
    path = tmp_path / "m.json"
    m = _system(path, tokenizer)
    m.encode(content=LINES[0], now=t0)
    snapshot = path.read_bytes()
    for i, line in enumerate(LINES[1:], 1):
        m.encode(content=line, now=t0 + timedelta(minutes=i))
    assert path.read_bytes() == snapshot  # no rewrite per encode
    journal = Path(m.store.journal_path)
    lines_before = journal.read_text().count("\n")
    assert lines_before >= len(LINES) - 1
    m.recall(query="자전거", now=t0 + timedelta(days=1), top_k=2)  # strengthens, then commits
    assert path.read_bytes() == snapshot
    added = journal.read_text().splitlines()[lines_before:]
    assert len(added) == 1
    puts = [op for op in json.loads(added[0])["ops"] if op["op"] == "put"]
    assert 1 <= len(puts) <= 2  # only the strengthened records
    assert all("embedding" not in op["record"] for op in puts)  # their vectors did not change
    expected = _state(m.store)
    _crash(m)
    _reopens_as(path, expected)


def test_close_folds_the_journal_into_one_readable_file(tmp_path, tokenizer, t0):
    path = tmp_path / "m.json"
    m = _filled(path, tokenizer, t0, consolidate=True)
    expected = _state(m.store)
    m.close()
    assert not Path(f"{path}.journal").exists()
    doc = json.loads(path.read_text())
    assert len(doc["records"]) == len(expected[0])
    _reopens_as(path, expected)


def test_deletes_edges_and_log_survive_a_crash(tmp_path, tokenizer, t0):
    path = tmp_path / "m.json"
    m = _system(path, tokenizer)
    m.encode(content=LINES[0], now=t0)
    m.close()  # snapshot holds one memory; everything below lives only in the journal
    m = _system(path, tokenizer)
    ids = [m.encode(content=line, now=t0 + timedelta(minutes=i)).id for i, line in enumerate(LINES[1:], 1)]
    m.consolidate(now=t0 + timedelta(hours=1))
    m.forget(memory_id=ids[0])
    expected = _state(m.store)
    assert expected[1] and expected[2]  # the graph and the decision log are not empty
    assert ids[0] not in expected[0]
    _crash(m)
    _reopens_as(path, expected)


def test_a_torn_last_line_is_dropped_and_nothing_before_it(tmp_path, tokenizer, t0):
    path = tmp_path / "m.json"
    m = _filled(path, tokenizer, t0)
    expected = _state(m.store)
    _crash(m)
    journal = Path(f"{path}.journal")
    good = journal.read_bytes()
    with open(journal, "ab") as f:
        f.write(b'{"seq": 999, "ops": [{"op": "put", "rec')  # the writer died here
    again = LocalStore(path)
    assert _state(again) == expected
    assert journal.read_bytes() == good  # the torn tail is cut, so the next append follows a whole line
    again.close()


def test_a_damaged_line_in_the_middle_is_refused_untouched(tmp_path, tokenizer, t0):
    path = tmp_path / "m.json"
    m = _filled(path, tokenizer, t0)
    _crash(m)
    journal = Path(f"{path}.journal")
    rows = journal.read_text().splitlines(keepends=True)
    assert len(rows) >= 3
    rows[1] = "not json\n"
    journal.write_text("".join(rows))
    with pytest.raises(StoreError, match="damaged"):
        LocalStore(path)
    assert journal.read_text() == "".join(rows)
    LocalStore(path.with_name("other.json")).close()  # and the failed open released its lock
    with pytest.raises(StoreError, match="damaged"):
        LocalStore(path)  # still refused, not StoreInUseError


def test_a_crash_between_snapshot_and_journal_drop_applies_nothing_twice(tmp_path, tokenizer, t0, monkeypatch):
    path = tmp_path / "m.json"
    m = _filled(path, tokenizer, t0, consolidate=True)
    expected = _state(m.store)

    def die(self):
        raise OSError("killed")

    monkeypatch.setattr(Journal, "clear", die)
    with pytest.raises(OSError):
        m.store.compact()  # the new snapshot is in place, the journal still there
    monkeypatch.undo()
    assert Path(f"{path}.journal").stat().st_size > 0
    _crash(m)
    again = LocalStore(path)
    assert _state(again) == expected  # the decision log is not doubled
    again.close()


def test_a_second_writer_is_refused_until_the_first_closes(tmp_path, tokenizer, t0):
    path = tmp_path / "m.json"
    m = _system(path, tokenizer)
    m.encode(content=LINES[0], now=t0)
    with pytest.raises(StoreInUseError, match="open in another"):
        LocalStore(path)
    m.close()
    again = LocalStore(path)
    assert len(again) == 1
    again.close()


def test_snapshot_rewrites_stay_logarithmic_in_the_number_of_commits(tmp_path, tokenizer, t0, monkeypatch):
    writes = []
    real = json_store.atomic_write_chunks
    monkeypatch.setattr(json_store, "atomic_write_chunks", lambda p, chunks: writes.append(real(p, chunks)) or writes[-1])
    monkeypatch.setattr(json_store, "MIN_COMPACT_BYTES", 0)  # fold as soon as the journal outgrows the snapshot
    path = tmp_path / "m.json"
    m = _system(path, tokenizer)
    n = 120
    for i in range(n):
        m.encode(content=f"memo {i}: {LINES[i % len(LINES)]}", now=t0 + timedelta(minutes=i))
    assert 2 <= len(writes) <= math.log2(n) + 3  # a rewrite of S bytes follows >= S bytes of journal
    expected = _state(m.store)
    _crash(m)
    _reopens_as(path, expected)


def test_a_journal_without_its_snapshot_is_a_clear_error(tmp_path, tokenizer, t0):
    path = tmp_path / "m.json"
    m = _system(path, tokenizer)
    m.encode(content=LINES[0], now=t0)
    m.encode(content=LINES[1], now=t0)
    _crash(m)
    path.unlink()
    with pytest.raises(StoreError, match="missing"):
        LocalStore(path)


def test_forget_takes_the_text_off_the_disk_at_once(tmp_path, tokenizer, t0):
    path = tmp_path / "m.json"
    m = _system(path, tokenizer)
    m.encode(content="my bank PIN is 4921", now=t0)
    m.close()
    m = _system(path, tokenizer)  # the secret is in the snapshot; new turns go to the journal
    m.encode(content="I play bass in a band", now=t0 + timedelta(minutes=1))
    secret = next(r.id for r in m.store.records(None) if "4921" in r.content)
    m.forget(memory_id=secret)
    journal = Path(f"{path}.journal")
    on_disk = path.read_text() + (journal.read_text() if journal.exists() else "")
    assert "4921" not in on_disk and "bass" in on_disk
    m.close()


def test_the_snapshot_is_streamed_and_reads_as_one_json_document(tmp_path, tokenizer, t0):
    """Compaction writes one record at a time: the file is the same text as
    ``json.dumps`` of the whole document (with its checksum last), and the
    rewrite never holds the whole file in memory (a 100k-memory store is ~270 MB)."""
    import hashlib
    import tracemalloc

    path = tmp_path / "m.json"
    m = _filled(path, tokenizer, t0, consolidate=True)
    store = m.store
    for i in range(1500):  # the same records again under new ids: a file of a few MB
        rec = store.get(next(iter(store._cache.ids)))
        store.put(type(rec).from_json({**rec.to_json(), "id": f"copy-{i}", "content": f"{LINES[i % 6]} #{i}"}),
                  store._cache.vectors[0])
    store._rewrite = True
    tracemalloc.start()
    store.compact()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    data = path.read_bytes()
    assert len(data) > 3_000_000 and peak < len(data) / 4  # the old rewrite built the whole text (peak > size)
    doc = json.loads(data)
    stored = doc.pop("checksum")
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    assert data == (text[:-1] + f',"checksum":"{stored}"}}').encode("utf-8")  # byte for byte the documented format
    assert stored == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert list(doc)[-4:] == ["journal_seq", "records", "graph", "log"] and len(doc["records"]) > 1500
    expected = _state(store)
    m.close()
    _reopens_as(path, expected)


def test_opening_reads_the_snapshot_and_the_journal_a_piece_at_a_time(tmp_path, tokenizer, t0):
    """What opening parses is never whole in memory: the snapshot is read a
    block at a time and member by member, the journal a line at a time (each
    record or batch is handed on and dropped; a 100k-memory store is ~270 MB)."""
    import tracemalloc

    from naia_memory.stores.journal import Batch, Journal
    from naia_memory.stores.json_members import members, utf8_pieces

    path = tmp_path / "m.json"
    m = _filled(path, tokenizer, t0, consolidate=True)
    store = m.store
    rec = store.get(next(iter(store._cache.ids)))
    for i in range(1500):
        store.put(type(rec).from_json({**rec.to_json(), "id": f"copy-{i}", "content": f"{LINES[i % 6]} #{i}"}),
                  store._cache.vectors[0])
    m.close()
    journal = Journal(tmp_path / "other.journal")
    for i in range(1500):
        journal.append(Batch(i + 1, [{"op": "put", "record": {**rec.to_json(), "id": f"j-{i}"}, "embedding": "A" * 2048}]))
    for source in (path, journal.path):
        size = source.stat().st_size
        tracemalloc.start()
        if source == path:
            with open(path, "rb") as f:
                n = sum(1 for k, v in members(utf8_pieces(f, size=1 << 16), frozenset({"records"})) if k == "records"
                        for _ in v)
        else:
            n = sum(1 for _ in journal.read())
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert size > 3_000_000 and n >= 1500 and peak < size / 4, (source, size, peak)  # json.loads: > 3x size
