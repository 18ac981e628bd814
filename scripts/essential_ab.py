"""A/B of ``BM25Index._essential`` (session 34) in one process: the BM25
lookup behind encode's surprise score, and encode end to end, with the
common-word path on and off, alternated so a shared machine's drift falls
on both alike. The text is the latency experiment's fill.

    python scripts/essential_ab.py lookup 100000   # ~1 min: index only, 300 of the fill's turns, answers compared
    python scripts/essential_ab.py encode 100000   # ~5 min: naia-local filled in bulk, 320 encodes each way
"""
from __future__ import annotations

import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.tasks.latency import T0, _fill, provider_kwargs, synthetic_memories, warmed  # noqa: E402
from naia_memory.cognition.bm25 import BM25Index  # noqa: E402

_ON = BM25Index._essential


def switch(on: bool) -> None:
    BM25Index._essential = _ON if on else (lambda self, *a: None)


def lookup(n: int) -> None:
    from naia_memory.cognition.tokenize import KiwiTokenizer

    tok = KiwiTokenizer()
    toks = [tok.tokens(x) for x in synthetic_memories(n + 300)]
    idx = BM25Index()
    for i, ts in enumerate(toks[:n]):
        idx.add(f"m{i}", ts)
    queries = toks[n:]
    for rnd in range(4):
        got, p50 = {}, {}
        for on in ((False, True) if rnd % 2 == 0 else (True, False)):
            switch(on)
            lat, out = [], []
            for q in queries:
                t = time.perf_counter()
                out.append(idx.ranked(q, lambda _d: True, 5))
                lat.append((time.perf_counter() - t) * 1e3)
            got[on], p50[on] = out, float(np.percentile(lat, 50))
        print(f"round {rnd}: dense p50 {p50[False]:.3f} ms, essential p50 {p50[True]:.3f} ms, same answers: {got[True] == got[False]}")
    switch(True)


def encode(n: int) -> None:
    from naia_memory.embedders import make_embedder
    from naia_memory.providers import create_provider

    texts = synthetic_memories(n + 700)
    emb = warmed(make_embedder("hashing", dim=384), texts)
    p = create_provider("naia-local", **provider_kwargs("naia-local", Path(tempfile.mkdtemp(prefix="essential-ab-")), emb, "bulk"))
    _fill(p, texts[:n], "bulk")
    res: dict[bool, list[float]] = {True: [], False: []}
    i = n
    for rnd in range(8):
        for on in ((False, True) if rnd % 2 == 0 else (True, False)):
            switch(on)
            for _ in range(40):
                t = time.perf_counter()
                p.encode(content=texts[i], now=T0 + timedelta(seconds=i))
                res[on].append((time.perf_counter() - t) * 1e3)
                i += 1
    switch(True)
    p.close()
    for on in (False, True):
        print(f"{'essential' if on else 'dense'}: encode p50 {np.percentile(res[on], 50):.3f} ms, p95 {np.percentile(res[on], 95):.3f} ms")


if __name__ == "__main__":
    {"lookup": lookup, "encode": encode}[sys.argv[1]](int(sys.argv[2]))
