"""Session 40's review of the user's controls: a forget whose backup cannot
be rewritten (a read-only mount, a folder now at its path) is done and said
so, with that backup named stale, instead of a failure after the memory was
gone (REST answered 503 "wrote nothing" and the retry 404); and commands that
read a store or act on its ids say there is none at a mistyped path instead of
making an empty one."""
from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from naia_memory import EngineConfig, LocalStore, MemorySystem
from naia_memory.embedders import HashingEmbedder

REPO = Path(__file__).resolve().parents[1]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "naia_memory.cli", *args], cwd=REPO, capture_output=True, text=True,
                          env=dict(os.environ), timeout=120)


def _memory(path, tokenizer, t0) -> MemorySystem:
    m = MemorySystem(store=LocalStore(path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer, config=EngineConfig())
    m.encode(content="I live in Lisbon", now=t0)
    m.encode(content="I play bass in a band", now=t0 + timedelta(minutes=1))
    m.consolidate(now=t0 + timedelta(hours=1))
    return m


def test_a_forget_whose_backup_cannot_be_rewritten_is_done_and_names_it_stale(tmp_path, tokenizer, t0, caplog):
    m = _memory(tmp_path / "m.json", tokenizer, t0)
    kept, blocked = tmp_path / "kept.json", tmp_path / "blocked.json"
    m.backup(path=str(kept))
    m.backup(path=str(blocked))
    blocked.unlink()
    blocked.mkdir()  # the backup's place now holds something the store cannot write over
    fact = next(h for h in m.memories() if h.content == "I live in Lisbon" and h.kind.value == "fact")
    assert m.forget(memory_id=fact.id) >= 1
    assert m.get(fact.id) is None
    assert "could not be rewritten" in caplog.text and str(blocked) in caplog.text
    [entry] = [e for e in m.audit_log(op="BACKUPS")]
    assert entry["refreshed"] == [str(kept)] and entry["stale"] == [str(blocked)]
    assert list(entry["unwritable"]) == [str(blocked)]
    m.close()
    assert "Lisbon" not in kept.read_text()  # the backup that could be rewritten was


def test_over_rest_that_forget_is_a_200_not_a_503_inviting_a_retry(tmp_path, tokenizer, t0):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from naia_memory.server.rest import ServerSettings, create_app

    m = _memory(tmp_path / "m.json", tokenizer, t0)
    m.backup(path=str(tmp_path / "b.json"))
    (tmp_path / "b.json").unlink()
    (tmp_path / "b.json").mkdir()
    fact = next(h for h in m.memories() if h.content == "I live in Lisbon" and h.kind.value == "fact")
    token = "test-token-0123456789"
    with TestClient(create_app(m, ServerSettings(tokens={token: None}, rate=1000, burst=1000))) as c:
        r = c.delete(f"/memories/{fact.id}", params={"user_id": "default"}, headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200 and r.json()["deleted"] >= 1, r.text
    m.close()


@pytest.mark.parametrize("command", [["changes"], ["doubts"], ["edit", "fact_nope", "new text"], ["revert", "fact_nope"],
                                     ["settle", "fact_nope", "--none"], ["forget", "--id", "fact_nope"],
                                     ["forget", "--project", "default"]])
def test_a_command_at_a_path_with_no_store_says_so_and_makes_none(tmp_path, command):
    path = tmp_path / "typo" / "m.json"
    out = _cli("--store", str(path), *command)
    assert out.returncode == 2 and "no store at" in out.stderr, (out.stdout, out.stderr)
    assert not path.exists() and not path.parent.exists()


def test_a_forget_whose_backup_path_now_holds_another_kind_of_file_is_done(tmp_path, tokenizer, t0):
    pytest.importorskip("apsw")
    from naia_memory.stores.sqlite_store import SqliteStore

    m = MemorySystem(store=SqliteStore(str(tmp_path / "m.sqlite")), embedder=HashingEmbedder(dim=64),
                     tokenizer=tokenizer, config=EngineConfig())
    x = m.encode(content="My bank PIN is 4821.", now=t0).id
    m.backup(path=str(tmp_path / "bk.sqlite"))
    (tmp_path / "bk.sqlite").write_text("the user's notes, saved over the old backup\n" * 50)
    assert m.forget(memory_id=x) == 1 and m.get(x) is None
    [entry] = m.audit_log(op="BACKUPS")
    assert entry["stale"] == [str(tmp_path / "bk.sqlite")] and entry["refreshed"] == []
    m.close()
