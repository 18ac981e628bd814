"""The ``naia-memory`` command (issue 11): it opens a store with the embedder
that wrote it and lists, shows, searches (read-only), edits, forgets,
exports and imports; run as a real subprocess on real store files."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from naia_memory import EngineConfig, LocalStore, MemorySystem
from naia_memory.embedders import HashingEmbedder

REPO = Path(__file__).resolve().parents[1]


def _cli(*args: str, env: dict | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "naia_memory.cli", *args], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, input=stdin, timeout=120)


@pytest.fixture
def store(tmp_path, tokenizer, t0):
    path = tmp_path / "m.json"
    m = MemorySystem(store=LocalStore(path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer, config=EngineConfig())
    m.encode(content="I live in Lisbon", now=t0)
    m.encode(content="I play bass in a band", now=t0 + timedelta(minutes=1))
    m.consolidate(now=t0 + timedelta(hours=1))
    m.close()
    return path


def test_list_show_search_stats(store):
    out = _cli("--store", str(store), "list", "--kind", "fact", "--json")
    assert out.returncode == 0, out.stderr
    facts = json.loads(out.stdout)
    assert {f["content"] for f in facts} == {"I live in Lisbon", "I play bass in a band"}
    lisbon = next(f["id"] for f in facts if "Lisbon" in f["content"])
    shown = json.loads(_cli("--store", str(store), "show", lisbon).stdout)
    assert shown["sources"][0]["content"] == "I live in Lisbon" and shown["decisions"][0]["op"] == "ADD"
    before = store.read_bytes()
    hits = json.loads(_cli("--store", str(store), "search", "Lisbon", "--json").stdout)
    assert hits[0]["content"] == "I live in Lisbon"
    assert store.read_bytes() == before and not Path(f"{store}.journal").exists()  # a look changes nothing
    stats = json.loads(_cli("--store", str(store), "stats").stdout)
    assert stats["by_kind"] == {"episode": 2, "fact": 2} and stats["embedder"]["name"] == "hashing-64"


def test_edit_forget_export_import(store, tmp_path):
    facts = json.loads(_cli("--store", str(store), "list", "--kind", "fact", "--json").stdout)
    lisbon = next(f["id"] for f in facts if "Lisbon" in f["content"])
    new_id = _cli("--store", str(store), "edit", lisbon, "I live in Porto").stdout.strip()
    assert new_id.startswith("fact_")
    backup = tmp_path / "backup.json"
    out = _cli("--store", str(store), "export", str(backup), "--backup-passphrase-env", "BK", env={"BK": "s3cret pass"})
    assert out.returncode == 0, out.stderr
    assert b"Porto" not in backup.read_bytes()  # the backup is encrypted
    refused = _cli("--store", str(store), "forget", "--everything", stdin="n\n")
    assert refused.returncode == 1 and "nothing forgotten" in refused.stdout
    assert "forgot" in _cli("--store", str(store), "forget", "--everything", "--yes").stdout
    assert json.loads(_cli("--store", str(store), "list", "--json").stdout) == []
    assert _cli("--store", str(store), "import", str(backup), "--passphrase-env", "BK", env={"BK": "s3cret pass"}).returncode != 0  # exists
    out = _cli("--store", str(tmp_path / "restored.json"), "--passphrase-env", "BK", "import", str(backup), env={"BK": "s3cret pass"})
    assert out.returncode == 0 and "restored 5 memories" in out.stdout, out.stderr
    listed = _cli("--store", str(tmp_path / "restored.json"), "--passphrase-env", "BK", "list", "--kind", "fact", env={"BK": "s3cret pass"})
    assert "I live in Porto" in listed.stdout and "I live in Lisbon" not in listed.stdout


def test_clear_errors(tmp_path, store):
    out = _cli("--store", str(store), "show", "nope")
    assert out.returncode == 2 and "naia-memory: error: " in out.stderr and "no memory with id" in out.stderr
    assert "Traceback" not in out.stderr
    out = _cli("--store", str(store), "--passphrase-env", "UNSET_VAR_X", "list")
    assert out.returncode != 0 and "UNSET_VAR_X" in out.stderr
