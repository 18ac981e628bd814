"""Memory off and incognito conversations hold across a restart (session 38).

Until session 38 both switches lived in the process: a server restarted (an
update, a crash) stored the incognito conversation's next turn and had
memory on again. They are now entries of the store's log. Real stores on
disk; a full disk is the journal's write made to raise; the second process
is the ``naia-memory`` command run as one."""
from __future__ import annotations

import errno
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

import naia_memory.stores.journal as journal
from naia_memory import EngineConfig, LocalStore, MemorySystem
from naia_memory.embedders import HashingEmbedder
from naia_memory.switches import SwitchEntryError, Switches, incognito_entry, memory_entry, switches_from

from .conftest import naia_store, on_disk

REPO = Path(__file__).resolve().parents[1]


def _full(*_a, **_k):
    raise OSError(errno.ENOSPC, "No space left on device")


def _open(tmp_path, tokenizer, kind="json", **kw) -> MemorySystem:
    return MemorySystem(store=naia_store(kind, tmp_path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer,
                        config=EngineConfig(), **kw)


def test_the_latest_entry_of_a_switch_wins_and_other_entries_are_not_switches(t0):
    entries = [incognito_entry("default", "a", True, t0), {"op": "ADD", "reason": "x"}, memory_entry(False, t0),
               incognito_entry("default", "b", True, t0), incognito_entry("default", "a", False, t0),
               incognito_entry("work", "a", True, t0), memory_entry(True, t0)]
    assert switches_from(entries) == Switches(False, frozenset({("default", "b"), ("work", "a")}),
                                              frozenset({("default", "a"), ("default", "b"), ("work", "a")}))
    assert switches_from(entries[:3]) == Switches(True, frozenset({("default", "a")}), frozenset({("default", "a")}))
    assert switches_from([]) == Switches()


@pytest.mark.parametrize("entry", [{"op": "MEMORY", "on": "no"}, {"op": "MEMORY"}, {"op": "INCOGNITO", "on": True, "session": "a"},
                                   {"op": "INCOGNITO", "on": 1, "project": "default", "session": "a"}])
def test_a_switch_entry_that_cannot_be_read_is_said_not_guessed(entry):
    with pytest.raises(SwitchEntryError, match="log entry 0"):
        switches_from([entry])


@pytest.mark.parametrize("kind", ["json", "sqlite", "qdrant"])
def test_memory_off_and_incognito_hold_across_a_restart(tmp_path, tokenizer, t0, kind):
    m = _open(tmp_path, tokenizer, kind)
    m.encode(content="I adopted a cat named Miso", session="open", now=t0)
    m.set_incognito(session="private")
    m.disable()
    m.close()

    m = _open(tmp_path, tokenizer, kind)  # the host restarted, with its default enabled=True
    assert not m.enabled and m.incognito_sessions() == ["private"]
    off = m.encode(content="I live in Porto", session="open", now=t0 + timedelta(minutes=1))
    assert not off.stored and off.reason == "memory is off"
    assert m.recall(query="cat", now=t0 + timedelta(hours=1)).hits == ()
    m.enable()
    kept_out = m.encode(content="I am secretly applying to other jobs", session="private", now=t0 + timedelta(minutes=2))
    many = m.encode_many(turns=[{"content": "my salary is 4200 a month", "session": "private", "now": t0 + timedelta(minutes=3)}])
    assert not kept_out.stored and kept_out.reason == "incognito conversation" and not many[0].stored
    assert m.recall(query="cat", now=t0 + timedelta(hours=1)).contents()[0] == "I adopted a cat named Miso"
    m.set_incognito(session="private", on=False)
    m.close()

    m = _open(tmp_path, tokenizer, kind)
    assert m.enabled and m.incognito_sessions() == []
    assert m.encode(content="I started running on Sundays", session="private", now=t0 + timedelta(minutes=4)).stored
    assert not any("jobs" in r.content or "salary" in r.content for r in m.store.records(None))
    m.close()


def test_the_hosts_enabled_false_is_its_own_and_not_saved(tmp_path, tokenizer, t0):
    m = _open(tmp_path, tokenizer, enabled=False)
    assert not m.enabled
    m.close()
    m = _open(tmp_path, tokenizer)
    assert m.enabled and m.audit_log(op=["MEMORY", "INCOGNITO"]) == []
    m.disable()
    m.close()
    m = _open(tmp_path, tokenizer, enabled=False)  # off both ways: enable() turns on both
    m.enable()
    assert m.enabled
    m.close()
    assert _open(tmp_path, tokenizer).enabled


def test_the_log_says_when_each_switch_was_flipped_and_a_repeat_writes_nothing(tmp_path, tokenizer):
    m = _open(tmp_path, tokenizer)
    m.set_incognito(session="tonight", project="alice")
    m.set_incognito(session="tonight", project="alice")  # already: nothing new to say
    m.disable()
    m.disable()
    m.enable()
    m.enable()
    m.set_incognito(session="tonight", project="alice", on=False)
    m.set_incognito(session="never-marked", project="alice", on=False)
    log = m.audit_log(op=["MEMORY", "INCOGNITO"])
    assert [(e["op"], e["on"]) for e in log] == [("INCOGNITO", True), ("MEMORY", False), ("MEMORY", True), ("INCOGNITO", False)]
    assert log[0]["project"] == "alice" and log[0]["session"] == "tonight" and log[0]["at"]
    assert m.incognito_sessions(project="alice") == [] and m.incognito_sessions() == []
    m.close()


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_forgetting_everything_does_not_let_an_incognito_conversation_back_in(tmp_path, tokenizer, t0, kind):
    m = _open(tmp_path, tokenizer, kind)
    m.encode(content="I live in Lisbon", session="open", now=t0)
    m.set_incognito(session="private")
    m.disable()
    assert m.forget(everything=True) == 1
    m.close()
    m = _open(tmp_path, tokenizer, kind)
    assert m.incognito_sessions() == ["private"] and not m.enabled
    m.close()


@pytest.mark.parametrize("then", ["close", "recall, then close"])
def test_a_switch_whose_save_fails_stays_in_effect_and_is_saved_at_close(tmp_path, tokenizer, t0, monkeypatch, then):
    m = _open(tmp_path, tokenizer)
    m.encode(content="I live in Lisbon", session="open", now=t0)
    monkeypatch.setattr(journal, "_durable", _full)
    with pytest.raises(OSError, match="No space"):
        m.set_incognito(session="private")
    monkeypatch.undo()
    if then != "close":  # the failed commit made the store read its file again (which lacks the entry): it holds over it
        assert m.recall(query="Lisbon", now=t0 + timedelta(hours=1)).contents()[0] == "I live in Lisbon"
        assert m.incognito_sessions() == ["private"]
        assert not m.encode(content="my salary is 4200 a month", session="private", now=t0 + timedelta(minutes=1)).stored
    m.close()  # the owed entry is written here (until the review, a store still marked lost dropped it here)
    m = _open(tmp_path, tokenizer)
    assert m.incognito_sessions() == ["private"]
    assert not m.encode(content="my salary is 4200 a month", session="private", now=t0 + timedelta(minutes=2)).stored
    m.close()


def test_a_qdrant_switch_whose_save_fails_is_saved_at_close(tmp_path, tokenizer, t0):
    pytest.importorskip("qdrant_client")
    m = _open(tmp_path, tokenizer, "qdrant")
    m.encode(content="I live in Lisbon", session="open", now=t0)
    real = m.store.client.upsert
    m.store.client.upsert = _full
    try:
        with pytest.raises(OSError):
            m.disable()
    finally:
        m.store.client.upsert = real
    assert not m.enabled
    m.close()
    m = _open(tmp_path, tokenizer, "qdrant")
    assert not m.enabled
    m.close()


def test_a_switch_owed_since_a_failed_save_goes_out_with_the_next_commit(tmp_path, tokenizer, t0, monkeypatch):
    m = _open(tmp_path, tokenizer)
    m.encode(content="I live in Lisbon", session="open", now=t0)
    monkeypatch.setattr(journal, "_durable", _full)
    with pytest.raises(OSError):
        m.set_incognito(session="private")
    monkeypatch.undo()
    assert m.encode(content="I play bass in a band", session="open", now=t0 + timedelta(minutes=1)).stored
    assert "INCOGNITO" in Path(f"{m.store.path}.journal").read_text(encoding="utf-8")  # before any close
    m.close()


@pytest.mark.parametrize("call", ["consolidate", "forget", "edit", "decay"])
def test_a_switch_owed_since_a_failed_save_goes_out_with_a_call_that_commits_on_its_own(tmp_path, tokenizer, t0, monkeypatch, call):
    """Until session 39 only encode, recall, switch calls and close wrote an
    owed switch; these calls committed without it."""
    m = _open(tmp_path, tokenizer)
    kept = m.encode(content="I live in Lisbon", session="open", now=t0)
    monkeypatch.setattr(journal, "_durable", _full)
    with pytest.raises(OSError):
        m.disable()
    monkeypatch.undo()
    later = t0 + timedelta(days=1)
    if call == "consolidate":
        m.consolidate(now=later)
    elif call == "forget":
        m.forget(memory_id=kept.id)
    elif call == "edit":
        m.edit(memory_id=kept.id, content="I live in Porto", now=later)
    else:
        m.apply_decay(now=later)
    assert on_disk(tmp_path, '"MEMORY"')  # before any close (a forget rewrites the snapshot, the others append)
    assert m._owed_switches == []
    m.store.close()  # a crash: no close() to make a last save
    m = _open(tmp_path, tokenizer)
    assert not m.enabled
    m.close()


def test_a_backup_made_while_a_switch_is_owed_holds_the_switch(tmp_path, tokenizer, t0, monkeypatch):
    """A review (session 39): the copy was made before the owed "off" was
    written, so the backup restored with memory on."""
    m = _open(tmp_path, tokenizer)
    m.encode(content="I live in Lisbon", session="open", now=t0)
    monkeypatch.setattr(journal, "_durable", _full)
    with pytest.raises(OSError):
        m.disable()
    monkeypatch.undo()
    copy = m.backup(path=str(tmp_path / "backup" / "m.json"))
    assert m._owed_switches == []
    m.close()
    restored = MemorySystem(store=LocalStore(copy), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    assert not restored.enabled
    restored.close()


def test_with_autosave_off_a_switch_the_host_committed_is_not_written_again_over_a_later_one(tmp_path, tokenizer, t0):
    """A review (session 39): the host's own commit left the "off" owed, so a
    consolidation wrote it again after another process's "on" (memory off
    for every process) and this one kept refusing turns."""
    pytest.importorskip("apsw")
    from naia_memory.stores.sqlite_store import SqliteStore

    def engine(autosave):
        return MemorySystem(store=SqliteStore(tmp_path / "m.sqlite", autosave=autosave), embedder=HashingEmbedder(dim=64),
                            tokenizer=tokenizer)

    a = engine(False)
    a.encode(content="I live in Lisbon", now=t0)
    a.store.commit()
    a.disable()
    a.store.commit()  # the host commits, as autosave=False asks
    b = engine(True)
    b.enable()
    assert a.enabled  # the file's later "on" wins over what this process had said
    assert a.encode(content="I play bass in a band", now=t0 + timedelta(minutes=1)).stored
    a.consolidate(now=t0 + timedelta(days=1))
    a.store.commit()
    assert [e["on"] for e in a.store.log() if e.get("op") == "MEMORY"] == [False, True]
    b.close()
    b = engine(True)
    assert b.enabled
    a.close()
    b.close()


def test_switch_calls_within_one_clock_tick_are_each_saved(tmp_path, tokenizer, monkeypatch):
    """A review (session 39): with a frozen or coarse clock (a host's tests,
    Windows' 15.6 ms ticks) a second "off" equal to the first was taken for
    the one the log held and never written: a restart had memory on."""
    import naia_memory.records as records
    from datetime import datetime, timezone

    monkeypatch.setattr(records, "utc_now", lambda: datetime(2026, 12, 3, 12, 0, tzinfo=timezone.utc))
    m = _open(tmp_path, tokenizer)
    m.disable()
    m.enable()
    m.disable()
    assert [e["on"] for e in m.store.log() if e.get("op") == "MEMORY"] == [False, True, False]
    m.close()
    m = _open(tmp_path, tokenizer)
    assert not m.enabled
    m.close()


def test_a_switch_owed_since_a_failed_save_is_written_by_the_next_switch_call(tmp_path, tokenizer, t0, monkeypatch):
    m = _open(tmp_path, tokenizer)
    m.encode(content="I live in Lisbon", session="open", now=t0)  # the snapshot is written: commits go to the journal
    monkeypatch.setattr(journal, "_durable", _full)
    with pytest.raises(OSError):
        m.disable()
    monkeypatch.undo()
    assert not m.enabled
    m.set_incognito(session="private")  # saves both, now: the journal holds them before any close
    on_disk = Path(f"{m.store.path}.journal").read_text(encoding="utf-8")
    assert on_disk.index('"MEMORY"') < on_disk.index('"INCOGNITO"')
    assert [e["op"] for e in m.store.log()] == ["MEMORY", "INCOGNITO"]
    m.close()
    m = _open(tmp_path, tokenizer)
    assert not m.enabled and m.incognito_sessions() == ["private"]
    m.close()


def test_turning_memory_on_is_saved_first_and_a_failed_save_leaves_it_off(tmp_path, tokenizer, t0, monkeypatch):
    m = _open(tmp_path, tokenizer)
    m.disable()
    monkeypatch.setattr(journal, "_durable", _full)
    with pytest.raises(OSError):
        m.enable()
    with pytest.raises(OSError):
        m.set_incognito(session="private")  # (a closing switch on the same full disk: in effect, owed)
    monkeypatch.undo()
    assert not m.enabled
    assert not m.encode(content="I live in Porto", now=t0).stored
    m.close()
    m = _open(tmp_path, tokenizer)
    assert not m.enabled and m.incognito_sessions() == ["private"]
    m.close()


def _cli(path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "naia_memory.cli", "--store", str(path), *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_another_process_on_a_shared_sqlite_file_switches_a_running_memory(tmp_path, tokenizer, t0):
    pytest.importorskip("apsw")
    m = _open(tmp_path, tokenizer, "sqlite")  # a server's memory, running
    m.encode(content="I live in Lisbon", session="open", now=t0)
    path = tmp_path / "m.sqlite"
    assert _cli(path, "incognito", "private").split() == ["private"]
    assert not m.encode(content="my salary is 4200 a month", session="private", now=t0 + timedelta(minutes=1)).stored
    assert _cli(path, "off").strip() == f"memory is off ({path})"
    assert m.recall(query="Lisbon", now=t0 + timedelta(hours=1)).hits == ()
    assert not m.encode(content="I like jazz", session="open", now=t0 + timedelta(minutes=2)).stored
    assert _cli(path, "on").strip() == f"memory is on ({path})"
    done = subprocess.run([sys.executable, "-m", "naia_memory.cli", "--store", str(tmp_path / "typo.sqlite"), "incognito"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no store at" in done.stderr and not (tmp_path / "typo.sqlite").exists()
    for opening in (["on"], ["incognito", "private", "--off"]):  # only opens: at a mistyped path it would hide a mistake
        done = subprocess.run([sys.executable, "-m", "naia_memory.cli", "--store", str(tmp_path / "typo.sqlite"), *opening],
                              cwd=REPO, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "no store at" in done.stderr and not (tmp_path / "typo.sqlite").exists()
    assert m.encode(content="I like jazz", session="open", now=t0 + timedelta(minutes=3)).stored
    assert '"memory_on": true' in _cli(path, "stats")
    m.close()


def test_a_hand_edited_switch_entry_stops_the_open_with_a_reason(tmp_path, tokenizer):
    store = LocalStore(tmp_path / "m.json")
    store.bind_embedder(HashingEmbedder(dim=64).name, 64)
    store.append_log([{"op": "INCOGNITO", "project": "default", "session": "private", "on": "yes"}])
    store.close()
    with pytest.raises(SwitchEntryError, match="'on' must be true or false"):
        MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)


def test_rest_switches_are_per_user_for_incognito_and_whole_store_for_memory(tmp_path, tokenizer):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from naia_memory.server.rest import ServerSettings, create_app

    admin, bob = {"Authorization": "Bearer admin-token-0123456789"}, {"Authorization": "Bearer bob-token-0123456789ab"}
    settings = ServerSettings(tokens={"admin-token-0123456789": None, "bob-token-0123456789ab": "bob"}, rate=1000, burst=1000)

    def add(c, user, text, run_id, headers):
        r = c.post("/memories", headers=headers, json={"user_id": user, "run_id": run_id, "messages": [{"content": text}]})
        assert r.status_code == 200, r.text
        return r.json()["results"][0]

    m = _open(tmp_path, tokenizer)
    with TestClient(create_app(m, settings)) as c:
        r = c.put("/incognito", headers=bob, json={"user_id": "bob", "run_id": "private"})
        assert r.status_code == 200 and r.json() == {"user_id": "bob", "run_ids": ["private"]}
        assert c.put("/incognito", headers=bob, json={"user_id": "alice", "run_id": "x"}).status_code == 403
        assert c.put("/incognito", headers=bob, json={"user_id": "bob", "run_id": "private", "on": "yes"}).status_code == 422
        assert c.put("/incognito", headers=bob, json={"user_id": "bob", "run_id": ""}).status_code == 400
        kept_out = add(c, "bob", "my salary is 4200 a month", "private", bob)
        assert kept_out["event"] == "NONE" and kept_out["reason"] == "incognito conversation"
        assert add(c, "alice", "my salary is 5000 a month", "private", admin)["event"] == "ADD"  # alice's "private" is hers
        assert c.put("/memory-switch", headers=bob, json={"on": False}).status_code == 403  # bob's token is bob's only
        assert c.put("/memory-switch", headers=admin, json={"on": False}).json() == {"on": False}
        assert "memory_on" not in c.get("/health").json()  # no token there: the switch is not told to anyone
    m.close()

    m = _open(tmp_path, tokenizer)  # the server restarted
    with TestClient(create_app(m, settings)) as c:
        assert c.get("/memory-switch", headers=bob).json() == {"on": False}
        assert c.get("/incognito", headers=bob, params={"user_id": "bob"}).json()["run_ids"] == ["private"]
        assert add(c, "bob", "I live in Lisbon", "open", bob)["reason"] == "memory is off"
        assert c.put("/memory-switch", headers=admin, json={"on": True}).json() == {"on": True}
        assert add(c, "bob", "I live in Lisbon", "open", bob)["event"] == "ADD"
        assert c.put("/incognito", headers=bob, json={"user_id": "bob", "run_id": "private", "on": False}).json()["run_ids"] == []
        assert c.get("/incognito", headers=bob, params={"user_id": "alice"}).status_code == 403
    m.close()


def test_rest_says_503_when_the_disk_refuses_a_switch(tmp_path, tokenizer, t0, monkeypatch):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from naia_memory.server.rest import ServerSettings, create_app

    m = _open(tmp_path, tokenizer)
    m.encode(content="I live in Lisbon", session="open", now=t0)
    with TestClient(create_app(m, ServerSettings(tokens={"admin-token-0123456789": None}, rate=1000, burst=1000)),
                    raise_server_exceptions=False) as c:
        monkeypatch.setattr(journal, "_durable", _full)
        r = c.put("/memory-switch", headers={"Authorization": "Bearer admin-token-0123456789"}, json={"on": False})
        monkeypatch.undo()
        assert r.status_code == 503 and "No space left" in r.json()["detail"]
    assert not m.enabled  # (in effect; saved at close)
    m.close()
    assert not _open(tmp_path, tokenizer).enabled


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_an_encrypted_store_keeps_the_switches_sealed(tmp_path, tokenizer, t0, kind):
    if kind == "sqlite":
        pytest.importorskip("apsw")
        from naia_memory.stores.sqlite_store import SqliteStore

        make = lambda: SqliteStore(tmp_path / "m.sqlite", passphrase="correct horse battery staple")  # noqa: E731
    else:
        make = lambda: LocalStore(tmp_path / "m.json", passphrase="correct horse battery staple")  # noqa: E731
    m = MemorySystem(store=make(), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    m.encode(content="I live in Lisbon", session="open", now=t0)
    m.set_incognito(session="weekend-with-alexandra")
    assert on_disk(tmp_path, "weekend-with-alexandra") == []  # the session's name is the user's words too
    m.close()
    assert on_disk(tmp_path, "weekend-with-alexandra") == []
    m = MemorySystem(store=make(), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    assert m.incognito_sessions() == ["weekend-with-alexandra"]
    m.close()


def test_a_switch_made_while_a_consolidation_holds_the_memory_is_saved_when_it_lets_go(tmp_path, tokenizer, t0):
    import threading
    import time

    m = _open(tmp_path, tokenizer)
    m.encode(content="I live in Lisbon", session="open", now=t0)
    held, go = threading.Event(), threading.Event()

    def busy():  # a consolidation holds the engine lock through a slow model call
        with m._lock:
            held.set()
            go.wait(10)

    t = threading.Thread(target=busy)
    t.start()
    assert held.wait(5)
    start = time.perf_counter()
    m.set_incognito(session="private")  # in effect at once, without waiting
    assert time.perf_counter() - start < 1.0 and m.encoder.refused("private", "default") == "incognito conversation"
    go.set()
    t.join()
    for _ in range(100):  # the save runs as soon as the lock is free
        if not m._owed_switches:
            break
        time.sleep(0.05)
    assert "INCOGNITO" in Path(f"{m.store.path}.journal").read_text(encoding="utf-8")
    m.close()


def _pair(tmp_path, tokenizer):
    pytest.importorskip("apsw")
    from naia_memory.stores.sqlite_store import SqliteStore

    path = tmp_path / "m.sqlite"
    make = lambda: MemorySystem(store=SqliteStore(path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)  # noqa: E731
    return make(), make()


def test_a_switch_call_decides_on_the_file_not_on_what_this_process_last_read(tmp_path, tokenizer, t0):
    a, b = _pair(tmp_path, tokenizer)
    a.encode(content="I live in Lisbon", session="open", now=t0)
    a.set_incognito(session="private")
    b.set_incognito(session="private", on=False)  # b had not read a's switch: it must not think there is nothing to do
    assert b.incognito_sessions() == [] and a.incognito_sessions() == []
    assert a.encode(content="I started running", session="private", now=t0 + timedelta(minutes=1)).stored
    b.set_incognito(session="private")
    a.set_incognito(session="private", on=False)
    b.set_incognito(session="private")  # b still believes it is marked; the file says it is not
    assert not a.encode(content="my salary is 4200 a month", session="private", now=t0 + timedelta(minutes=2)).stored
    a.disable()
    b.enable()
    a.disable()  # a believes memory is off already
    assert not b.encode(content="I like jazz", session="open", now=t0 + timedelta(minutes=3)).stored
    b.enable()
    a.disable()
    b.enable()  # b believes memory is on already
    assert a.enabled and b.enabled  # a reader catches up with the file too
    a.close()
    b.close()


def test_a_switch_committed_by_another_process_during_a_rekey_is_not_swallowed(tmp_path, tokenizer, t0):
    a, b = _pair(tmp_path, tokenizer)
    a.encode(content="I live in Lisbon", session="open", now=t0)
    b.memories()
    real, fired = a.store.commit, []

    def commit_with_another_process():  # `naia-memory off` lands after a's call caught up, before its write lock
        if not fired:
            fired.append(1)
            b.disable()
            b.close()
        return real()

    a.store.commit = commit_with_another_process
    a.rekey(passphrase="correct horse battery staple")
    a.store.commit = real
    assert fired and not a.enabled
    assert not a.encode(content="I like jazz", session="open", now=t0 + timedelta(minutes=1)).stored
    a.close()


@pytest.mark.parametrize("call", ["encode", "encode_many"])
def test_a_switch_another_process_flips_while_this_one_embeds_refuses_the_turn(tmp_path, tokenizer, t0, call):
    a, b = _pair(tmp_path, tokenizer)
    a.encode(content="I live in Lisbon", session="open", now=t0)
    real, fired = a.embedder.embed_passages, []

    def slow_embed(texts):  # a remote embedder takes seconds; meanwhile the user runs `naia-memory incognito private`
        if not fired:
            fired.append(1)
            b.set_incognito(session="private")
        return real(texts)

    a.embedder.embed_passages = slow_embed
    turn = {"content": "my salary is 4200 a month", "session": "private", "now": t0 + timedelta(minutes=1)}
    r = a.encode(**turn) if call == "encode" else a.encode_many(turns=[turn])[0]
    a.embedder.embed_passages = real
    assert fired and not r.stored and r.reason == "incognito conversation"
    assert not any("salary" in x.content for x in b.store.records(None)) and b.memories(project="default")
    a.close()
    b.close()


# ---- a second review's findings (session 38), each failing on the code before its fix

def test_after_incognito_ends_the_next_turn_carries_nothing_from_before_it_even_after_a_reopen(tmp_path, tokenizer, t0):
    m = _open(tmp_path, tokenizer)
    assert m.encode(content="Which city did you move to last spring, do you like it there?", role="assistant",
                    session="chat", now=t0).stored
    m.set_incognito(session="chat")
    m.encode(content="I'd rather not say where I live now", session="chat", now=t0 + timedelta(minutes=1))
    m.set_incognito(session="chat", on=False)
    said = m.encode(content="I moved to Busan and I love living by the sea", session="chat", now=t0 + timedelta(minutes=2))
    assert m.store.get(said.id).metadata.get("context") is None
    m.close()
    m = _open(tmp_path, tokenizer)  # the store's latest kept turn of "chat" is from before incognito: not carried
    said = m.encode(content="I also work at a fish market there now", session="chat", now=t0 + timedelta(minutes=3))
    assert said.stored and m.store.get(said.id).metadata.get("context") is None
    m.close()


def test_a_closing_switch_made_while_close_runs_is_refused_not_said_done(tmp_path, tokenizer, t0):
    m = _open(tmp_path, tokenizer)
    m._closing = True  # (the moment after close() began)
    with pytest.raises(RuntimeError, match="closing"):
        m.disable()
    m._closing = False
    m.close()


def test_with_autosave_off_a_switch_survives_a_discard_of_uncommitted_work(tmp_path, tokenizer, t0, monkeypatch):
    import naia_memory.stores.json_store as json_store

    m = MemorySystem(store=LocalStore(tmp_path / "m.json", autosave=False), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    m.encode(content="I adopted a cat named Miso", session="open", now=t0)
    m.store.commit()
    m.set_incognito(session="private")
    monkeypatch.setattr(json_store, "atomic_write_chunks", _full)
    with pytest.raises(OSError):
        m.reindex(HashingEmbedder(dim=32))  # fails and discards what the store holds uncommitted
    monkeypatch.undo()
    assert m.incognito_sessions() == ["private"]
    assert not m.encode(content="my salary is 4200 a month", session="private", now=t0 + timedelta(minutes=1)).stored
    m.close()


def test_a_sqlite_enable_whose_commit_fails_is_not_written_by_a_later_commit(tmp_path, tokenizer, t0):
    apsw = pytest.importorskip("apsw")

    class FlakyCommit:  # the connection, whose next COMMIT fails once with the transaction left open
        def __init__(self, db):
            self._db, self.fail = db, True

        def __getattr__(self, a):
            return getattr(self._db, a)

        def execute(self, sql, *a):
            if self.fail and sql == "COMMIT":
                self.fail = False
                raise apsw.BusyError("database is locked")
            return self._db.execute(sql, *a)

    m = _open(tmp_path, tokenizer, "sqlite")
    m.encode(content="I adopted a cat named Miso", session="open", now=t0)
    m.disable()
    m.store.db = FlakyCommit(m.store.db)
    with pytest.raises(apsw.BusyError):
        m.enable()
    m.set_incognito(session="private")  # a later commit
    assert not m.enabled
    m.store.db = m.store.db._db
    m.close()
    m = _open(tmp_path, tokenizer, "sqlite")
    assert not m.enabled and m.incognito_sessions() == ["private"]
    m.close()


def test_encode_many_keeps_a_turn_refused_when_it_began_refused_if_another_process_lets_it_in(tmp_path, tokenizer, t0):
    a, b = _pair(tmp_path, tokenizer)
    a.encode(content="I adopted a cat named Miso", session="open", now=t0)
    a.set_incognito(session="private")
    real, fired = a.embedder.embed_passages, []

    def slow_embed(texts):
        if not fired:
            fired.append(1)
            b.set_incognito(session="private", on=False)
        return real(texts)

    a.embedder.embed_passages = slow_embed
    turns = [dict(content="I moved to Busan and I love living by the sea", session="open", now=t0 + timedelta(minutes=1)),
             dict(content="my salary is 4200 a month", session="private", now=t0 + timedelta(minutes=2))]
    got = [(r.stored, r.reason) for r in a.encode_many(turns=turns)]  # raised a RuntimeError before
    a.embedder.embed_passages = real
    assert got == [(True, "stored"), (False, "incognito conversation")]
    a.close()
    b.close()
