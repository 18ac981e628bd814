"""A/B of ``BM25Index._essential`` (session 34) in one process: the BM25
lookup behind encode's surprise score, and encode end to end, with the
common-word path on and off, alternated so a shared machine's drift falls
on both alike. The text is the latency experiment's fill.

    python scripts/essential_ab.py lookup 100000   # ~1 min: index only, 300 of the fill's turns, answers compared
    python scripts/essential_ab.py encode 100000   # ~5 min: naia-local filled in bulk, 320 encodes each way
    python scripts/essential_ab.py append 100000   # ~5 min: session 35's journal append and number stems, old and new

``append`` alternates session 35's two small changes to a commit and a
tokenization with what they replaced: the journal's folder made and the
file opened for creation on every append, fsync rather than fdatasync, and
every number run through the stemmer and its memo.
"""
from __future__ import annotations

import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Callable

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


def _encode_ab(n: int, use: Callable[[bool], None], names: tuple[str, str]) -> None:
    """naia-local filled in bulk with ``n`` of the fill's turns, then 320
    encodes each way, ``use(False)`` / ``use(True)`` alternated in blocks of 40."""
    from naia_memory.embedders import make_embedder
    from naia_memory.providers import create_provider

    texts = synthetic_memories(n + 700)
    emb = warmed(make_embedder("hashing", dim=384), texts)
    p = create_provider("naia-local", **provider_kwargs("naia-local", Path(tempfile.mkdtemp(prefix="encode-ab-")), emb, "bulk"))
    _fill(p, texts[:n], "bulk")
    res: dict[bool, list[float]] = {True: [], False: []}
    i = n
    for rnd in range(8):
        for on in ((False, True) if rnd % 2 == 0 else (True, False)):
            use(on)
            for _ in range(40):
                t = time.perf_counter()
                p.encode(content=texts[i], now=T0 + timedelta(seconds=i))
                res[on].append((time.perf_counter() - t) * 1e3)
                i += 1
    use(True)
    p.close()
    for on in (False, True):
        print(f"{names[on]}: encode p50 {np.percentile(res[on], 50):.3f} ms, p95 {np.percentile(res[on], 95):.3f} ms")


def encode(n: int) -> None:
    _encode_ab(n, switch, ("dense", "essential"))


def _old_append(self, batch):  # the journal append before session 35
    import json
    import os

    line = json.dumps({"seq": batch.seq, "ops": batch.ops}, ensure_ascii=False, separators=(",", ":"))
    raw = line.encode("utf-8")
    raw = (self.codec[0](raw) if self.codec is not None else raw) + b"\n"
    self.path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        view = memoryview(raw)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    self._size += len(raw)
    return len(raw)


def append(n: int) -> None:
    from naia_memory.cognition import tokenize
    from naia_memory.stores.journal import Journal

    new_append, new_stem = Journal.append, tokenize.stem_en

    def old_stem(word: str) -> str:
        return tokenize._stem(word)

    def use(on: bool) -> None:
        Journal.append = new_append if on else _old_append
        tokenize.stem_en = new_stem if on else old_stem

    _encode_ab(n, use, ("before", "session 35"))


if __name__ == "__main__":
    {"lookup": lookup, "encode": encode, "append": append}[sys.argv[1]](int(sys.argv[2]))
