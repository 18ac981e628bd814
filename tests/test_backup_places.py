"""Where a backup may go and who may read it (session 40's review): a backup
over the store's own file truncated the store and, noted as a backup, every
later forget did it again (the JSON store then did not open); a SQLite backup
written over an existing file kept that file's mode (0644), and a Qdrant
backup, and the Qdrant store's own folder, were readable by other users."""
from __future__ import annotations

import os
import stat
from datetime import timedelta

import pytest

from naia_memory import EngineConfig, InvalidInput, LocalStore, MemorySystem
from naia_memory.embedders import HashingEmbedder


def _stores():
    out = [("json", lambda p: LocalStore(p / "m.json"), "m.json")]
    try:
        import apsw  # noqa: F401

        from naia_memory.stores.sqlite_store import SqliteStore
        out.append(("sqlite", lambda p: SqliteStore(str(p / "m.sqlite")), "m.sqlite"))
    except ImportError:
        pass
    try:
        from naia_memory.stores.qdrant_store import QdrantStore
        out.append(("qdrant", lambda p: QdrantStore(path=str(p / "q")), "q"))
    except ImportError:
        pass
    return out


STORES = _stores()


def _m(store, tokenizer) -> MemorySystem:
    return MemorySystem(store=store, embedder=HashingEmbedder(dim=64), tokenizer=tokenizer, config=EngineConfig())


@pytest.mark.parametrize("kind,make,name", STORES, ids=[s[0] for s in STORES])
def test_a_backup_onto_the_store_or_a_file_it_keeps_is_refused_with_nothing_written(kind, make, name, tmp_path,
                                                                                   tokenizer, t0):
    m = _m(make(tmp_path), tokenizer)
    m.encode(content="My locker code is 4812", now=t0)
    own = tmp_path / name
    targets = [own, tmp_path / "sub" / ".." / name]
    targets += [own / "backup"] if kind == "qdrant" else [tmp_path / f"{name}.journal", tmp_path / f"{name}-wal"]
    for target in targets:
        with pytest.raises(InvalidInput, match="the store's own file"):
            m.backup(path=str(target))
    assert getattr(m.store, "backups", lambda: [])() == []  # none noted: a forget rewrites nothing
    m.forget(memory_id=m.encode(content="My gym is FitOne", now=t0 + timedelta(minutes=1)).id)
    m.close()
    again = _m(make(tmp_path), tokenizer)
    assert [h.content for h in again.memories(kinds=["episode"])] == ["My locker code is 4812"]
    again.close()
    # a name beside the store that is not one of its files is a backup like any other
    m = _m(make(tmp_path), tokenizer)
    assert m.backup(path=str(tmp_path / f"{name}.bak"))
    m.close()


@pytest.mark.parametrize("kind,make,name", STORES, ids=[s[0] for s in STORES])
def test_a_backup_is_the_users_only_even_over_a_file_that_was_not(kind, make, name, tmp_path, tokenizer, t0):
    old = os.umask(0o022)
    try:
        m = _m(make(tmp_path), tokenizer)
        m.encode(content="My locker code is 4812", now=t0)
        dest = tmp_path / "backup"
        if kind != "qdrant":
            dest.write_text("")  # an older file of the same name (empty: SQLite writes only over a database or nothing)
            os.chmod(dest, 0o644)
        m.backup(path=str(dest))
        m.close()
    finally:
        os.umask(old)
    paths = [dest] if dest.is_file() else [dest] + [p for p in dest.rglob("*")]
    for p in paths:
        mode = stat.S_IMODE(os.stat(p).st_mode)
        assert mode == (0o700 if p.is_dir() else 0o600), (p, oct(mode))


def test_the_qdrant_folder_is_the_users_only(tmp_path, tokenizer, t0):
    pytest.importorskip("qdrant_client")
    from naia_memory.stores.qdrant_store import QdrantStore

    old = os.umask(0o022)
    try:
        m = _m(QdrantStore(path=str(tmp_path / "q")), tokenizer)
        m.encode(content="My locker code is 4812", now=t0)
        m.close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "q").st_mode) == 0o700  # what is inside is out of others' reach


def test_an_encrypted_backup_that_cannot_take_its_place_leaves_no_copy_behind(tmp_path, tokenizer, t0):
    m = _m(LocalStore(tmp_path / "m.json"), tokenizer)
    m.encode(content="My locker code is 4812", now=t0)
    dest = tmp_path / "backup.json"
    dest.mkdir()  # a folder where the backup should go: the last rename fails
    with pytest.raises(OSError):
        m.backup(path=str(dest), passphrase="correct horse battery staple")
    m.close()
    assert not (tmp_path / "backup.json.partial").exists()


def test_stats_count_the_sqlite_write_ahead_log(tmp_path, tokenizer, t0):
    pytest.importorskip("apsw")
    import json
    import subprocess
    import sys
    from pathlib import Path

    from naia_memory.stores.sqlite_store import SqliteStore

    path = tmp_path / "m.sqlite"
    m = _m(SqliteStore(str(path)), tokenizer)
    for i in range(20):
        m.encode(content=f"I planted tomato number {i} in the garden", now=t0 + timedelta(minutes=i))
    wal = path.with_name("m.sqlite-wal")
    assert wal.exists() and wal.stat().st_size > 0  # still open: the log holds what was written
    main = path.stat().st_size
    out = subprocess.run([sys.executable, "-m", "naia_memory.cli", "--store", str(path), "stats"],
                         cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=120)
    m.close()
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["bytes_on_disk"] > main


def test_an_encrypted_backup_is_private_over_a_partial_copy_left_behind(tmp_path, tokenizer, t0):
    m = _m(LocalStore(tmp_path / "m.json"), tokenizer)
    m.encode(content="My locker code is 4812", now=t0)
    left = tmp_path / "backup.json.partial"  # a copy killed mid-write, with the mode the umask gave it
    left.write_text("")
    os.chmod(left, 0o644)
    m.backup(path=str(tmp_path / "backup.json"), passphrase="correct horse battery staple")
    m.close()
    assert stat.S_IMODE(os.stat(tmp_path / "backup.json").st_mode) == 0o600
