"""A damaged store is refused with a StoreError naming the file, and the file
is left as it was (issue 11): the JSON snapshot carries a sha256 of itself,
SQLite runs quick_check on open. Before, 6 of 12 single-byte flips in a JSON
store loaded silently and other damage raised KeyError, binascii.Error..."""
from __future__ import annotations

import json
import random
from datetime import timedelta

import pytest

from naia_memory import EngineConfig, LocalStore, MemorySystem
from naia_memory.embedders import HashingEmbedder
from naia_memory.stores.port import StoreError

from .conftest import naia_store


def _fill(kind, tmp_path, tokenizer, t0):
    m = MemorySystem(store=naia_store(kind, tmp_path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer, config=EngineConfig())
    for i in range(30):
        m.encode(content=f"I visited museum number {i} with my sister", now=t0 + timedelta(minutes=i))
    m.consolidate(now=t0 + timedelta(hours=1))
    path = m.store.path
    m.close()
    return path


def test_every_single_byte_flip_in_a_json_store_is_refused(tmp_path, tokenizer, t0):
    path = _fill("json", tmp_path, tokenizer, t0)
    good = open(path, "rb").read()
    rng = random.Random(0)
    for i in sorted(rng.sample(range(len(good)), 40)):
        bad = bytearray(good)
        bad[i] ^= 0x04
        open(path, "wb").write(bytes(bad))
        with pytest.raises(StoreError, match=str(path)):
            LocalStore(path)
        assert open(path, "rb").read() == bytes(bad)  # untouched
    open(path, "wb").write(good)
    LocalStore(path).close()


@pytest.mark.parametrize("damage", ["records-dict", "no-id", "bad-vector", "not-a-store", "truncated"])
def test_structural_damage_is_a_store_error_without_a_checksum(tmp_path, tokenizer, t0, damage):
    """A hand-edited file may drop its checksum (README); damage is still named, never a KeyError."""
    path = _fill("json", tmp_path, tokenizer, t0)
    doc = json.loads(open(path, encoding="utf-8").read())
    doc.pop("checksum")
    if damage == "records-dict":
        doc["records"] = {}
    elif damage == "no-id":
        del doc["records"][0]["id"]
    elif damage == "bad-vector":
        doc["records"][0]["embedding"] = "!!!"
    elif damage == "not-a-store":
        doc = [1, 2, 3]
    text = json.dumps(doc)
    open(path, "w", encoding="utf-8").write(text[: len(text) // 2] if damage == "truncated" else text)
    with pytest.raises(StoreError, match=str(path)):
        LocalStore(path)


def test_a_hand_edited_json_store_without_its_checksum_opens(tmp_path, tokenizer, t0):
    path = _fill("json", tmp_path, tokenizer, t0)
    doc = json.loads(open(path, encoding="utf-8").read())
    doc.pop("checksum")
    doc["records"][0]["content"] = "I visited the museum with my brother"
    open(path, "w", encoding="utf-8").write(json.dumps(doc, ensure_ascii=False))
    s = LocalStore(path)
    assert any(r.content == "I visited the museum with my brother" for r in s.records(None))
    s.close()


@pytest.mark.parametrize("layout", ["indented", "records-first", "checksum-dropped-keys-shuffled"])
def test_a_hand_edited_json_store_opens_in_any_layout(tmp_path, tokenizer, t0, layout):
    """The store is read member by member (records streamed into the cache);
    a person may indent the file or move its keys, and it must read the same."""
    path = _fill("json", tmp_path, tokenizer, t0)
    before = LocalStore(path)
    want = {r.id: (r.to_json(), before.embeddings([r.id]).tobytes()) for r in before.records(None)}
    before.close()
    doc = json.loads(open(path, encoding="utf-8").read())
    doc.pop("checksum")
    if layout == "indented":
        text = json.dumps(doc, ensure_ascii=False, indent=2)
    elif layout == "records-first":  # the records come before the header they need (the embedder's dimension)
        text = json.dumps({"records": doc.pop("records"), **doc}, ensure_ascii=False)
    else:
        text = json.dumps(dict(reversed(list(doc.items()))), ensure_ascii=True, separators=(", ", " : "))
    open(path, "w", encoding="utf-8").write(" \n" + text + "\n")
    s = LocalStore(path)
    got = {r.id: (r.to_json(), s.embeddings([r.id]).tobytes()) for r in s.records(None)}
    s.close()
    assert got == want


def test_a_key_written_twice_is_damage(tmp_path, tokenizer, t0):
    """json.loads keeps the last of two; the store reads records as they come,
    with the header before them, so a second header or records is refused."""
    path = _fill("json", tmp_path, tokenizer, t0)
    doc = json.loads(open(path, encoding="utf-8").read())
    doc.pop("checksum")
    text = json.dumps(doc, ensure_ascii=False)
    for extra in (',"embedder":{"name":"other","dim":32}}', ',"records":[]}'):
        open(path, "w", encoding="utf-8").write(text[:-1] + extra)
        with pytest.raises(StoreError, match="appears twice"):
            LocalStore(path)


def test_a_checksum_anywhere_but_last_is_damage(tmp_path, tokenizer, t0):
    path = _fill("json", tmp_path, tokenizer, t0)
    doc = json.loads(open(path, encoding="utf-8").read())
    moved = {"checksum": doc.pop("checksum"), **doc}
    open(path, "w", encoding="utf-8").write(json.dumps(moved, ensure_ascii=False, separators=(",", ":")))
    with pytest.raises(StoreError, match="checksum"):
        LocalStore(path)


def test_a_damaged_sqlite_store_is_refused(tmp_path, tokenizer, t0):
    pytest.importorskip("apsw")
    from naia_memory.stores.sqlite_store import SqliteStore

    path = _fill("sqlite", tmp_path, tokenizer, t0)
    data = bytearray(open(path, "rb").read())
    page = 4096
    for off in range(2 * page + 8, len(data), page):  # scribble over every page header after the second
        data[off:off + 4] = b"\xff\xff\xff\xff"
    open(path, "wb").write(bytes(data))
    with pytest.raises(StoreError, match="damaged|not a readable"):
        SqliteStore(path)
    assert open(path, "rb").read() == bytes(data)
    not_db = tmp_path / "notes.sqlite"
    not_db.write_bytes(b"these are my notes, not a database" * 200)
    with pytest.raises(StoreError, match="not a readable SQLite store"):
        SqliteStore(not_db)
