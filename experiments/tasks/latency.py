"""Latency and scale: every provider side by side, each size in its own process.

For each (provider, memory count) a worker process fills a fresh on-disk
store with that many synthetic memories through the public ``encode`` (the
encode throughput), then times ``n_queries`` recalls (p50/p95; the engine's
own split into query embedding and search where the provider reports it),
and reports its peak RSS and the bytes on disk per memory. A separate timing
of the configured query embedder shows what a real query pays to embed, so
filling with a cheap embedder of the same dimension does not hide it.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

SUBJECTS_KO = ["나는", "내 친구는", "우리 팀은", "동생은", "엄마는", "사장님은", "옆집 사람은", "동료는"]
PLACES_KO = ["서울", "부산", "카페", "회사", "도서관", "공원", "제주도", "헬스장", "시장", "학교"]
ACTS_KO = ["커피를 마셨다", "책을 읽었다", "회의를 했다", "운동을 했다", "점심을 먹었다", "사진을 찍었다", "산책을 했다", "친구를 만났다"]
SUBJECTS_EN = ["I", "My sister", "Our team", "My neighbour", "The manager", "My friend", "Dad", "A colleague"]
PLACES_EN = ["Berlin", "the office", "a cafe", "the library", "the park", "Tokyo", "the gym", "the market", "school", "Paris"]
ACTS_EN = ["had coffee", "read a novel", "held a meeting", "went running", "ate lunch", "took photos", "went for a walk", "met a friend"]
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def synthetic_memories(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if i % 2 == 0:
            out.append(f"{rng.choice(SUBJECTS_KO)} {rng.choice(PLACES_KO)}에서 {rng.choice(ACTS_KO)} #{i}")
        else:
            out.append(f"{rng.choice(SUBJECTS_EN)} {rng.choice(ACTS_EN)} in {rng.choice(PLACES_EN)} on day {i}")
    return out


def queries(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(PLACES_KO)}에서 뭐 했어?" if i % 2 == 0 else f"What happened in {rng.choice(PLACES_EN)}?" for i in range(n)]


def provider_kwargs(name: str, workdir: Path, fill_embedder: dict[str, Any]) -> dict[str, Any]:
    if name == "naia-local":
        return {"path": str(workdir / "naia.json"), "embedder": dict(fill_embedder), "engine": {"gate": False}, "autosave": False}
    if name in ("sqlite", "sqlite-vec"):
        return {"path": str(workdir / "naia.sqlite"), "embedder": dict(fill_embedder), "engine": {"gate": False}}
    if name == "lite":
        return {"path": str(workdir / "lite.sqlite"), "embedder": dict(fill_embedder)}
    if name == "qdrant":
        return {"path": str(workdir / "qdrant"), "embedder": dict(fill_embedder), "engine": {"gate": False}}
    if name == "mem0":
        return {"workdir": str(workdir), "embedder": dict(fill_embedder)}
    if name == "letta":
        return {"base_url": os.environ.get("NAIA_LETTA_URL", "http://127.0.0.1:8283"), "embedder": dict(fill_embedder)}
    return {}


def worker(provider: str, n: int, n_queries: int, fill_embedder: dict[str, Any]) -> dict[str, Any]:
    from naia_memory.providers import create_provider

    workdir = Path(tempfile.mkdtemp(prefix=f"naia-latency-{provider}-"))
    try:
        p = create_provider(provider, **provider_kwargs(provider, workdir, fill_embedder))
        texts = synthetic_memories(n)
        t = time.perf_counter()
        for i, text in enumerate(texts):
            p.encode(content=text, now=T0 + timedelta(seconds=i))
        commit = getattr(getattr(p, "store", None), "commit", None)
        if commit:
            commit()  # a bulk fill writes once at the end
        encode_s = time.perf_counter() - t
        lat, emb, search = [], [], []
        now = T0 + timedelta(seconds=n + 1)
        for q in queries(n_queries):
            t = time.perf_counter()
            r = p.recall(query=q, top_k=10, now=now)
            lat.append((time.perf_counter() - t) * 1e3)
            if "embed_query_ms" in r.timings_ms:
                emb.append(r.timings_ms["embed_query_ms"])
            if "search_ms" in r.timings_ms:
                search.append(r.timings_ms["search_ms"])
        p.close()
        disk = sum(f.stat().st_size for f in workdir.rglob("*") if f.is_file())
        return {
            "provider": provider, "n": n, "encode_per_s": n / encode_s if encode_s > 0 else float("inf"),
            "recall_p50_ms": float(np.percentile(lat, 50)), "recall_p95_ms": float(np.percentile(lat, 95)),
            "embed_p50_ms": float(np.percentile(emb, 50)) if emb else None,
            "search_p50_ms": float(np.percentile(search, 50)) if search else None,
            "search_p95_ms": float(np.percentile(search, 95)) if search else None,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
            "disk_bytes_per_memory": disk / n if disk else None,
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def query_embedding_cost(kind: str, n: int) -> dict[str, Any]:
    from naia_memory.embedders import make_embedder

    e = make_embedder(kind)
    e.embed_query("warm up")
    ts = []
    for q in queries(n):
        t = time.perf_counter()
        e.embed_query(q)
        ts.append((time.perf_counter() - t) * 1e3)
    return {"embedder": e.name, "p50_ms": float(np.percentile(ts, 50)), "p95_ms": float(np.percentile(ts, 95))}


def run_latency(resolved: dict[str, Any], progress_bar: Callable[[int, str], Any] | None = None) -> dict[str, Any]:
    exp = resolved["experiment"]
    providers = exp.get("providers") or [resolved["adapter"]["provider"]]
    sizes = [int(s) for s in exp["sizes"]]
    rows = []
    bar = progress_bar(len(providers) * len(sizes), "latency") if progress_bar else None
    repo = Path(__file__).resolve().parents[2]
    caps = exp.get("max_n") or {}
    for n in sizes:
        for prov in providers:
            if n > int(caps.get(prov, n)):
                rows.append({"provider": prov, "n": n, "error": f"skipped: above max_n {caps[prov]} for {prov} in this config"})
                if bar:
                    bar.update(1)
                continue
            cmd = [sys.executable, "-m", "experiments.tasks.latency", "--provider", prov, "--n", str(n),
                   "--queries", str(exp["n_queries"]), "--fill-embedder", json.dumps(exp["fill_embedder"])]
            try:
                out = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=exp.get("timeout_s", 3600),
                                     env={**os.environ, "PYTHONPATH": str(repo)})
                if out.returncode != 0:
                    rows.append({"provider": prov, "n": n, "error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"})
                else:
                    rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            except subprocess.TimeoutExpired:
                rows.append({"provider": prov, "n": n, "error": f"timed out after {exp.get('timeout_s')} s"})
            if bar:
                bar.update(1)
    if bar:
        bar.close()
    qe = query_embedding_cost(exp["query_embedder"], exp["n_queries"])
    return {"metrics": {"rows": rows, "query_embedding": qe, "fill_embedder": exp["fill_embedder"]}, "timings": {}}


def main() -> None:
    ap = argparse.ArgumentParser(description="one latency worker (run by experiment=latency)")
    ap.add_argument("--provider", required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--fill-embedder", default='{"kind": "hashing", "dim": 384}')
    a = ap.parse_args()
    print(json.dumps(worker(a.provider, a.n, a.queries, json.loads(a.fill_embedder))))


if __name__ == "__main__":
    main()
