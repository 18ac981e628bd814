"""Bad input fails at the door with a ValueError and leaves the store as it
was (issue 11): before, a datetime in metadata or a lone surrogate was taken
into memory and broke every later commit of the process; on SQLite it left a
phantom record and an open write transaction."""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from naia_memory import EngineConfig, MemoryKind, MemorySystem
from naia_memory.embedders import HashingEmbedder
from naia_memory.validate import MAX_CONTENT_CHARS

from .conftest import naia_store

BAD_ENCODES = [
    ({"content": "fine", "metadata": {"at": datetime(2026, 1, 1)}}, "JSON-writable"),
    # the engine's own keys, read back with a fixed shape (session 32: ``source_ids: 5`` broke every later recall)
    ({"content": "fine", "metadata": {"source_ids": 5}}, "engine's own"),
    ({"content": "fine", "metadata": {"when": [1, 2], "evidence": 7}}, "engine's own"),
    ({"content": "fine", "metadata": {"speaker": 5}}, "non-empty text"),
    ({"content": "fine", "metadata": {"x": float("nan")}}, "JSON-writable"),
    ({"content": "bad \udcff text"}, "not valid text"),
    ({"content": "fine", "session": "s\ud800"}, "not valid text"),
    ({"content": "fine", "metadata": {"k": "v\udc80"}}, "not valid text"),
    ({"content": "fine", "metadata": {1: "x"}}, "string keys"),
    ({"content": "x" * (MAX_CONTENT_CHARS + 1)}, "limit"),
    ({"content": "fine", "project": None}, "project"),
    ({"content": "fine", "project": ""}, "project"),
    ({"content": "fine", "session": ""}, "session"),
    ({"content": "", }, "non-empty"),
    ({"content": None}, "non-empty"),
    ({"content": "fine", "role": "robot"}, "unknown role"),
]


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_bad_values_are_refused_and_the_store_stays_usable(kind, tmp_path, tokenizer, t0):
    m = MemorySystem(store=naia_store(kind, tmp_path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer, config=EngineConfig())
    m.encode(content="I keep bees on the roof", now=t0)
    for args, why in BAD_ENCODES:
        with pytest.raises(ValueError, match=why):
            m.encode(now=t0, **args)
    with pytest.raises(ValueError, match="turn 1"):
        m.encode_many(turns=[{"content": "a good one"}, {"content": "bad", "metadata": {"t": object()}}])
    assert [r.content for r in m.store.records(None)] == ["I keep bees on the roof"]  # nothing half-added
    for call in (lambda: m.recall(query="bees", project=None), lambda: m.recall(query="bees", kinds="episode"),
                 lambda: m.recall(query="", now=t0), lambda: m.recall(query="bees", kinds=["nope"]),
                 lambda: m.recall_many(queries="bees"), lambda: m.forget(project=""),
                 # session 40: a truthy string strengthened; no queries skipped the top_k check
                 lambda: m.recall(query="bees", strengthen="no"), lambda: m.recall_many(queries=[], top_k=0),
                 lambda: m.edit(memory_id=m.memories()[0].id, content=""), lambda: m.edit(memory_id=m.memories()[0].id, content=None),
                 # an id is text, a project a name (session 32: a list or a dict as an id was a TypeError deep in the store)
                 lambda: m.get({}), lambda: m.history(memory_id=[1]), lambda: m.show(memory_id=None),
                 lambda: m.forget(memory_id=5), lambda: m.facts(project="")):
        with pytest.raises(ValueError):
            call()
    assert m.recall(query="bees", kinds=["episode"], now=t0 + timedelta(hours=1)).contents() == ["I keep bees on the roof"]
    assert m.recall(query="bees", kinds=[MemoryKind.EPISODE], now=t0 + timedelta(hours=1)).contents()
    m.encode(content="the bees swarmed in May", now=t0 + timedelta(days=1))  # later writes still work and reach disk
    m.close()
    again = MemorySystem(store=naia_store(kind, tmp_path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    assert len(again.store) == 2
    if kind == "sqlite":  # no write transaction left open: another connection writes at once
        import apsw

        other = apsw.Connection(str(tmp_path / "m.sqlite"))
        other.setbusytimeout(100)
        with other:
            other.execute("INSERT INTO meta(key, value) VALUES ('probe', '1') ON CONFLICT(key) DO UPDATE SET value = '1'")
        other.close()
    again.close()
