"""Two engines on one SQLite file (two processes, as SQLite sees two
connections): a call that read the file, then spent time (an embedder, an
extractor) while the other committed, used to write from its older view
(session 40's review): a consolidation stored a second copy of facts the
other had just made, or a fact of a turn the other had just forgotten; a
recall wrote back as active a fact the other had superseded. Now the first
write of such a call is refused (``StaleViewError``, nothing written) and the
call runs again on the file as it is, holding its write lock."""
from __future__ import annotations

import os
from datetime import timedelta

import pytest

pytest.importorskip("apsw")

from naia_memory import EngineConfig, MemorySystem  # noqa: E402
from naia_memory.contract import MemoryKind  # noqa: E402
from naia_memory.embedders import HashingEmbedder  # noqa: E402
from naia_memory.stores.port import StaleViewError, StoreError  # noqa: E402
from naia_memory.stores.sqlite_store import SqliteStore  # noqa: E402


def _m(path, tokenizer, **kw) -> MemorySystem:
    return MemorySystem(store=SqliteStore(str(path), **kw), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer,
                        config=EngineConfig())


def _facts(path) -> list[tuple[str, str]]:
    s = SqliteStore(str(path))
    try:
        return sorted((r.status, r.content) for r in s.records(None) if r.kind is MemoryKind.FACT)
    finally:
        s.close()


def _while(obj, name: str, meanwhile) -> list[int]:
    """``obj.name`` runs ``meanwhile`` once, the first time it is called (the other process's commit)."""
    real, calls = getattr(obj, name), []

    def hooked(*a, **k):
        calls.append(1)
        if len(calls) == 1:
            meanwhile()
        return real(*a, **k)
    setattr(obj, name, hooked)
    return calls


def test_a_consolidation_does_not_store_again_what_another_process_consolidated_meanwhile(tmp_path, tokenizer, t0):
    a, b = _m(tmp_path / "s.sqlite", tokenizer), _m(tmp_path / "s.sqlite", tokenizer)
    a.encode(content="I live in Busan.", now=t0)
    a.encode(content="My favorite color is blue.", now=t0 + timedelta(minutes=1))
    calls = _while(b.consolidator, "_extract", lambda: a.consolidate(now=t0 + timedelta(minutes=2)))
    report = b.consolidate(now=t0 + timedelta(minutes=3))
    assert report.episodes_processed == 0 and len(calls) >= 2  # it ran again and found the turns consolidated
    a.close(), b.close()
    assert _facts(tmp_path / "s.sqlite") == [("active", "I live in Busan."), ("active", "My favorite color is blue.")]


def test_a_turn_forgotten_by_another_process_during_a_consolidation_leaves_no_fact(tmp_path, tokenizer, t0):
    path = tmp_path / "s.sqlite"
    a, b = _m(path, tokenizer), _m(path, tokenizer)
    turn = a.encode(content="My bank PIN is 4821.", now=t0).id
    forgot: list[int] = []
    _while(a.consolidator, "_extract", lambda: forgot.append(b.forget(memory_id=turn)))
    assert a.consolidate(now=t0 + timedelta(minutes=1)).decisions == ()
    assert forgot == [1]
    a.close(), b.close()
    s = SqliteStore(str(path))
    assert len(s) == 0
    s.close()
    raw = b"".join(open(f, "rb").read() for f in (str(path), str(path) + "-wal") if os.path.exists(f))
    assert b"4821" not in raw


def test_a_recall_does_not_revive_a_fact_another_process_superseded_meanwhile(tmp_path, tokenizer, t0):
    path = tmp_path / "s.sqlite"
    a, b = _m(path, tokenizer), _m(path, tokenizer)
    a.encode(content="I live in Busan.", now=t0)
    a.consolidate(now=t0 + timedelta(minutes=1))
    b.encode(content="I live in Seoul now.", now=t0 + timedelta(days=1))
    _while(a.pipeline.embedder, "embed_query", lambda: b.consolidate(now=t0 + timedelta(days=1, minutes=1)))
    hits = a.recall(query="Where do I live?", now=t0 + timedelta(days=2)).contents()
    assert "I live in Seoul now." in hits and "I live in Busan." not in hits
    a.close(), b.close()
    assert _facts(path) == [("active", "I live in Seoul now."), ("superseded", "I live in Busan.")]


def test_the_run_again_lets_the_write_lock_go_whether_it_writes_fails_or_writes_nothing(tmp_path, tokenizer, t0):
    """A guard of the run again, which holds the write lock from its start (on the code before, which never ran a
    call again, it passes as well)."""
    path = tmp_path / "s.sqlite"
    a, b = _m(path, tokenizer), _m(path, tokenizer, busy_timeout_ms=200)
    a.encode(content="I live in Busan.", now=t0)
    a.consolidate(now=t0 + timedelta(minutes=1))
    # a recall that strengthens: refused once, run again under the lock, which it lets go with its commit
    _while(a.pipeline.embedder, "embed_query", lambda: b.encode(content="I play the cello.", now=t0 + timedelta(hours=1)))
    assert a.recall(query="Where do I live?", now=t0 + timedelta(hours=2)).contents()
    assert b.encode(content="I like tea.", now=t0 + timedelta(hours=3)).stored  # within 200 ms: the lock is free
    # a turn the gate keeps out writes nothing in its second run; the lock goes all the same
    _while(a.embedder, "embed_passages", lambda: b.encode(content="I like green tea.", now=t0 + timedelta(hours=4)))
    a.encode(content="ok", now=t0 + timedelta(hours=5))
    assert b.encode(content="I like oolong.", now=t0 + timedelta(hours=6)).stored
    # a second run that fails (the extractor breaks) writes nothing and lets the lock go
    a.encode(content="My sister lives in Daegu.", now=t0 + timedelta(hours=7))
    tries: list[int] = []

    def extract(ep, now):
        tries.append(1)
        if len(tries) == 1:
            b.encode(content="I run on Sundays.", now=t0 + timedelta(hours=8))
        else:
            raise RuntimeError("the extractor broke")
        return []
    a.consolidator._extract = extract
    with pytest.raises(RuntimeError, match="the extractor broke"):
        a.consolidate(now=t0 + timedelta(hours=9))
    assert b.encode(content="I swim on Mondays.", now=t0 + timedelta(hours=10)).stored
    a.close(), b.close()


def test_a_store_level_write_on_an_old_view_is_refused_with_nothing_written(tmp_path, tokenizer, t0):
    path = tmp_path / "s.sqlite"
    a, b = _m(path, tokenizer), _m(path, tokenizer)
    x = a.encode(content="I live in Busan.", now=t0).id
    b.forget(memory_id=x)
    rec = a.store.get(x)
    rec.recall_count += 1
    with pytest.raises(StaleViewError, match="another process wrote the file"):
        a.store.update(rec)
    assert a.store.changed_elsewhere() and not a.store.db.in_transaction
    assert a.get(x) is None  # the engine reads the file again at its next call
    a.close(), b.close()


def test_a_write_refused_for_a_busy_file_leaves_no_change_in_this_process(tmp_path, tokenizer, t0):
    """A recall changes the record it strengthens in place, then writes it; a
    write refused because another process held the file past the timeout left
    the change in this process's copy (a count the file never had), until
    something else made it read the file again."""
    path = tmp_path / "s.sqlite"
    a, b = _m(path, tokenizer, busy_timeout_ms=50), _m(path, tokenizer)
    turn = a.encode(content="I live in Busan.", now=t0).id
    b.encode(content="I play the cello.", now=t0 + timedelta(minutes=1))  # b reads the file, then holds its lock:
    b.store.autosave = False
    b.encode(content="I like tea.", now=t0 + timedelta(minutes=2))  # an open write transaction, not committed
    from naia_memory.stores.lock import StoreInUseError

    with pytest.raises(StoreInUseError):
        a.recall(query="Where do I live?", now=t0 + timedelta(hours=1))
    b.store.discard()  # b lets go without writing: nothing tells a that the file moved
    on_file = SqliteStore(str(path))
    try:
        assert a.get(turn).metadata["recall_count"] == on_file.get(turn).recall_count == 0
    finally:
        on_file.close()
    a.close(), b.close()


def test_a_forget_done_is_not_run_again_when_its_backup_note_meets_another_commit(tmp_path, tokenizer, t0):
    """The forget commits, then rewrites its noted backups and logs that: a
    commit landing during the copy refused the log entry, and the whole forget
    ran again on memories already gone (an unknown id, or 0 and FORGET twice)."""
    path = tmp_path / "s.sqlite"
    a, b = _m(path, tokenizer), _m(path, tokenizer)
    x = a.encode(content="My bank PIN is 4821.", now=t0).id
    a.encode(content="I live in Busan.", now=t0 + timedelta(minutes=1))
    a.backup(path=str(tmp_path / "bk.sqlite"))
    calls = _while(a.store, "backup_to", lambda: b.encode(content="I play the cello.", now=t0 + timedelta(minutes=3)))
    assert a.forget(memory_id=x) == 1
    assert len(calls) == 1 and a.get(x) is None
    assert [e["op"] for e in a.audit_log()] == ["FORGET", "BACKUPS"]
    a.close(), b.close()


def test_a_refused_consolidation_logs_what_it_decided_once(tmp_path, tokenizer, t0):
    """Its clean-up (log what was decided, so nothing written goes unlogged)
    wrote the first run's decisions from the older view, and the run again
    logged them a second time."""
    path = tmp_path / "s.sqlite"
    a, b = _m(path, tokenizer), _m(path, tokenizer)
    a.encode(content="I live in Busan. Do you remember my code 4821?", now=t0)
    _while(a.consolidator, "_extract", lambda: b.encode(content="I play the cello.", now=t0 + timedelta(seconds=30)))
    report = a.consolidate(now=t0 + timedelta(minutes=1))
    logged = [e["op"] for e in a.audit_log()]
    assert logged == [d.op.name for d in report.decisions] and logged.count("SKIP") <= 1
    a.close(), b.close()


def test_the_run_again_holds_the_write_lock_even_when_it_places_memories(tmp_path, tokenizer, t0):
    """With the hierarchy on, catching up places the other process's memories
    and used to commit that, letting the write lock go before the call ran
    again: a third commit could refuse it once more."""
    path = tmp_path / "s.sqlite"
    a = MemorySystem(store=SqliteStore(str(path)), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer,
                     config=EngineConfig(hierarchy=True))
    b, late = _m(path, tokenizer), _m(path, tokenizer, busy_timeout_ms=100)
    a.encode(content="I live in Busan.", now=t0)
    refused: list[str] = []

    def meanwhile_twice():
        b.encode(content="I play the cello.", now=t0 + timedelta(minutes=1))  # refuses a's first run
        real_embed = a.embedder.embed_passages

        def during_the_run_again(texts):
            try:
                late.encode(content="I like tea.", now=t0 + timedelta(minutes=2))
            except StoreError as e:  # a holds the write lock through its second run
                refused.append(type(e).__name__)
            a.embedder.embed_passages = real_embed
            return real_embed(texts)
        a.embedder.embed_passages = during_the_run_again
    first = a.embedder.embed_passages

    def once(texts):
        a.embedder.embed_passages = first
        meanwhile_twice()
        return first(texts)
    a.embedder.embed_passages = once
    assert a.encode(content="I like green tea.", now=t0 + timedelta(hours=1)).stored
    assert refused == ["StoreInUseError"]
    a.close(), b.close(), late.close()


def test_a_run_again_that_fails_while_catching_up_lets_the_write_lock_go(tmp_path, tokenizer, t0, monkeypatch):
    path = tmp_path / "s.sqlite"
    a, b = _m(path, tokenizer), _m(path, tokenizer, busy_timeout_ms=100)
    a.encode(content="I live in Busan.", now=t0)
    _while(a.pipeline.embedder, "embed_query", lambda: b.encode(content="I play the cello.", now=t0 + timedelta(minutes=1)))

    def broken():
        raise RuntimeError("the switches could not be read")
    monkeypatch.setattr(a, "_read_switches", broken)
    with pytest.raises(RuntimeError, match="could not be read"):
        a.recall(query="Where do I live?", now=t0 + timedelta(hours=1))
    assert not a.store.db.in_transaction
    assert b.encode(content="I like tea.", now=t0 + timedelta(hours=2)).stored  # within 100 ms
    monkeypatch.undo()
    a.close(), b.close()
