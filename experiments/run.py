"""Hydra entry point: ``python -m experiments.run +adapter=naia-local``.

Composes adapter x dataset x experiment, runs the experiment, prints its
headline numbers and writes a result record under ``results/``.
"""
from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any, Callable

import hydra
from omegaconf import DictConfig, OmegaConf

from naia_memory.contract import MemoryProvider, capabilities_of
from naia_memory.providers import create_provider

from . import results as res

log = logging.getLogger("experiments.run")
REPO = Path(__file__).resolve().parents[1]


class ConfigError(ValueError):
    pass


def provider_factory(adapter: dict[str, Any]) -> Callable[[], MemoryProvider]:
    name = adapter["provider"]
    kwargs = {k: v for k, v in adapter.items() if k not in ("name", "provider")}
    if name.startswith("naia"):
        kwargs.setdefault("path", None)  # a fresh in-memory store per conversation
    return lambda: create_provider(name, **kwargs)


def load_conversations(ds: dict[str, Any]):
    if ds["kind"] == "aihub141-synthetic":
        from datasets_loaders.aihub141_synthetic import synthetic_conversations

        return list(synthetic_conversations(int(ds["n"]), int(ds["level"]), int(ds["seed"])))
    if ds["kind"] == "aihub141":
        from datasets_loaders.aihub141 import load_aihub141

        path = Path(ds["path"]).expanduser()
        if not path.exists():
            raise ConfigError(f"dataset.path={path} does not exist; download AI Hub 141 and point dataset.path at it")
        return list(load_aihub141(path, level=ds.get("level"), split=ds.get("split"), limit=ds.get("limit")))
    raise ConfigError(f"unknown dataset kind {ds['kind']!r}")


def run(cfg: DictConfig) -> dict[str, Any]:
    if "adapter" not in cfg:
        raise ConfigError("choose a provider: python -m experiments.run +adapter=naia-local (or none)")
    resolved = OmegaConf.to_container(cfg, resolve=True)
    adapter, ds, exp = resolved["adapter"], resolved["dataset"], resolved["experiment"]
    ident_cfg = {k: resolved[k] for k in ("adapter", "dataset", "experiment", "match_embedder")}
    ident = res.Identity(adapter["name"], ds["name"], exp["name"], res.config_hash(ident_cfg), int(resolved["seed"]))
    root = (REPO / resolved["results_dir"]).resolve() if not Path(resolved["results_dir"]).is_absolute() else Path(resolved["results_dir"])
    out_path = ident.path(root)
    if out_path.exists() and resolved["on_existing"] == "skip":
        print(f"[skip] {out_path} exists (on_existing=skip)")
        return {"skipped": str(out_path)}

    from naia_memory.embedders import make_embedder

    from .calibration import calibrate
    from .tasks.aihub141 import run_aihub141

    t0 = time.perf_counter()
    convs = load_conversations(ds)
    match_embedder = make_embedder(resolved["match_embedder"])
    cal = calibrate(match_embedder)
    factory = provider_factory(adapter)
    probe = factory()
    caps = capabilities_of(probe)
    probe.close()
    bar = None
    if resolved.get("progress", True):
        from tqdm import tqdm

        bar = tqdm(total=len(convs), desc=f"{adapter['name']} x {ds['name']}", unit="conv", file=sys.stderr)
    out = run_aihub141(factory, convs, top_ks=exp["top_ks"], match_embedder=match_embedder, threshold=cal.threshold,
                       progress=bar.update if bar else None)
    if bar:
        bar.close()
    out["timings"]["total_s"] = time.perf_counter() - t0
    record = {
        "metrics": out["metrics"], "calibration": cal.__dict__, "capabilities": caps, "config": resolved,
        "git": res.git_hash(REPO), "versions": res.package_versions(), "timings": out["timings"],
        "per_query": out["queries"],
    }
    path = res.write_record(root, ident, record)
    print_summary(ident, out["metrics"], cal, exp["top_ks"], path)
    return record


def print_summary(ident: res.Identity, m: dict[str, Any], cal, top_ks, path: Path) -> None:
    print(f"\n{ident.experiment} | provider={ident.provider} dataset={ident.dataset} "
          f"queries={m['n_queries']} gold facts={m['n_gold']}")
    print(f"embedding matcher: {cal.embedder} threshold={cal.threshold} (calibrated, accuracy {cal.accuracy:.2f} "
          f"on labelled pairs; paraphrase mean {cal.paraphrase_mean}, unrelated mean {cal.unrelated_mean})")
    header = "matcher     " + "".join(f"  R@{k:<5} P@{k:<5}" for k in top_ks)
    print(header)
    for name in ("keyword", "polarity", "hard", "embedding"):
        row = f"{name:<12}" + "".join(f"  {m[f'{name}/recall@{k}']:.3f}  {m[f'{name}/precision@{k}']:.3f} " for k in top_ks)
        print(row)
    print(f"result: {path}")


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    try:
        run(cfg)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
