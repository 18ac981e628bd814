"""Temporary folders for providers created without a path (experiments):
removed when the process exits, so sweeps leave nothing behind."""
from __future__ import annotations

import atexit
import shutil
import tempfile


def scratch_dir(prefix: str) -> str:
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    return path
