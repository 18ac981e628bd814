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


def test_consolidate_with_a_model_the_user_hosts(tmp_path, tokenizer, t0):
    """``--llm-url`` / ``--llm-model``: the facts come from the model's answers
    (a scripted server on loopback), not from the rules; a half-given or
    unreadable model setting is refused before the store is touched."""
    from .loopback_openai import openai_server

    path = tmp_path / "m.json"
    m = MemorySystem(store=LocalStore(path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer, config=EngineConfig())
    m.encode(content="I moved to Porto last spring", now=t0)
    m.close()
    before = path.read_bytes()

    def chat(msgs):
        if msgs[0]["content"].startswith("Extract atomic facts"):
            return json.dumps({"facts": [{"content": "lives in Porto (from the model)", "attribute": "residence",
                                          "memory_class": "identity"}]})
        return '{"op": "ADD", "target": null}'

    backup = tmp_path / "backup.json"
    assert _cli("--store", str(path), "export", str(backup)).returncode == 0
    before = path.read_bytes()  # (closing after the export wrote the snapshot afresh)
    for bad, said in ((("--llm-model", "tiny"), "go together"), (("--llm-key-env", "K"), "need --llm-url"),
                      (("--llm-url", "http://127.0.0.1:9/v1", "--llm-model", "tiny", "--llm-key-env", "UNSET_VAR_Y"),
                       "UNSET_VAR_Y")):
        for command in (("consolidate",), ("import", str(backup), "--force")):
            out = _cli("--store", str(path), *bad, *command)
            assert out.returncode == 2 and said in out.stderr and "Traceback" not in out.stderr, (command, out.stderr)
            assert path.read_bytes() == before
    with openai_server(chat=chat) as url:
        out = _cli("--store", str(path), "--llm-url", url, "--llm-model", "tiny", "consolidate")
    assert out.returncode == 0, out.stderr
    facts = json.loads(_cli("--store", str(path), "list", "--kind", "fact", "--json").stdout)
    assert [f["content"] for f in facts] == ["lives in Porto (from the model)"]


# ---- found by a review in session 32; each fails on the code before it ----------------------------------

def _damaged_copy(store: Path, to: Path) -> Path:
    raw = bytearray(store.read_bytes())
    raw[len(raw) // 2] ^= 1
    to.write_bytes(bytes(raw))
    return to


@pytest.mark.parametrize("backup", ["not a store", "damaged", "the store itself"])
def test_a_failed_import_leaves_the_store_as_it_was(store, tmp_path, backup):
    before = store.read_bytes()
    if backup == "not a store":
        src = tmp_path / "not-a-backup.json"
        src.write_text("not a store")
    elif backup == "damaged":
        src = _damaged_copy(store, tmp_path / "backup.json")
    else:
        src = store
    out = _cli("--store", str(store), "import", str(src), "--force")
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert store.read_bytes() == before, "the import failed but the store was already overwritten"
    assert not [p.name for p in tmp_path.iterdir() if ".import-" in p.name]  # no trial copy left behind
    listed = _cli("--store", str(store), "list", "--json")
    assert listed.returncode == 0 and len(json.loads(listed.stdout)) >= 2


def test_import_refuses_a_store_open_elsewhere_and_leaves_it(store, tmp_path):
    backup = tmp_path / "b.json"
    assert _cli("--store", str(store), "export", str(backup)).returncode == 0
    holder = LocalStore(store)  # another process's MemorySystem, as far as the file lock can tell
    try:
        before = store.read_bytes()
        out = _cli("--store", str(store), "import", str(backup), "--force")
        assert out.returncode == 2 and "open in another" in out.stderr, out.stderr
        assert store.read_bytes() == before
    finally:
        holder.close()
    out = _cli("--store", str(store), "import", str(backup), "--force")  # once closed there, it restores
    assert out.returncode == 0 and "restored" in out.stdout, out.stderr


def test_import_refuses_a_sqlite_store_another_process_has_open(tmp_path, tokenizer, t0):
    """Several processes share a SQLite file, so the JSON store's one-writer
    lock did not cover it: the import went ahead, deleted the open store's WAL
    and replaced the file under it, and the running process's later turns went
    to the unlinked old file (until session 40). Each opener now holds the lock
    shared; the import asks for it alone."""
    pytest.importorskip("apsw")
    from naia_memory.stores.sqlite_store import SqliteStore

    backup, path = tmp_path / "b.sqlite", tmp_path / "m.sqlite"
    made = MemorySystem(store=SqliteStore(str(backup)), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    made.encode(content="I live in Lisbon", now=t0)
    made.close()
    live = MemorySystem(store=SqliteStore(str(path)), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    live.encode(content="my locker code is 4812", now=t0)
    out = _cli("--store", str(path), "import", str(backup), "--force")
    assert out.returncode == 2 and "open in another" in out.stderr, out.stderr
    assert live.encode(content="I adopted a cat named Miso", now=t0 + timedelta(minutes=5)).stored
    live.close()
    listed = json.loads(_cli("--store", str(path), "list", "--json").stdout)
    assert sorted(x["content"] for x in listed) == ["I adopted a cat named Miso", "my locker code is 4812"]
    out = _cli("--store", str(path), "import", str(backup), "--force")  # once closed there, it restores
    assert out.returncode == 0 and "restored 1 memories" in out.stdout, out.stderr


def test_import_meets_a_store_opened_through_a_link(tmp_path, tokenizer, t0):
    """The lock is taken beside the file itself, not beside the name it was
    opened by: a process that opened the store through a symbolic link kept
    its lock beside the link, and the import went ahead."""
    pytest.importorskip("apsw")
    from naia_memory.stores.sqlite_store import SqliteStore

    backup, real, link = tmp_path / "b.sqlite", tmp_path / "m.sqlite", tmp_path / "link.sqlite"
    made = MemorySystem(store=SqliteStore(str(backup)), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    made.encode(content="I live in Lisbon", now=t0)
    made.close()
    SqliteStore(str(real)).close()
    link.symlink_to(real)
    live = MemorySystem(store=SqliteStore(str(link)), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    live.encode(content="my locker code is 4812", now=t0)
    for target in (link, real):
        out = _cli("--store", str(target), "import", str(backup), "--force")
        assert out.returncode == 2 and "open in another" in out.stderr, out.stderr
    live.close()
    assert sorted(p.name for p in tmp_path.glob("*.lock")) == ["b.sqlite.lock", "m.sqlite.lock"]


def test_forget_from_a_script_without_yes_forgets_nothing(store):
    out = subprocess.run([sys.executable, "-m", "naia_memory.cli", "--store", str(store), "forget", "--project", "default"],
                         cwd=REPO, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert out.returncode == 1 and "nothing forgotten" in out.stdout and "Traceback" not in out.stderr, out.stderr
    listed = _cli("--store", str(store), "list", "--json")
    assert len(json.loads(listed.stdout)) >= 2


@pytest.mark.parametrize("case", ["export to a folder", "a folder as the store", "unset passphrase variable"])
def test_path_and_setting_mistakes_are_one_line_and_exit_2(store, tmp_path, case):
    if case == "export to a folder":
        out = _cli("--store", str(store), "export", str(tmp_path))
    elif case == "a folder as the store":
        out = _cli("--store", str(tmp_path), "list")
    else:
        out = _cli("--store", str(store), "export", str(tmp_path / "b.json"), "--backup-passphrase-env", "NAIA_NO_SUCH_VAR")
    assert out.returncode == 2 and "Traceback" not in out.stderr and out.stderr.startswith("naia-memory: error:"), \
        (out.returncode, out.stderr[-300:])


# ---- session 34: a review's findings, each failing on the code before it
@pytest.mark.parametrize("flag", ["--project", "--id"])
def test_an_empty_name_forgets_nothing(store, flag):
    out = subprocess.run([sys.executable, "-m", "naia_memory.cli", "--store", str(store), "forget", flag, "", "--yes"],
                         cwd=REPO, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr, (out.returncode, out.stdout, out.stderr[-300:])
    assert len(json.loads(_cli("--store", str(store), "list", "--json").stdout)) == 4  # everything forgotten before


@pytest.mark.parametrize("command", [["list"], ["stats"], ["search", "Lisbon"], ["show", "ep_x"], ["export", "out.json"]])
def test_a_command_that_only_reads_makes_no_store_at_a_wrong_path(tmp_path, command):
    if command[0] == "export":
        command = ["export", str(tmp_path / "out.json")]
    out = _cli("--store", str(tmp_path / "typo" / "m.json"), *command)
    assert out.returncode == 2 and "no store at" in out.stderr and "Traceback" not in out.stderr, out.stderr[-300:]
    assert not (tmp_path / "typo").exists()


def test_a_model_server_that_fails_is_one_line_and_exit_2(tmp_path, tokenizer, t0):
    path = tmp_path / "waiting.json"
    m = MemorySystem(store=LocalStore(path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer, config=EngineConfig())
    m.encode(content="I live in Lisbon", now=t0)  # waits for consolidation: the model will be asked
    m.close()
    out = _cli("--store", str(path), "--llm-url", "http://127.0.0.1:9/v1", "--llm-model", "x", "consolidate")
    assert out.returncode == 2 and "Traceback" not in out.stderr and out.stderr.startswith("naia-memory: error:"), \
        (out.returncode, out.stderr[-300:])


@pytest.mark.parametrize("args", [["--port", "70000"], ["--rate", "nan"], ["--rate", "inf"], ["--rate", "0"]])
def test_a_port_or_rate_out_of_range_is_refused(store, args):
    out = _cli("--store", str(store), "serve", "rest", "--no-auth", *args)
    assert out.returncode == 2 and "Traceback" not in out.stderr, (out.returncode, out.stderr[-300:])


def test_the_rate_limiter_refuses_nan():
    from naia_memory.server.limits import RateLimiter
    from naia_memory.server.rest import ServerSettings

    with pytest.raises(ValueError):
        RateLimiter(float("nan"), 1)
    with pytest.raises(ValueError):
        ServerSettings(tokens={}, auth=False, rate=float("nan")).check()


def test_export_does_not_replace_an_earlier_backup_unless_told(store, tmp_path):
    backup = tmp_path / "b.json"
    assert _cli("--store", str(store), "export", str(backup)).returncode == 0
    first = backup.read_bytes()
    out = _cli("--store", str(store), "export", str(backup))
    assert out.returncode == 2 and "--overwrite" in out.stderr and backup.read_bytes() == first
    assert _cli("--store", str(store), "export", str(backup), "--overwrite").returncode == 0
