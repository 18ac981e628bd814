"""Open time of an encrypted SQLite store at 10k memories, and the roster's share (its marks over every row).

    python scripts/sealed_open_cost.py     # ~1 min; synthetic records, 384-d random vectors
"""
import tempfile, time, statistics
from datetime import datetime, timezone
from pathlib import Path
import numpy as np
from naia_memory.records import MemoryRecord
from naia_memory.contract import MemoryKind
from naia_memory.stores.sqlite_store import SqliteStore
from naia_memory.stores.sqlite_roster import memory_mark, roster_key
d = Path(tempfile.mkdtemp()); p = d / "m.sqlite"; PASS = "correct horse battery staple"
s = SqliteStore(p, passphrase=PASS); s.bind_embedder("h", 384)
rng = np.random.default_rng(0); t = datetime(2026, 1, 1, tzinfo=timezone.utc)
for i in range(10000):
    text = f"turn {i} about the garden, the bakery and a trip to Lisbon number {i * 7}"
    r = MemoryRecord(id=f"ep_{i:016x}", kind=MemoryKind.EPISODE, content=text, created_at=t, updated_at=t, last_accessed=t,
                     tokens=text.lower().split())
    s.put(r, rng.standard_normal(384).astype(np.float32))
s.commit(); s.close()
opens = []
for _ in range(3):
    a = time.perf_counter(); s = SqliteStore(p, passphrase=PASS); opens.append(time.perf_counter() - a); s.close()
s = SqliteStore(p, passphrase=PASS); key = roster_key(s._sealer.id_key)
rows = list(s.db.execute("SELECT id, record, embedding FROM memories"))
a = time.perf_counter()
for rid, rec, vec in rows:
    memory_mark(key, rid, rec, vec)
marks = time.perf_counter() - a
s.close()
print(f"open p50 {statistics.median(opens)*1e3:.0f} ms at 10k encrypted; the roster's marks {marks*1e3:.0f} ms ({marks/statistics.median(opens):.0%})")
