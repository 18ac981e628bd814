"""One writer per store file.

Two processes that each load the JSON store, change it and commit would each
write their own view and silently drop the other's changes. An exclusive
advisory lock on ``<store>.lock`` makes the second opener fail with a clear
error instead. A SQLite file is shared by many processes, each holding the
lock shared while it has the file open, so that an import (exclusive) never
replaces the file under one of them. POSIX only (``fcntl``); elsewhere the
lock is a no-op and the README says so.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from .port import StoreError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class StoreInUseError(StoreError):
    pass


class FileLock:
    def __init__(self, store_path: str | os.PathLike):
        # beside the file itself: two openers through different links (or a link and the file) take one lock
        self.path = Path(f"{os.path.realpath(os.path.expanduser(store_path))}.lock")
        self._fd: int | None = None

    def acquire(self, wait: float = 0.0, *, shared: bool = False) -> None:
        """``wait``: seconds to wait for another holder to close the store
        before giving up (0: fail at once). ``shared``: held beside other
        shared holders (the processes that share a SQLite file), never beside
        an exclusive one (an import replacing that file)."""
        if fcntl is None or self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as e:  # a read-only folder: say which file, not a bare permission error
            raise StoreError(f"cannot open the store's lock file {self.path}: {e.strerror or e}") from e
        deadline = time.monotonic() + max(0.0, wait)
        while True:
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.02)
                    continue
                os.close(fd)
                waited = f" (waited {wait:g} s)" if wait > 0 else ""
                if shared:
                    raise StoreInUseError(f"{self.path.with_suffix('')} is being replaced (an import){waited}; "
                                          "open it again once that is done") from None
                raise StoreInUseError(
                    f"{self.path.with_suffix('')} is open in another MemorySystem or process{waited}; "
                    "close it there first, or open with wait= (one writer per store keeps either side from losing "
                    "the other's changes)"
                ) from None
        if not shared:  # (shared holders are many: none writes its pid)
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def __del__(self) -> None:  # a store dropped without close() must not keep its file locked
        try:
            self.release()
        except Exception:
            pass
