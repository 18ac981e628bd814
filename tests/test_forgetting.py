"""Forgetting erases: what is forgotten, and everything made from it, leaves
every file the store owns (issue 10). The secret words are searched for in
the raw bytes of each file, the SQLite WAL and the FTS index included (its
terms are stored hex-encoded, so the hex form is searched too)."""
from __future__ import annotations

import json
import os
import stat
from datetime import timedelta
from pathlib import Path

import pytest

from naia_memory import EngineConfig, LocalStore, MemorySystem
from naia_memory.contract import MemoryKind
from naia_memory.embedders import HashingEmbedder

SECRET = "Zanzibarville"
SECRET_KO = "파란코끼리"
SECRET_TURNS = [f"I live in {SECRET} now", f"나는 {SECRET_KO} 카페에서 일해"]
KEPT_TURN = "I play bass in a band"


def _store(kind: str, folder: Path):
    if kind == "json":
        return LocalStore(folder / "memory.json")
    from naia_memory.stores.sqlite_store import SqliteStore

    return SqliteStore(folder / "memory.sqlite", vector_index="matrix" if kind == "sqlite" else "sqlite-vec")


def _system(kind: str, folder: Path, tokenizer) -> MemorySystem:
    return MemorySystem(store=_store(kind, folder), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer, config=EngineConfig())


def _leaks(folder: Path) -> list[str]:
    """Files under ``folder`` whose bytes hold a secret word, in text or as an FTS5 hex term."""
    needles = [w.encode("utf-8") for w in (SECRET, SECRET.lower(), SECRET_KO)]
    needles += [w.encode("utf-8").hex().encode("ascii") for w in (SECRET.lower(), SECRET_KO)]
    return [f"{p.name}: {n!r}" for p in sorted(folder.rglob("*")) if p.is_file()
            for n in needles if n in p.read_bytes()]


def _fill(m: MemorySystem, t0) -> None:
    for i, text in enumerate(SECRET_TURNS + [KEPT_TURN]):
        m.encode(content=text, now=t0 + timedelta(minutes=i))
    m.consolidate(now=t0 + timedelta(hours=1))
    m.recall(query=f"Where do I live? {SECRET}", now=t0 + timedelta(hours=2))  # strengthens, reinforces the graph
    m.backup(path=str(m.store.path) + ".backup")  # a copy the store made: the forget must reach it too


@pytest.mark.parametrize("kind", ["json", "sqlite", "sqlite-vec"])
@pytest.mark.parametrize("mode", ["episode", "fact", "project", "everything"])
def test_forget_leaves_no_byte_of_the_forgotten_words_on_disk(kind, mode, tmp_path, tokenizer, t0):
    pytest.importorskip("apsw") if kind != "json" else None
    m = _system(kind, tmp_path, tokenizer)
    _fill(m, t0)
    assert _leaks(tmp_path), "the secret must be on disk before the forget, or this test proves nothing"
    records = list(m.store.records(None))
    facts = [r for r in records if r.kind is MemoryKind.FACT]
    assert any(SECRET in f.content for f in facts) and any(SECRET_KO in f.content for f in facts)
    if mode in ("episode", "fact"):
        kind_wanted = MemoryKind.EPISODE if mode == "episode" else MemoryKind.FACT
        for word in (SECRET, SECRET_KO):
            target = next(r for r in m.store.records(None) if r.kind is kind_wanted and word in r.content)
            m.forget(memory_id=target.id)
    elif mode == "project":
        m.forget(project="default")
    else:
        m.forget(everything=True)
    assert _leaks(tmp_path) == []  # the process still runs: nothing waits for close
    hits = m.recall(query=f"Where do I live? {SECRET} {SECRET_KO}", now=t0 + timedelta(hours=3)).contents()
    assert not [h for h in hits if SECRET in h or SECRET_KO in h]
    assert SECRET not in json.dumps(m.audit_log(), ensure_ascii=False)
    assert SECRET.lower() not in m.store.graph.adjacency and SECRET_KO not in m.store.graph.adjacency
    kept = [r.content for r in m.store.records(None)]
    assert (KEPT_TURN in kept) == (mode in ("episode", "fact"))
    m.close()
    assert _leaks(tmp_path) == []
    reopened = _system(kind, tmp_path, tokenizer)
    assert [r.content for r in reopened.store.records(None)] == kept
    reopened.close()


def test_forgetting_cascades_along_provenance(tmp_path, tokenizer, t0):
    """A turn takes its fact with it unless another turn also says it; a fact
    takes the turns that said it; what stays loses its links to what went."""
    m = _system("json", tmp_path, tokenizer)
    m.encode(content="I live in Lisbon", now=t0)
    m.encode(content="I live in Lisbon", now=t0 + timedelta(days=1))  # the same fact said again
    m.encode(content="I work as a nurse", now=t0 + timedelta(days=2))
    m.consolidate(now=t0 + timedelta(days=3))
    recs = list(m.store.records(None))
    lisbon_eps = sorted((r for r in recs if r.kind is MemoryKind.EPISODE and "Lisbon" in r.content), key=lambda r: r.created_at)
    lisbon_fact = next(r for r in recs if r.kind is MemoryKind.FACT and "Lisbon" in r.content)
    assert set(lisbon_fact.provenance) == {e.id for e in lisbon_eps}
    assert m.forget(memory_id=lisbon_eps[0].id) == 1  # the fact has another source: it stays
    assert m.store.get(lisbon_fact.id).provenance == [lisbon_eps[1].id]
    assert m.forget(memory_id=lisbon_fact.id) == 2  # the fact and the turn that still said it
    left = [r.content for r in m.store.records(None)]
    assert not [c for c in left if "Lisbon" in c] and "I work as a nurse" in left
    m.close()


def test_forget_everything_covers_another_process_writes_on_sqlite(tmp_path, tokenizer, t0):
    pytest.importorskip("apsw")
    a = _system("sqlite", tmp_path, tokenizer)
    a.encode(content=KEPT_TURN, now=t0)
    b = _system("sqlite", tmp_path, tokenizer)  # a second process's connection to the same file
    b.encode(content=SECRET_TURNS[0], now=t0 + timedelta(minutes=1))
    assert a.forget(everything=True) == 2  # a never loaded b's memory, and still forgets it
    b.close()
    assert _leaks(tmp_path) == []
    a.close()


def test_files_the_store_creates_are_private(tmp_path, tokenizer, t0):
    for kind, sub in (("json", "j"), ("sqlite", "s")):
        folder = tmp_path / sub
        folder.mkdir()
        m = _system(kind, folder, tokenizer)
        m.encode(content=KEPT_TURN, now=t0)
        m.backup(path=str(folder / "backup" / "copy"))
        for p in folder.rglob("*"):
            if p.is_file() and not p.name.endswith(".lock"):
                assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
        m.close()


def test_a_crashed_write_leaves_no_temp_copy_after_the_next_open(tmp_path, tokenizer, t0):
    m = _system("json", tmp_path, tokenizer)
    m.encode(content=KEPT_TURN, now=t0)
    m.close()
    stale = tmp_path / ".memory.json.abc123.tmp"  # what a crash between write and rename leaves
    stale.write_text(SECRET)
    os.chmod(stale, 0o600)
    m = _system("json", tmp_path, tokenizer)
    assert not stale.exists() and _leaks(tmp_path) == []
    m.close()


@pytest.mark.parametrize("name", ["lite", "qdrant"])
@pytest.mark.parametrize("mode", ["memory_id", "project"])
def test_other_naia_backends_erase_too(name, mode, tmp_path, t0):
    from naia_memory.providers import create_provider

    pytest.importorskip("qdrant_client") if name == "qdrant" else None
    p = create_provider(name, path=str(tmp_path / name), embedder={"kind": "hashing", "dim": 64})
    ids = [p.encode(content=t, now=t0 + timedelta(minutes=i)).id for i, t in enumerate(SECRET_TURNS + [KEPT_TURN])]
    p.consolidate(now=t0 + timedelta(hours=1))
    if hasattr(p, "store"):
        p.store.commit()
    assert _leaks(tmp_path)
    if mode == "memory_id":
        for i in ids[:2]:
            p.forget(memory_id=i)
    else:
        p.forget(project="default")
    assert _leaks(tmp_path) == []
    p.close()
    assert _leaks(tmp_path) == []


def test_a_backup_under_its_own_passphrase_is_named_not_silently_kept(tmp_path, tokenizer, t0, caplog):
    pytest.importorskip("cryptography")
    m = _system("json", tmp_path, tokenizer)
    _fill(m, t0)
    sealed = tmp_path / "elsewhere.json"
    m.backup(path=str(sealed), passphrase="its own passphrase")
    with caplog.at_level("WARNING", logger="naia_memory"):
        m.forget(everything=True)
    entry = [e for e in m.audit_log() if e["op"] == "BACKUPS"][-1]
    assert entry["stale"] == [str(sealed.resolve())] and str(sealed.resolve()) in caplog.text
    assert [p for p in _leaks(tmp_path) if not p.startswith("elsewhere")] == []  # the plain backup was rewritten
    m.close()


# ---- session 32 (a review): the turn before, carried as the next turn's context ------------------------

def _leaks_with_stem(folder: Path) -> list[str]:
    stem = b"zanzibarvill"  # the English stem Kiwi's partner (Snowball) indexes
    return _leaks(folder) + [f"{p.name}: {n!r}" for p in sorted(folder.rglob("*")) if p.is_file()
                             for n in (stem, stem.hex().encode("ascii")) if n in p.read_bytes()]


@pytest.mark.parametrize("kind", ["json", "sqlite", "sqlite-vec"])
def test_a_reply_keeps_its_own_words_when_the_question_it_answered_is_forgotten(kind, tmp_path, tokenizer, t0):
    """A reply is indexed with the turn it answers (metadata, keywords,
    vector): forgetting the question left its words in the reply."""
    m = _system(kind, tmp_path, tokenizer)
    q = m.encode(content=f"Do you remember that I grew up in {SECRET}?", session="s1", now=t0)
    a = m.encode(content="Yes, it was great!", session="s1", now=t0 + timedelta(minutes=1))
    assert q.stored and a.stored and SECRET in m.store.get(a.id).metadata["context"]
    m.forget(memory_id=q.id)
    kept = m.store.get(a.id)
    assert kept is not None and "context" not in kept.metadata and kept.content == "Yes, it was great!"
    assert m.recall(query="was it great", now=t0 + timedelta(hours=1)).contents()[0] == "Yes, it was great!"
    assert _leaks_with_stem(tmp_path) == []
    m.close()
    assert _leaks_with_stem(tmp_path) == []


@pytest.mark.parametrize("how", ["id", "project", "everything"])
def test_the_next_turn_after_a_forget_does_not_carry_the_forgotten_one(how, tmp_path, tokenizer, t0):
    """The engine keeps each session's last turn in memory for the next
    turn's context: after a forget, the next short reply wrote the
    forgotten sentence back to disk."""
    m = _system("json", tmp_path, tokenizer)
    q = m.encode(content=f"Did I tell you I grew up in {SECRET}?", session="s1", now=t0)
    assert q.stored
    m.forget(**{"id": {"memory_id": q.id}, "project": {"project": "default"}, "everything": {"everything": True}}[how])
    a = m.encode(content="Yes, it was great!", session="s1", now=t0 + timedelta(minutes=1))
    assert a.stored and "context" not in m.store.get(a.id).metadata
    m.close()
    assert _leaks_with_stem(tmp_path) == []


def test_qdrant_local_erases_on_a_sqlite_build_that_does_not_zero_freed_pages(tmp_path, t0, monkeypatch):
    """Qdrant's local mode keeps payloads (the text) in a SQLite file per
    collection, through the standard sqlite3 module: the erasure held only
    because this machine's SQLite zeroes freed pages by default; SQLite's own
    default does not. Emulated by turning that off on Qdrant's connections."""
    pytest.importorskip("qdrant_client")
    import sqlite3

    from qdrant_client.local import persistence

    from naia_memory.providers import create_provider

    real_connect = sqlite3.connect

    def default_build(*a, **k):
        c = real_connect(*a, **k)
        c.execute("PRAGMA secure_delete=OFF")
        return c

    monkeypatch.setattr(persistence.sqlite3, "connect", default_build)
    p = create_provider("qdrant", path=str(tmp_path / "q"), embedder={"kind": "hashing", "dim": 64})
    filler = [f"I play bass in band number {i} on weekends with friends" for i in range(30)]
    ids = [p.encode(content=t, now=t0 + timedelta(minutes=i)).id for i, t in enumerate([SECRET_TURNS[0]] + filler)]
    p.consolidate(now=t0 + timedelta(hours=1))
    p.store.commit()
    assert _leaks(tmp_path)
    p.forget(memory_id=ids[0])
    assert _leaks(tmp_path) == []
    p.close()
    assert _leaks(tmp_path) == []
