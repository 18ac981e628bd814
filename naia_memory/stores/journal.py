"""An append-only change journal beside a JSON snapshot.

Why: rewriting the whole snapshot on every commit costs O(store) per encode
and per recall (issue 9 measured 1 s per encode at 5k memories). A commit now
appends one line, the records and edges that changed since the last commit,
and fsyncs it: O(change), not O(store).

One line is one commit. A line is only trusted when it is complete JSON
ending in a newline, so a crash in the middle of a write loses that commit
and nothing before it; a damaged line anywhere but the end is refused
loudly. Every line carries a sequence number and the snapshot records the
last one it contains, so replay after a crash between "snapshot renamed"
and "journal truncated" applies nothing twice.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from .atomic_files import fsync_dir
from .port import StoreError


def _durable(fd: int) -> None:
    """The line's bytes and the file's new length on disk before the commit
    returns. ``fdatasync`` (where the OS has it) skips the timestamps, which
    a reader does not need: the journal is read by length, not by time."""
    (os.fdatasync if hasattr(os, "fdatasync") else os.fsync)(fd)


@dataclass(frozen=True)
class Batch:
    seq: int
    ops: list[dict[str, Any]]


class Journal:
    def __init__(self, path: str | os.PathLike, codec: "tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]] | None" = None):
        """``codec``: (seal, open) applied to each line (an encrypted store);
        a complete line that does not open is damage and raises, never a
        torn write quietly cut off."""
        self.path = Path(path)
        self.codec = codec
        self._size = self.path.stat().st_size if self.path.exists() else 0

    @property
    def size(self) -> int:
        """Bytes of trusted journal on disk."""
        return self._size

    def read(self) -> Iterator[Batch]:
        """Every complete batch, one line at a time (a journal may grow as large
        as the snapshot before it is folded in; it is never whole in memory).
        A torn last line is cut off the file once the rest has been read, so
        read to the end before appending (the store does, or fails to open)."""
        if not self.path.exists():
            return
        good = 0
        with open(self.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            while True:
                line = f.readline()
                if not line.endswith(b"\n"):  # the end, or a torn tail: the writer died mid-line
                    break
                end = good + len(line)
                raw = line[:-1]
                if self.codec is not None:
                    raw = self.codec[1](raw)  # raises on a line that fails authentication
                try:
                    doc = json.loads(raw)
                    batch = Batch(int(doc["seq"]), list(doc["ops"]))
                except (ValueError, KeyError, TypeError) as e:
                    if end >= size:  # a damaged last line is a torn write too
                        break
                    raise StoreError(
                        f"{self.path}: line at byte {good} is damaged ({e}); the journal was left untouched") from e
                yield batch
                good = end
        if good < size:
            with open(self.path, "r+b") as f:
                f.truncate(good)
                f.flush()
                os.fsync(f.fileno())
        self._size = good

    def append(self, batch: Batch) -> int:
        """Write one batch durably; returns the bytes written."""
        line = json.dumps({"seq": batch.seq, "ops": batch.ops}, ensure_ascii=False, separators=(",", ":"))
        raw = line.encode("utf-8")
        raw = (self.codec[0](raw) if self.codec is not None else raw) + b"\n"
        try:
            fd, created = os.open(self.path, os.O_WRONLY | os.O_APPEND), False
        except FileNotFoundError:  # the first line since the last compaction
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, created = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), True
        try:
            view = memoryview(raw)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            _durable(fd)
        except BaseException:
            os.ftruncate(fd, self._size)  # leave no half line for the next append to follow
            raise
        finally:
            os.close(fd)
        if created:  # a new file's name survives a power cut once its folder is synced
            fsync_dir(self.path.parent)
        self._size += len(raw)
        return len(raw)

    def clear(self) -> None:
        """After a snapshot holds everything: drop the journal."""
        if self.path.exists():
            os.unlink(self.path)
        self._size = 0
