"""Medians from a pytest-benchmark JSON file, as ratios against the peer in
the same group: ``python -m experiments.bench_report results/bench.json``."""
from __future__ import annotations

import json
import sys
from collections import defaultdict


def table(doc: dict) -> str:
    groups: dict[str, list] = defaultdict(list)
    for b in doc["benchmarks"]:
        groups[b["group"]].append((b["name"], b["stats"]["median"], b["stats"]["rounds"]))
    lines = ["| group | function | median | rounds | ratio to peer |", "| --- | --- | --- | --- | --- |"]
    for g, rows in sorted(groups.items()):
        peer = next((m for n, m, _ in rows if "peer" in n), None)
        for name, med, rounds in sorted(rows, key=lambda r: r[1]):
            if "peer" in name:
                ratio = "peer"
            elif peer:
                ratio = f"{peer / med:.1f}x faster" if peer >= med else f"{med / peer:.1f}x slower"
            else:
                ratio = ""
            lines.append(f"| {g} | `{name}` | {med * 1e6:.1f} µs | {rounds} | {ratio} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(json.load(open(sys.argv[1] if len(sys.argv) > 1 else "results/bench.json"))))
