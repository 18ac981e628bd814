"""``naia-memory ingest``: a conversation history from a JSON Lines file, all or nothing.

The command runs as a user runs it (a second process); the store is a real
JSON file written with a hashing embedder, which the command rebuilds."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from naia_memory import EngineConfig, LocalStore, MemorySystem
from naia_memory.contract import InvalidInput
from naia_memory.embedders import HashingEmbedder
from naia_memory.history_file import read_turns

from .test_cli import _cli


def _open(path, tokenizer):
    return MemorySystem(store=LocalStore(path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer, config=EngineConfig())


@pytest.fixture
def empty(tmp_path, tokenizer):
    path = tmp_path / "m.json"
    m = _open(path, tokenizer)
    m.encode(content="I live in Lisbon", now=datetime(2026, 1, 1, tzinfo=timezone.utc))  # the store records its embedder
    m.close()
    return path


HISTORY = [
    {"content": "나는 서울에 살아", "session": "s1", "now": "2026-02-01T09:00:00+09:00"},
    {"content": "서울 어디쯤 사세요?", "role": "assistant", "session": "s1", "now": "2026-02-01T09:00:05+09:00"},
    {"content": "I work as a nurse at a hospital", "session": "s2", "now": "2026-02-02T10:00:00", "metadata": {"source": "chat"}},
]


def test_a_history_file_is_stored_in_order_with_its_times_sessions_and_roles(empty, tmp_path, tokenizer):
    f = tmp_path / "h.jsonl"
    f.write_text("\n".join(json.dumps(t, ensure_ascii=False) for t in HISTORY[:2]) + "\n\n" + json.dumps(HISTORY[2]) + "\n",
                 encoding="utf-8")
    out = _cli("--store", str(empty), "ingest", str(f), "--project", "alice")
    assert out.returncode == 0, out.stderr
    assert "stored 3 of 3 turns in project 'alice'" in out.stdout
    m = _open(empty, tokenizer)
    try:
        hits = m.memories(project="alice")
        assert [h.content for h in hits] == [t["content"] for t in HISTORY]
        assert hits[0].created_at == datetime(2026, 2, 1, 0, 0, tzinfo=timezone.utc)  # +09:00 read as such
        assert hits[2].created_at == datetime(2026, 2, 2, 10, 0, tzinfo=timezone.utc)  # no zone: UTC
        assert [h.metadata["session"] for h in hits] == ["s1", "s1", "s2"]
        assert [h.content for h in m.memories(project="default")] == ["I live in Lisbon"]  # another project untouched
    finally:
        m.close()


@pytest.mark.parametrize("bad, why", [
    ("{not json", "line 3:"),
    ('{"content": "x", "speaker": "me"}', "line 3: a turn needs 'content'"),
    ('{"content": "x", "role": "bot"}', "line 3: unknown role"),
    ('{"content": "x", "now": "yesterday"}', "line 3:"),
    ('{"content": "   "}', "line 3:"),
    ('["x"]', "line 3: a turn is a JSON object"),
])
def test_a_bad_line_is_named_and_nothing_of_the_file_is_stored(empty, tmp_path, tokenizer, bad, why):
    f = tmp_path / "h.jsonl"
    f.write_text(json.dumps(HISTORY[0], ensure_ascii=False) + "\n" + json.dumps(HISTORY[2]) + "\n" + bad + "\n", encoding="utf-8")
    before = empty.read_bytes()
    out = _cli("--store", str(empty), "ingest", str(f))
    assert out.returncode == 2 and why in out.stderr, out.stderr
    assert empty.read_bytes() == before
    m = _open(empty, tokenizer)
    try:
        assert [h.content for h in m.memories()] == ["I live in Lisbon"]  # the two good lines before it: not stored
    finally:
        m.close()


def test_stdin_is_read_with_a_dash_and_the_gate_says_what_it_kept_out(empty, tokenizer):
    lines = "\n".join(json.dumps({"content": c}) for c in ("I adopted a dog named Coco", "ㅋㅋ"))
    out = _cli("--store", str(empty), "ingest", "-", stdin=lines)
    assert out.returncode == 0, out.stderr
    assert "stored 1 of 2 turns" in out.stdout and "1 not kept: gated" in out.stdout


def test_read_turns_names_the_line_as_an_editor_counts_it():
    with pytest.raises(InvalidInput, match="^line 4: "):
        read_turns(["", '{"content": "a"}', "   ", '{"content": 1}'])
    assert [t.content for t in read_turns(['{"content": "a"}', "", '{"content": "b"}'])] == ["a", "b"]


def test_a_bad_history_at_a_new_store_path_makes_no_store(tmp_path):
    """A review (session 39): the store was opened (and made, with its folder)
    before the history was read, so a typo'd history left an empty store."""
    f = tmp_path / "h.jsonl"
    f.write_text('{"content": "x", "role": "bot"}\n', encoding="utf-8")
    for history in (str(f), str(tmp_path / "nope.jsonl")):
        out = _cli("--store", str(tmp_path / "new" / "m.json"), "ingest", history)
        assert out.returncode == 2
    assert not (tmp_path / "new").exists()


def test_read_turns_takes_bytes_a_bom_and_names_a_bad_byte_or_a_deep_nest_by_line():
    assert [t.content for t in read_turns([b'\xef\xbb\xbf{"content": "a"}\n', '{"content": "b"}'.encode()])] == ["a", "b"]
    assert [t.content for t in read_turns(['\ufeff{"content": "a"}'])] == ["a"]
    with pytest.raises(InvalidInput, match="^line 2: 'utf-8' codec"):
        read_turns([b'{"content": "a"}\n', b'{"content": "caf\xe9"}\n'])
    with pytest.raises(InvalidInput, match="^line 1: nested too deeply"):
        read_turns(['{"content": "x", "metadata": {"a": ' + "[" * 100000 + "]" * 100000 + "}}"])
