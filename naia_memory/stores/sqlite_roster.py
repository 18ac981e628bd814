"""What an encrypted SQLite store holds, as a whole (sealing 3).

Each sealed field is bound to its row (sealing 2), but a field cannot say
that its row is missing, or that it is an older version of itself: one who
holds the file could delete a memory row or a log entry, put back a row (or
the entity graph) from an older copy of the file, and every part left would
still pass authentication. The roster is one sealed value beside them: how
many memory rows and log entries there are, the XOR of a keyed hash of every
memory row (its id, its sealed record and vector) and of every log entry
(its number and sealed text), and a hash of the sealed graph. XOR makes it
O(change) per commit (a row's hash out, its new one in) and the keyed hash
makes it unforgeable without the key; opening the store recomputes it from
the rows and refuses a file that does not match. What it cannot see: the
whole file put back to an older copy (roster and rows together).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

_BYTES = 32


def roster_key(id_key: bytes) -> bytes:
    """A key of its own, derived from the store's (``Sealer.id_key``)."""
    return hashlib.blake2b(b"naia-memory roster", key=id_key, digest_size=_BYTES).digest()


def _mac(key: bytes, *parts: str | bytes | int) -> int:
    h = hashlib.blake2b(key=key, digest_size=_BYTES)
    for p in parts:
        raw = p if isinstance(p, bytes) else str(p).encode("utf-8")
        h.update(len(raw).to_bytes(8, "little"))  # lengths first: no two part lists hash alike
        h.update(raw)
    return int.from_bytes(h.digest(), "little")


def memory_mark(key: bytes, rid: str, record: str, vector: bytes) -> int:
    """One memory row's hash: its id, its sealed record, its sealed vector."""
    return _mac(key, b"memory", rid, record, vector)


def log_mark(key: bytes, seq: int, entry: str) -> int:
    return _mac(key, b"log", seq, entry)


def graph_mark(sealed: str | None) -> str | None:
    return None if sealed is None else hashlib.blake2b(sealed.encode("ascii"), digest_size=_BYTES).hexdigest()


@dataclass
class Delta:
    """What one write transaction changed, folded into the roster at commit."""

    memories: int = 0
    rows: int = 0
    entries: int = 0
    log: int = 0
    graph: str | None = field(default=None)  # the new graph's mark, when the graph was written

    def __bool__(self) -> bool:
        return bool(self.memories or self.rows or self.entries or self.log or self.graph)


@dataclass(frozen=True)
class Roster:
    memories: int = 0  # memory rows
    rows: int = 0  # XOR of their marks
    entries: int = 0  # log entries
    log: int = 0  # XOR of their marks
    graph: str | None = None  # the sealed graph's mark (None: no graph written yet)

    def plus(self, d: Delta) -> "Roster":
        return Roster(self.memories + d.memories, self.rows ^ d.rows, self.entries + d.entries, self.log ^ d.log,
                      d.graph if d.graph is not None else self.graph)

    def to_text(self) -> str:
        return json.dumps({"memories": self.memories, "rows": f"{self.rows:x}", "entries": self.entries,
                           "log": f"{self.log:x}", "graph": self.graph})

    @classmethod
    def from_text(cls, text: str) -> "Roster":
        d = json.loads(text)
        return cls(int(d["memories"]), int(d["rows"], 16), int(d["entries"]), int(d["log"], 16), d.get("graph"))

    def differences(self, found: "Roster") -> list[str]:
        """What the file holds against what was last written, in words."""
        out = []
        if (self.memories, self.rows) != (found.memories, found.rows):
            out.append(f"its memory rows are not the ones last written ({found.memories} found, "
                       f"{self.memories} written): a row was removed, added or put back from an older copy")
        if (self.entries, self.log) != (found.entries, found.log):
            out.append(f"its log is not the one last written ({found.entries} entries found, {self.entries} written)")
        if self.graph != found.graph:
            out.append("its entity graph is not the one last written (put back from an older copy?)")
        return out


__all__ = ["Delta", "Roster", "graph_mark", "log_mark", "memory_mark", "roster_key"]
