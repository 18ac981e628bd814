"""Encode p50 on a local-mode Qdrant store at 1k memories (the undo record's cost: run it, then with
naia_memory/stores/qdrant_store.py from before session 36, and compare).

    python scripts/qdrant_commit_cost.py now
"""
import tempfile, time, statistics, sys
from datetime import datetime, timedelta, timezone
from naia_memory import MemorySystem
from naia_memory.embedders import HashingEmbedder
from naia_memory.stores.qdrant_store import QdrantStore
from naia_memory.cognition.tokenize import KiwiTokenizer
tok = KiwiTokenizer(); t0 = datetime(2026,1,1,tzinfo=timezone.utc)
m = MemorySystem(store=QdrantStore(path=tempfile.mkdtemp()), embedder=HashingEmbedder(dim=384), tokenizer=tok)
m.encode_many(turns=[{"content": f"turn {i} about the garden and Lisbon {i*7}", "now": t0 + timedelta(seconds=i)} for i in range(1000)])
ts = []
for i in range(60):
    a = time.perf_counter(); m.encode(content=f"new turn {i} about tea and Porto {i}", now=t0 + timedelta(days=1, seconds=i)); ts.append(time.perf_counter()-a)
print(sys.argv[1], "encode p50 %.2f ms at 1k" % (statistics.median(ts)*1e3))
m.close()
