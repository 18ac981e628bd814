"""Peak memory and time of opening a JSON store in a fresh process.

    python scripts/reopen_peak.py make DIR 100000   # a store of synthetic memories (the latency fill), ~3 min
    python scripts/reopen_peak.py open DIR          # run once per code version: peak RSS and seconds to open

The latency experiment times a store while it is filled; this times what a
user pays when they start their agent on a memory that already exists.
"""
from __future__ import annotations

import os
import resource
import sys
import time

sys.path.insert(0, os.getcwd())


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("make", "open") or (argv[0] == "make" and len(argv) < 3):
        print(__doc__)
        return 2
    path = os.path.join(argv[1], "m.json")
    if argv[0] == "make":
        from experiments.tasks.latency import _fill, synthetic_memories, warmed
        from naia_memory.embedders import make_embedder
        from naia_memory.providers import create_provider

        texts = synthetic_memories(int(argv[2]))
        p = create_provider("naia-local", path=path, embedder=warmed(make_embedder("hashing", dim=384), texts, []))
        _fill(p, texts, "bulk")
        p.close()
        print(f"{path}: {os.path.getsize(path) / 1e6:.0f} MB")
        return 0
    from naia_memory.stores.json_store import LocalStore

    t = time.perf_counter()
    store = LocalStore(path)
    took = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"opened {len(store)} records in {took:.1f} s; peak RSS {peak:.0f} MiB")
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
