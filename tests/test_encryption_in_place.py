"""A plain SQLite store encrypted in place, and an encrypted one written in the
clear again (session 36). Encrypting drops the FTS5 terms and renames every
memory to an id hashed under the new key, references and log entries
included, in one write transaction; a failure part-way leaves the plain file
as it was, and another opener that still reads it in the clear is refused."""
from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest

pytest.importorskip("cryptography")
pytest.importorskip("apsw")

from naia_memory import MemorySystem  # noqa: E402
from naia_memory.cli import main as cli  # noqa: E402
from naia_memory.embedders import HashingEmbedder  # noqa: E402
from naia_memory.records import content_id  # noqa: E402
from naia_memory.stores import sqlite_file  # noqa: E402
from naia_memory.stores.crypto import WrongPassphrase  # noqa: E402
from naia_memory.stores.id_rename import keyed_ids, renamed  # noqa: E402
from naia_memory.stores.port import StoreError  # noqa: E402
from naia_memory.stores.sqlite_store import SqliteStore  # noqa: E402

from .conftest import refused_after_another_opener, seal_fails_on  # noqa: E402

PASS = "correct horse battery staple"
WORDS = ["Zanzibarville", "파란코끼리"]
ID = re.compile(r"\b[a-z]+_[0-9a-f]{16}\b")


def _m(store, tokenizer) -> MemorySystem:
    return MemorySystem(store=store, embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)


def _filled(path, tokenizer, t0) -> MemorySystem:
    """A plain store with a fact that replaced another (ids in supersedes,
    superseded_by, provenance and the log) and entity edges."""
    m = _m(SqliteStore(path), tokenizer)
    m.encode(content=f"I work at {WORDS[0]} Bakery", now=t0)
    m.encode(content=f"나는 {WORDS[1]} 카페에서 일해", now=t0 + timedelta(minutes=1))
    m.consolidate(now=t0 + timedelta(hours=1))
    m.encode(content=f"I quit {WORDS[0]} Bakery, now I work at Deloitte", now=t0 + timedelta(hours=2))
    m.consolidate(now=t0 + timedelta(hours=3))
    assert any(r.supersedes for r in m.store.records(None)) and m.store.graph.edges
    return m


def _forms(word: str) -> list[bytes]:
    """A word as the file could hold it: as written, or as an FTS5 term (hex of the token)."""
    return [word.encode(), sqlite_file.fts_text([word]).encode(), sqlite_file.fts_text([word.lower()]).encode()]


def _leaks(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if p.is_file() for w in WORDS for f in _forms(w) if f in p.read_bytes()]


def _shape(store, ids=None) -> list:
    """What the store holds, with ids mapped through ``ids`` (old -> new)."""
    ids = ids or {}
    return sorted((ids.get(r.id, r.id), r.content, r.status, ids.get(r.supersedes, r.supersedes),
                   ids.get(r.superseded_by, r.superseded_by), tuple(ids.get(p, p) for p in r.provenance))
                  for r in store.records(None))


def test_a_plain_sqlite_store_is_encrypted_in_place_with_ids_hashed_under_the_key(tmp_path, tokenizer, t0):
    path = tmp_path / "m.sqlite"
    m = _filled(path, tokenizer, t0)
    assert _leaks(tmp_path)  # the plain file holds the words (and its FTS5 index their terms)
    before, log_before = _shape(m.store), m.store.log()
    old_vectors = {r.id: m.store.embeddings([r.id])[0].copy() for r in m.store.records(None)}
    edges = dict(m.store.graph.edges)
    ids = m.rekey(passphrase=PASS)
    assert set(ids) == set(old_vectors) and not set(ids.values()) & set(ids)
    key = m.store.id_key()
    assert all(new == f"{old.split('_')[0]}_{content_id(old, key)}" for old, new in ids.items())
    assert _shape(m.store) == sorted(_shape_of(before, ids)) and dict(m.store.graph.edges) == edges
    # every reference follows: no old id is left in any record or log entry
    texts = [json.dumps(r.to_json()) for r in m.store.records(None)] + [json.dumps(e) for e in m.store.log()]
    assert not {i for t in texts for i in ID.findall(t)} & set(ids)
    assert len(m.store.log()) == len(log_before)
    # the engine's maps were read again: a change finds the renamed fact and replaces it
    m.encode(content="I quit Deloitte, now I work at Google", now=t0 + timedelta(hours=4))
    m.consolidate(now=t0 + timedelta(hours=5))
    deloitte = [r for r in m.store.records(None) if r.content.endswith("I work at Deloitte")]
    assert deloitte and all(r.id in ids.values() for r in deloitte if r.kind.value == "fact")
    assert any(r.status == "superseded" and r.kind.value == "fact" and "Deloitte" in r.content
               for r in m.store.records(None))
    edges = dict(m.store.graph.edges)
    m.close()
    assert _leaks(tmp_path) == []  # no word, no FTS5 term, in the file or its WAL
    with pytest.raises(StoreError, match="encrypted"):
        SqliteStore(path)
    again = SqliteStore(path, passphrase=PASS)
    assert dict(again.graph.edges) == edges
    assert all((again.embeddings([new])[0] == old_vectors[old]).all() for old, new in ids.items())
    assert list(again.db.execute("SELECT count(*) FROM memories_fts"))[0][0] == 0
    again.close()


def _shape_of(shape: list, ids: dict) -> list:
    def m(x):
        return ids.get(x, x) if x else x
    return [(m(i), c, s, m(a), m(b), tuple(m(p) for p in prov)) for i, c, s, a, b, prov in shape]


def test_and_in_the_clear_again_with_its_terms_and_edges_back(tmp_path, tokenizer, t0):
    path = tmp_path / "m.sqlite"
    m = _filled(path, tokenizer, t0)
    terms = sorted(t for (t,) in m.store.db.execute("SELECT term FROM memories_vocab"))
    m.rekey(passphrase=PASS)
    shape, edges = _shape(m.store), dict(m.store.graph.edges)
    assert m.rekey(passphrase=None) == {}  # ids stay: hashed under a key that is gone, they say nothing
    assert _shape(m.store) == shape
    m.close()
    with pytest.raises(StoreError, match="not encrypted"):
        SqliteStore(path, passphrase=PASS)
    plain = SqliteStore(path)
    assert sorted(t for (t,) in plain.db.execute("SELECT term FROM memories_vocab")) == terms
    assert {(a, b): w for a, b, w in plain.db.execute("SELECT a, b, w FROM edges")} == edges == dict(plain.graph.edges)
    assert _shape(plain) == shape
    assert [k for (k,) in plain.db.execute("SELECT key FROM meta WHERE key IN ('encryption', 'sealing', 'graph_sealed')")] == []
    plain.close()
    assert _leaks(tmp_path)  # in the clear, as asked


def test_an_encryption_that_fails_part_way_leaves_the_plain_store_as_it_was(tmp_path, tokenizer, t0, monkeypatch):
    path = tmp_path / "m.sqlite"
    m = _filled(path, tokenizer, t0)
    before = _shape(m.store)
    seal_fails_on(monkeypatch, 3, "the disk is full")
    with pytest.raises(RuntimeError, match="disk is full"):
        m.rekey(passphrase=PASS)
    monkeypatch.undo()
    assert _shape(m.store) == before and m.store.id_key() is None
    r = m.encode(content="I adopted a cat named Mochi", now=t0 + timedelta(hours=4))  # still a plain store
    m.close()
    plain = SqliteStore(path)
    assert _shape(plain) == sorted(before + _shape_one(plain, r.id))
    assert list(plain.db.execute("SELECT count(*) FROM memories_fts"))[0][0] == len(plain)
    plain.close()


def _shape_one(store, rid: str) -> list:
    return [x for x in _shape(store) if x[0] == rid]


def test_another_opener_reading_in_the_clear_is_refused_and_writes_nothing(tmp_path, tokenizer, t0):
    path = tmp_path / "m.sqlite"
    a = _filled(path, tokenizer, t0)
    b = _m(SqliteStore(path), tokenizer)
    a.rekey(passphrase=PASS)
    n = refused_after_another_opener(a, b, StoreError, "encrypted by another opener", "bakery", t0)
    assert _leaks(tmp_path) == []
    again = SqliteStore(path, passphrase=PASS)
    assert len(again) == n and not any("Secret" in r.content for r in again.records(None))
    again.close()


def test_an_opener_under_the_key_is_refused_once_another_writes_it_in_the_clear(tmp_path, tokenizer, t0):
    path = tmp_path / "m.sqlite"
    a = _m(SqliteStore(path, passphrase=PASS), tokenizer)
    a.encode(content="I live in Lisbon", now=t0)
    b = _m(SqliteStore(path, passphrase=PASS), tokenizer)
    a.rekey(passphrase=None)
    with pytest.raises(WrongPassphrase, match="in the clear by another opener"):
        b.encode(content="I run on Tuesdays", now=t0 + timedelta(hours=1))
    a.close()
    b.store.db.close()
    b.store.db = None
    plain = SqliteStore(path)
    assert [r.content for r in plain.records(None)] == ["I live in Lisbon"]
    plain.close()


def test_sqlite_vec_vectors_are_refused_or_dropped(tmp_path, tokenizer, t0):
    pytest.importorskip("sqlite_vec")
    path = tmp_path / "m.sqlite"
    m = _m(SqliteStore(path, vector_index="sqlite-vec"), tokenizer)
    m.encode(content=f"I work at {WORDS[0]} Bakery", now=t0)
    with pytest.raises(ValueError, match="vector_index='matrix'"):
        m.rekey(passphrase=PASS)
    m.close()
    assert SqliteStore(path).meta()["embedder"] is not None  # still plain, still open
    m = _m(SqliteStore(path), tokenizer)  # a matrix opener: the vec0 table (plain vectors) goes with the rest
    m.rekey(passphrase=PASS)
    tables = {t for (t,) in m.store.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "memories_vec" not in tables
    m.close()
    assert _leaks(tmp_path) == []


def test_the_command_encrypts_a_plain_sqlite_store_and_says_ids_changed(tmp_path, tokenizer, t0, monkeypatch, capsys):
    path = tmp_path / "m.sqlite"
    m = _filled(path, tokenizer, t0)
    n = len(m.store)
    m.close()
    monkeypatch.setenv("NEW_PASS", PASS)
    assert cli(["--store", str(path), "rekey", "--new-passphrase-env", "NEW_PASS"]) == 0
    assert f"{n} memory ids changed" in capsys.readouterr().out
    assert _leaks(tmp_path) == []
    assert cli(["--store", str(path), "--passphrase-env", "NEW_PASS", "rekey", "--plain"]) == 0
    assert "written in the clear" in capsys.readouterr().out
    assert cli(["--store", str(path), "stats"]) == 0
    assert f'"memories": {n}' in capsys.readouterr().out


def test_renaming_reaches_values_keys_and_lists_and_log_strings_but_not_the_users_words():
    ids = {"fact_0123456789abcdef": "fact_fedcba9876543210", "odd-id": "m_1111111111111111"}
    record = {"id": "fact_0123456789abcdef", "content": "forget fact_0123456789abcdef please",
              "tokens": ["fact_0123456789abcdef"], "provenance": ["odd-id", "ep_aaaaaaaaaaaaaaaa"],
              "value": "fact_0123456789abcdef", "project": "follow-up-fact_0123456789abcdef",
              "metadata": {"context": "what is fact_0123456789abcdef?", "scores": {"fact_0123456789abcdef": 1.0},
                           "note": "see fact_0123456789abcdef", "source_id": "fact_0123456789abcdef"}}
    out = renamed(record, ids)
    assert out["id"] == "fact_fedcba9876543210" and out["provenance"] == ["m_1111111111111111", "ep_aaaaaaaaaaaaaaaa"]
    for said in ("content", "tokens", "value", "project"):  # the user's words and names, wherever kept
        assert out[said] == record[said]
    assert out["metadata"] == {"context": "what is fact_0123456789abcdef?", "scores": {"fact_fedcba9876543210": 1.0},
                               "note": "see fact_0123456789abcdef",  # an id-shaped word in their metadata is theirs
                               "source_id": "fact_fedcba9876543210"}  # a value that is an id is a reference
    entry = {"op": "UPDATE", "problems": ["missing: fact_0123456789abcdef (Lisbon is not in the summary)"]}
    assert renamed(entry, ids, inside=True)["problems"] == ["missing: fact_fedcba9876543210 (Lisbon is not in the summary)"]
    new = keyed_ids(["ep_0000000000000001", "odd-id"], b"k" * 32)
    assert new["ep_0000000000000001"].startswith("ep_") and new["odd-id"].startswith("m_")
    assert keyed_ids(["ep_0000000000000001"], b"j" * 32) != keyed_ids(["ep_0000000000000001"], b"k" * 32)
