"""Loading once, before the clock: the Korean analyser and the import batch."""
from __future__ import annotations

from datetime import timedelta

import pytest

from naia_memory import LocalStore, MemorySystem
from naia_memory.cognition.tokenize import KiwiTokenizer, WhitespaceTokenizer
from naia_memory.embedders.base import IMPORT_BATCH
from naia_memory.embedders.hashing import HashingEmbedder


@pytest.fixture
def unloaded_kiwi(monkeypatch):
    """The process's analyser as if never loaded (restored afterwards, loaded or not)."""
    monkeypatch.setattr(KiwiTokenizer, "_kiwi", None)


def test_warm_up_loads_the_analyser_the_first_turn_would_load(tmp_path, unloaded_kiwi):
    m = MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=HashingEmbedder(dim=64), tokenizer=KiwiTokenizer())
    try:
        assert KiwiTokenizer._kiwi is None  # an empty store opens without it
        m.warm_up()
        assert KiwiTokenizer._kiwi is not None
        assert len(m.store) == 0  # it stores nothing
    finally:
        m.close()


def test_warm_up_without_an_analyser_to_load_does_nothing(tmp_path, unloaded_kiwi):
    m = MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=HashingEmbedder(dim=64), tokenizer=WhitespaceTokenizer())
    try:
        m.warm_up()
        assert KiwiTokenizer._kiwi is None
    finally:
        m.close()


@pytest.mark.parametrize("surface", ["rest", "mcp"])
def test_servers_load_the_analyser_before_they_take_requests(tmp_path, unloaded_kiwi, monkeypatch, surface):
    seen = []
    m = MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=HashingEmbedder(dim=64), tokenizer=KiwiTokenizer())
    try:
        if surface == "rest":  # the app's startup, so a host that runs create_app's app itself gets it too
            from fastapi.testclient import TestClient

            from naia_memory.server.rest import ServerSettings, create_app

            app = create_app(m, ServerSettings(tokens={"t" * 32: None}))
            assert KiwiTokenizer._kiwi is None
            with TestClient(app):
                seen.append(KiwiTokenizer._kiwi)
        else:
            from naia_memory.server import mcp_tools

            class Server:
                def run(self, transport):
                    seen.append(KiwiTokenizer._kiwi)

            monkeypatch.setattr(mcp_tools, "build_mcp", lambda memory, project: Server())
            mcp_tools.serve_stdio(m)
        assert len(seen) == 1 and seen[0] is not None  # loaded when the server started listening
    finally:
        m.close()


class CallSizes(HashingEmbedder):
    def __init__(self):
        super().__init__(dim=64)
        self.sizes: list[int] = []

    def embed_passages(self, texts):
        self.sizes.append(len(texts))
        return super().embed_passages(texts)


def test_an_import_embeds_in_calls_of_the_import_batch(tmp_path, tokenizer, t0):
    emb = CallSizes()
    m = MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=emb, tokenizer=tokenizer)
    try:
        n = IMPORT_BATCH + 44
        m.encode_many(turns=[{"content": f"I visited museum number {i} in Lisbon", "now": t0 + timedelta(minutes=i)} for i in range(n)])
        assert emb.sizes == [IMPORT_BATCH, 44]
    finally:
        m.close()
