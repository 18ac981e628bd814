"""Files written so that a crash leaves the old one or the new one, never half of
either; and copies only their owner can read (a backup holds everything)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterable


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_chunks(path, [text.encode("utf-8")])


def atomic_write_chunks(path: Path, chunks: Iterable[bytes]) -> int:
    """Write ``chunks`` to ``path`` atomically (temp file, fsync, rename,
    fsync of the folder); returns the bytes written. The chunks are consumed
    as they are written, so a caller that produces them one record at a time
    never holds the whole file in memory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    size = 0
    try:
        with os.fdopen(fd, "wb", buffering=1 << 18) as f:
            for chunk in chunks:
                f.write(chunk)
                size += len(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)  # make the rename itself durable
    return size


def fsync_dir(folder: Path) -> None:
    """A rename into ``folder`` survives a power cut once the folder is synced."""
    try:
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:  # pragma: no cover - some filesystems refuse directory fsync
        pass


def private_copy(src: str, dest: str) -> None:
    """Copy ``src`` to ``dest`` readable by the user only (0600): a backup
    holds everything the store does."""
    import shutil

    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT
    with os.fdopen(fd, "wb") as out, open(src, "rb") as f:
        shutil.copyfileobj(f, out)
        out.flush()
        os.fsync(out.fileno())
