"""A store survives what processes do to it (issue 11): SIGKILL at random
moments of encode and consolidate (100 kills per store), and four processes
writing 200 turns each into one store. Nothing acknowledged is lost, nothing
is left corrupt."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from naia_memory import EngineConfig, LocalStore, MemorySystem
from naia_memory.embedders import HashingEmbedder
from naia_memory.stores.lock import StoreInUseError

from .conftest import naia_store

REPO = Path(__file__).resolve().parents[1]
KILLS = 100
T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
SAID = ["I planted tomatoes", "I live in Lisbon now", "I moved to Porto", "My sister is called Ana", "I work at a bakery",
        "I quit the bakery", "나는 서울에 살아", "이제 부산에 살아", "I started learning the cello", "I sold my car"]


def _child(kind: str, folder: Path, tokenizer, round_no: int, w: int) -> None:
    """Encode (and every seventh turn consolidate) until killed; each line
    written to ``w`` names something the engine has acknowledged."""
    out = os.fdopen(w, "w", buffering=1)
    try:
        m = MemorySystem(store=naia_store(kind, folder), embedder=HashingEmbedder(dim=32), tokenizer=tokenizer,
                         config=EngineConfig())
        i = 0
        while True:
            now = T0 + timedelta(minutes=round_no * 1000 + i)
            r = m.encode(content=f"{SAID[(round_no + i) % len(SAID)]} (round {round_no}, turn {i})", now=now)
            if r.stored:
                out.write(f"E {r.id}\n")
            if i % 7 == 6:
                for d in m.consolidate(now=now).decisions:
                    if d.fact_id:
                        out.write(f"F {d.fact_id}\n")
            i += 1
    except BaseException as e:  # the parent reports it: a child that fails is not a kill
        out.write(f"X {type(e).__name__}: {e}\n".replace("\n", " ") + "\n")
    finally:
        os._exit(3)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_sigkill_at_random_loses_no_acknowledged_write(kind, tmp_path, tokenizer):
    rng = random.Random(2026)
    acked: set[str] = set()
    tokenizer.tokens("warm the analyser up 분석기")  # loaded once here; each child inherits it instead of loading (1.5 s)
    for round_no in range(KILLS):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            _child(kind, tmp_path, tokenizer, round_no, w)
        os.close(w)
        time.sleep(rng.uniform(0.01, 0.25))  # open, replay, encode, consolidate, compaction: any of them
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        with os.fdopen(r) as f:
            lines = f.read().split("\n")[:-1]  # a line cut by the kill was not acknowledged
        failed = [line for line in lines if line.startswith("X ")]
        assert failed == [], failed
        acked.update(line.split(" ", 1)[1] for line in lines)
        m = MemorySystem(store=naia_store(kind, tmp_path), embedder=HashingEmbedder(dim=32), tokenizer=tokenizer)
        try:  # opens (not corrupt) and holds everything acknowledged so far
            missing = [i for i in acked if m.store.get(i) is None]
            assert missing == [], f"kill {round_no}: acknowledged but lost: {missing[:5]}"
        finally:
            m.close()
    assert len(acked) > 3 * KILLS  # the children did work before each kill


WRITER = """
import sys
from datetime import datetime, timedelta, timezone
sys.path.insert(0, {repo!r})
from naia_memory import LocalStore, MemorySystem
from naia_memory.embedders import HashingEmbedder
from naia_memory.stores.sqlite_store import SqliteStore
store = LocalStore({path!r}, wait=600) if {path!r}.endswith(".json") else SqliteStore({path!r})
m = MemorySystem(store=store, embedder=HashingEmbedder(dim=32))
t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
for i in range({n}):
    r = m.encode(content=f"writer {who} note {{i}}: I planted tomato number {{i}}", session="s{who}", now=t0 + timedelta(seconds=i))
    assert r.stored, r.reason
m.close()
"""


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_four_processes_two_hundred_turns_each_lose_nothing(kind, tmp_path):
    """JSON: one writer at a time, the others wait on the lock (``wait=``);
    SQLite: all four write at once and each sees the others' rows."""
    if kind == "sqlite":
        pytest.importorskip("apsw")
    path = str(tmp_path / ("m.json" if kind == "json" else "m.sqlite"))
    procs = [subprocess.Popen([sys.executable, "-c", WRITER.format(repo=str(REPO), path=path, n=200, who=w)], cwd=REPO,
                              stderr=subprocess.PIPE, text=True) for w in range(4)]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    store = naia_store(kind, tmp_path)
    try:
        contents = {r.content for r in store.records(None)}
    finally:
        store.close()
    assert contents == {f"writer {w} note {i}: I planted tomato number {i}" for w in range(4) for i in range(200)}


def test_a_waiting_opener_gets_the_store_when_the_holder_closes(tmp_path, tokenizer, t0):
    path = tmp_path / "m.json"
    first = LocalStore(path)
    t = time.monotonic()
    with pytest.raises(StoreInUseError, match="waited 0.2 s"):
        LocalStore(path, wait=0.2)
    assert time.monotonic() - t >= 0.2
    first.close()
    second = LocalStore(path, wait=5)
    second.close()
