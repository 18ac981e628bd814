"""Hydra entry point: ``python -m experiments.run +adapter=naia-local``.

Composes adapter x dataset x experiment, runs it, prints the headline numbers
and writes a result record under ``results/`` keyed by identity.
Experiments: aihub141 (default), locomo, contradiction, lifecycle, ablation,
latency.
"""
from __future__ import annotations

import inspect
import logging
import sys
import time
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable, Iterator

import hydra
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from naia_memory.config import EngineConfig
from naia_memory.contract import MemoryProvider, capabilities_of
from naia_memory.providers import create_provider

from . import results as res
from .embed_cache import CachedEmbedder
from .frame import _adapter_defaults, _diff, engine_defaults

REPO = Path(__file__).resolve().parents[1]


ConfigStore.instance().store(group="engine", name="defaults", node=engine_defaults())


def without_secrets(resolved: dict[str, Any]) -> dict[str, Any]:
    """The config as recorded: a model's API key given inline is not written
    into a results file nor into the run's name (``adapter.llm.api_key_env``
    keeps it out of the command line too)."""
    llm = (resolved.get("adapter") or {}).get("llm")
    if not isinstance(llm, dict) or not llm.get("api_key"):
        return resolved
    return {**resolved, "adapter": {**resolved["adapter"], "llm": {**llm, "api_key": "(not recorded)"}}}


def identity_config(resolved: dict[str, Any]) -> dict[str, Any]:
    """What names a run: the adapter with the engine settings its own file sets
    and those that differ from the defaults (what the config held before the
    schema spelled every default out, so file names do not move), the
    dataset, the experiment, the matcher; ``read_only=false`` when asked."""
    adapter = dict(without_secrets(resolved)["adapter"])
    if isinstance(adapter.get("engine"), dict):
        own = dict(_adapter_defaults(str(adapter.get("name")))).get("engine") or {}
        diff = _diff(adapter["engine"], engine_defaults())
        adapter["engine"] = {**{k: adapter["engine"][k] for k in own if k in adapter["engine"]}, **diff}
    ident = {"adapter": adapter, **{k: resolved[k] for k in ("dataset", "experiment", "match_embedder")}}
    if resolved.get("read_only") is False:  # another measurement: never the same record as the default
        ident["read_only"] = False
    return ident


class ConfigError(ValueError):
    pass


def check_run_settings(resolved: dict[str, Any]) -> None:
    """Settings a typo would otherwise turn into another run than asked for,
    refused before anything is measured or written."""
    if resolved.get("on_existing") not in ("overwrite", "skip"):  # "skpi" overwrote as "overwrite" does
        raise ConfigError(f"on_existing: overwrite or skip, not {resolved.get('on_existing')!r}")
    if not isinstance(resolved.get("read_only", True), bool):  # 0 / null strengthened under the default's name
        raise ConfigError(f"read_only: true or false, not {resolved.get('read_only')!r}")
    ds_seed = (resolved.get("dataset") or {}).get("seed")
    if ds_seed is not None and ds_seed != resolved.get("seed"):  # the record is named by seed=
        raise ConfigError(f"set seed={ds_seed} (it names the record), not dataset.seed")
    check_dataset_keys(resolved.get("dataset") or {})


# settings a dataset reads that its config file does not write (``+dataset.only=en-0004``)
DATASET_EXTRAS = {"natural-updates": ("only",), "natural-statements": ("only",), "natural-lifecycle": ("only",)}


def check_dataset_keys(ds: dict[str, Any]) -> None:
    """A ``+dataset.KEY`` no loader reads ("+dataset.splt=test") ran the
    default data under a new record name, as if the setting had been used;
    refused, naming the settings of that kind of data."""
    from .frame import _dataset_defaults

    written = {k for k, _ in _dataset_defaults(str(ds.get("kind")))}
    if not written:
        return  # a kind no config writes: load_data says so
    allowed = {"name", "kind", "path", *written, *DATASET_EXTRAS.get(str(ds.get("kind")), ())}
    unknown = sorted(set(ds) - allowed)
    if unknown:
        raise ConfigError(f"dataset.{unknown[0]}: not a setting of {ds.get('kind')} data "
                          f"(its settings: {', '.join(sorted(allowed - {'name', 'kind'}))})")


class ReadOnlyQuestions:
    """A provider whose recalls strengthen nothing (``strengthen=False`` where
    the provider takes it). A benchmark asks many questions of one memory;
    when each recall strengthens what it returns, a later question's answer
    depends on which questions came before it. The order effect is measured
    on its own (``read_only=false``, README "How each peer is run")."""

    def __init__(self, inner: Any):
        self._inner = inner
        self._takes = "strengthen" in inspect.signature(inner.recall).parameters

    def recall(self, **kw: Any) -> Any:
        return self._inner.recall(**kw, **({"strengthen": False} if self._takes else {}))

    def recall_many(self, *, queries: Any, **kw: Any) -> Any:
        many = self._inner.recall_many
        if "strengthen" in inspect.signature(many).parameters:
            return many(queries=queries, **kw, strengthen=False)
        if self._takes:  # a batch path that would strengthen: ask one by one, read-only
            return [self.recall(query=q, **kw) for q in queries]
        return many(queries=queries, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def provider_factory(adapter: dict[str, Any], engine_overrides: dict[str, Any] | None = None,
                     embedder: Any | None = None, read_only: bool = False) -> Callable[[], MemoryProvider]:
    """A zero-argument factory for fresh providers of ``adapter``; ``embedder``
    (an instance) replaces the adapter's embedder spec, so callers can share one;
    ``read_only``: their recalls strengthen nothing (``ReadOnlyQuestions``)."""
    name = adapter["provider"]
    kwargs = {k: v for k, v in adapter.items() if k not in ("name", "provider", "fresh_path")}
    if engine_overrides:
        kwargs["engine"] = {**(kwargs.get("engine") or {}), **engine_overrides}
    if embedder is not None:
        kwargs["embedder"] = embedder
    if adapter.get("fresh_path", False) or name in ("naia-local",):
        kwargs.setdefault("path", None)  # a fresh (in-memory or temporary) store per conversation
    if read_only:
        return lambda: ReadOnlyQuestions(create_provider(name, **kwargs))
    return lambda: create_provider(name, **kwargs)


def provider_capabilities(p: Any) -> dict[str, bool]:
    """What the provider can do, not its read-only wrapper (which has a
    ``recall_many`` of its own)."""
    return capabilities_of(p._inner if isinstance(p, ReadOnlyQuestions) else p)


QUESTION_EXPERIMENTS = ("aihub141", "locomo", "lifecycle")  # latency keeps what users get: recall that strengthens


def asks_read_only(resolved: dict[str, Any], experiment: str) -> bool:
    return bool(resolved.get("read_only", True)) and experiment in QUESTION_EXPERIMENTS


def _repo_path(p: str) -> Path:
    path = Path(p).expanduser()
    return path if path.is_absolute() else (REPO / path).resolve()


def load_data(ds: dict[str, Any]) -> list:
    kind = ds["kind"]
    if kind == "aihub141-synthetic":
        from datasets_loaders.aihub141_synthetic import synthetic_conversations

        return list(synthetic_conversations(int(ds["n"]), int(ds["level"]), int(ds["seed"])))
    if kind == "aihub141":
        from datasets_loaders.aihub141 import load_aihub141

        path = _repo_path(ds["path"])
        if not path.exists():
            raise ConfigError(f"dataset.path={path} does not exist; download AI Hub 141 and point dataset.path at it")
        return list(load_aihub141(path, level=ds.get("level"), split=ds.get("split"), limit=ds.get("limit")))
    if kind == "locomo":
        from datasets_loaders.locomo import load_locomo

        if ds.get("max_sessions") is not None and (isinstance(ds["max_sessions"], bool) or not isinstance(ds["max_sessions"], int)
                                                   or ds["max_sessions"] < 1):
            raise ConfigError(f"dataset.max_sessions: a whole number >= 1, not {ds['max_sessions']!r}")

        path = _repo_path(ds["path"])
        if not path.exists():
            raise ConfigError(f"dataset.path={path} does not exist; point it at locomo10.json")
        samples, report = load_locomo(path, limit=ds.get("limit"), sample_ids=ds.get("sample_ids"))
        if ds.get("max_sessions"):
            from dataclasses import replace

            keep = int(ds["max_sessions"])
            samples = [replace(s, sessions=s.sessions[:keep],
                               qa=tuple(q for q in s.qa if q.evidence and all(int(e[1:].split(":")[0]) <= s.sessions[:keep][-1].n
                                                                              for e in q.evidence)))  # fewer sessions than keep: all
                       for s in samples]
        print(f"[locomo] {report.samples} samples, {report.turns} turns, {report.questions} questions; "
              f"{report.empty_evidence} without evidence, {len(report.unparseable_ids)} unparseable ids, "
              f"{len(report.missing_turn_ids)} ids of missing turns, {len(report.dates_without_session)} dates without a session",
              file=sys.stderr)
        return samples
    if kind == "contradiction-suite":
        from .suites.contradiction_suite import HELD_OUT, all_cases

        parts = {"main": all_cases, "held-out": lambda: list(HELD_OUT), "all": lambda: all_cases() + list(HELD_OUT)}
        split = ds.get("split", "main")
        if split not in parts:
            raise ConfigError(f"dataset.split for the contradiction suite: one of {sorted(parts)}, not {split!r}")
        return parts[split]()
    if kind in ("natural-updates", "natural-statements", "natural-lifecycle"):
        from .suites import natural

        loader = {"natural-updates": natural.update_cases, "natural-statements": natural.statements,
                  "natural-lifecycle": natural.lifecycle_scripts}[kind]
        try:
            items = loader(ds.get("split", "dev"), ds.get("batch", "all"))
        except ValueError as e:
            raise ConfigError(str(e)) from None
        pad = int(ds.get("pad", 0) or 0)
        if pad < 0 or pad and kind != "natural-updates":
            raise ConfigError("dataset.pad (facts told before each case) is for natural-updates, and >= 0")
        items = natural.padded(items, pad) if pad else items
        only = ds.get("only")  # some cases again, by id (a model run on a handful, a case being read)
        if isinstance(only, (str, int)):  # +dataset.only=en-0004
            only = [only]
        if only:
            key = {"natural-updates": "case_id", "natural-statements": "id", "natural-lifecycle": "script_id"}[kind]
            wanted = set(map(str, only))
            unknown = sorted(wanted - {getattr(i, key) for i in items})
            if unknown:
                raise ConfigError(f"dataset.only: no such {kind} items in split {ds.get('split', 'dev')}: {unknown}")
            items = [i for i in items if getattr(i, key) in wanted]
        return items
    if kind == "lifecycle-scripts":
        from .suites.lifecycle_scripts import SCRIPTS

        return list(SCRIPTS)
    raise ConfigError(f"unknown dataset kind {kind!r}")


# what each experiment reads: another kind of data failed deep inside the task (an AttributeError)
EXPERIMENT_KINDS = {"aihub141": ("aihub141-synthetic", "aihub141"), "locomo": ("locomo",),
                    "contradiction": ("contradiction-suite", "natural-updates"), "extraction": ("natural-statements",),
                    "lifecycle": ("lifecycle-scripts", "natural-lifecycle")}


def check_kind(experiment: str, ds: dict[str, Any]) -> None:
    kinds = EXPERIMENT_KINDS.get(experiment)
    if kinds is not None and ds.get("kind") not in kinds:
        raise ConfigError(f"experiment {experiment} reads {' or '.join(kinds)} data, not {ds.get('kind')!r} "
                          f"(dataset={ds.get('name')}); pick a dataset of that kind")


def load_nonempty(ds: dict[str, Any]) -> Any:
    """``load_data``, refusing a dataset that came out empty (``dataset.n=0``):
    every rate of it is undefined, and a record of zeros is not a result."""
    data = load_data(ds)
    if not data:
        raise ConfigError(f"dataset {ds.get('name')!r} has no items with these settings")
    return data


def _context(resolved: dict[str, Any], exp_name: str) -> dict[str, Any]:
    if exp_name != "aihub141":
        return {}
    from naia_memory.embedders import make_embedder

    from .calibration import calibrate

    emb = make_embedder(resolved["match_embedder"])
    cal = calibrate(emb)
    return {"match_embedder": emb, "threshold": cal.threshold, "calibration": cal.__dict__}


@contextmanager
def _bar(resolved: dict[str, Any], total: int, desc: str) -> Iterator[Any]:
    """A progress bar on stderr (None with ``progress=false``), closed however
    the run ends: a task that raised left its bar open over the traceback."""
    if not resolved.get("progress", True):
        yield None
        return
    from tqdm import tqdm

    bar = tqdm(total=total, desc=desc, unit="item", file=sys.stderr)
    try:
        yield bar
    finally:
        bar.close()


PEER_LOGGERS = ("mem0", "httpx", "httpx2", "httpcore", "openai", "letta_client", "urllib3", "faiss")  # httpx2: what mem0 2.x logs requests with


def quiet_peers(level: str) -> None:
    """Peers log every HTTP request at INFO under Hydra's logging; keep them at ``level``."""
    for name in PEER_LOGGERS:
        logging.getLogger(name).setLevel(level)


def run(cfg: DictConfig) -> dict[str, Any]:
    if "adapter" not in cfg:
        raise ConfigError("choose a provider: python -m experiments.run +adapter=naia-local (or none)")
    resolved = OmegaConf.to_container(cfg, resolve=True)
    quiet_peers(str(resolved.get("peer_log_level", "WARNING")).upper())
    adapter, ds, exp = resolved["adapter"], resolved["dataset"], resolved["experiment"]
    check_run_settings(resolved)
    ident = res.Identity(adapter["name"], ds["name"], exp["name"], res.config_hash(identity_config(resolved)), int(resolved["seed"]))
    root = _repo_path(resolved["results_dir"])
    out_path = ident.path(root)
    if out_path.exists() and resolved["on_existing"] == "skip":
        print(f"[skip] {out_path} exists (on_existing=skip)")
        return {"skipped": str(out_path)}
    t0 = time.perf_counter()
    if exp["name"] == "latency":
        from .tasks.latency import run_latency

        record = run_latency(resolved, progress_bar=lambda n, d: _bar(resolved, n, d))
    elif exp["name"] == "ablation":
        record = run_ablation(resolved, adapter, ds, exp)
    else:
        record = run_single(resolved, adapter, ds, exp)
    record.setdefault("timings", {})["total_s"] = time.perf_counter() - t0
    record.update({"config": without_secrets(resolved), "git": res.git_hash(REPO), "versions": res.package_versions()})
    path = res.write_record(root, ident, record)
    from .report import summary_lines

    print("\n".join(summary_lines(ident.experiment, ident.provider, ident.dataset, record)))
    print(f"result: {path}")
    return record


def run_single(resolved, adapter, ds, exp) -> dict[str, Any]:
    from .tasks import run_experiment

    check_kind(exp["name"], ds)
    data = load_nonempty(ds)
    ctx = _context(resolved, exp["name"])
    factory = provider_factory(adapter, read_only=asks_read_only(resolved, exp["name"]))
    probe = factory()
    caps = provider_capabilities(probe)
    probe.close()
    with _bar(resolved, len(data), f"{adapter['name']} x {ds['name']}") as bar:
        out = run_experiment(exp["name"], factory, data, exp, ctx, bar.update if bar else None)
    record = {"metrics": out["metrics"], "capabilities": caps, "timings": out["timings"], "per_query": out["queries"]}
    if "calibration" in ctx:
        record["calibration"] = ctx["calibration"]
    return record


def shared_embedder(adapter: dict[str, Any]) -> CachedEmbedder:
    """One memoising embedder for every ablation variant: the variants replay the
    same texts, so each text is embedded once per run instead of once per variant."""
    from naia_memory.providers.naia import build_embedder

    return CachedEmbedder(build_embedder(adapter.get("embedder")))


def run_ablation(resolved, adapter, ds, exp) -> dict[str, Any]:
    """Every engine switch flipped against the defaults, same data and seed."""
    from .stats import paired_bootstrap
    from .tasks import headline, run_experiment, unit_scores

    base_name = exp["base"]
    base_exp = {**exp, "name": base_name}
    switches = exp.get("switches") or list(EngineConfig.SWITCHES)
    unknown = [s for s in switches if s not in EngineConfig.SWITCHES]
    if unknown:  # "mmmr" was a KeyError on naia, and "not applicable" on other providers
        raise ConfigError(f"experiment.switches: no such switch {unknown}; the switches are {list(EngineConfig.SWITCHES)}")
    if adapter["provider"] not in ("naia-local", "sqlite", "sqlite-vec", "qdrant"):
        return {"metrics": {s: {"applicable": False, "reason": f"{adapter['provider']} has no naia engine switches"} for s in switches},
                "base_experiment": base_name, "timings": {}}
    check_kind(base_name, ds)
    data = load_nonempty(ds)
    ctx = _context(resolved, base_name)
    defaults = {f.name: getattr(EngineConfig(), f.name) for f in fields(EngineConfig)}
    engine = {**{s: defaults[s] for s in switches}, **(adapter.get("engine") or {})}
    runs: dict[str, dict[str, Any]] = {}
    variants = [("default", {})] + [(f"{s}={'off' if engine[s] else 'on'}", {s: not engine[s]}) for s in switches]
    shared = shared_embedder(adapter)
    with _bar(resolved, len(variants) * len(data), f"ablation {adapter['name']} x {ds['name']}") as bar:
        for label, flip in variants:
            try:
                factory = provider_factory(adapter, flip, embedder=shared, read_only=asks_read_only(resolved, base_name))
                factory().close()
            except ValueError as e:  # e.g. turning off the only candidate generator
                runs[label] = {"error": str(e)}
                if bar:
                    bar.update(len(data))
                continue
            out = run_experiment(base_name, factory, data, base_exp, ctx, bar.update if bar else None)
            runs[label] = {"metrics": out["metrics"], "units": unit_scores(base_name, out["queries"], base_exp, ctx)}
    base_units = runs["default"]["units"]
    metrics: dict[str, Any] = {"headline": headline(base_name, base_exp), "default": float(sum(v for _, v in base_units.values()) / max(1, len(base_units)))}
    for label, _ in variants[1:]:
        r = runs[label]
        if "error" in r:
            metrics[label] = {"applicable": False, "reason": r["error"]}
            continue
        metrics[label] = {"applicable": True, **paired_bootstrap(base_units, r["units"], n_boot=int(exp.get("n_boot", 2000)),
                                                                 seed=int(resolved["seed"]))}
    return {"metrics": metrics, "base_experiment": base_name,
            "per_variant": {k: {"metrics": v.get("metrics"), "units": v.get("units"), "error": v.get("error")} for k, v in runs.items()},
            "timings": {}, **({"calibration": ctx["calibration"]} if "calibration" in ctx else {})}


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    try:
        run(cfg)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
