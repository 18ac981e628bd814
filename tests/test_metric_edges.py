"""The numbers the experiments report, at their edges: bugs a review found in
session 33, each test failing on the code before it. An undefined ratio was
stored as 0.000 (a group of keeps "had" recall 0, a script with no stale
value the best stale rate); a run with another dataset setting (pad=10)
took the plain run's row in the report under the same label; the report's
per-question rows mixed two copies of one record; seven test statements
were dev statements word for word; the golden check passed a slice it held
no numbers for."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments import golden
from experiments.frame import variant_label
from experiments.suites.natural import statements
from experiments.tasks.contradiction import score
from experiments.tasks.extraction import score as extraction_score


def _row(expected: str, predicted: str, target_ok: bool = True) -> dict:
    return {"expected": expected, "predicted": predicted, "correct_target": target_ok, "setup_ok": True, "undecided": False}


def test_a_ratio_with_nothing_under_it_is_undefined_not_zero():
    keeps = score([_row("keep", "keep"), _row("keep", "keep")])
    assert keeps["recall"] is None and keeps["precision"] is None and keeps["fpr"] == 0.0
    changes = score([_row("update", "update"), _row("delete", "keep")])
    assert changes["fpr"] is None and changes["recall"] == 0.5 and changes["precision"] == 1.0
    chatter = extraction_score([{"declarative": False, "covered": False, "skips": ["greeting"], "stored": True,
                                 "time": None, "time_resolved": False, "subject_ok": None}])
    assert chatter["coverage"] is None and chatter["rejection"] == 1.0 and chatter["subject_accuracy"] is None


def _record(pad: int) -> dict:
    from experiments.frame import _adapter_defaults

    return {"identity": {"provider": "naia-local"},
            "config": {"adapter": {"name": "naia-local", **dict(_adapter_defaults("naia-local"))},
                       "dataset": {"name": "natural-updates-test-batch-all", "kind": "natural-updates", "split": "test",
                                   "batch": "all", "pad": pad}}}


def test_a_dataset_setting_its_name_does_not_carry_is_in_the_label():
    assert variant_label(_record(0)) == "naia-local"
    assert variant_label(_record(10)) == "naia-local[dataset.pad=10]"


def _locomo_record(root: Path, folder: str, written: str, hit: bool) -> None:
    ident = {"provider": "lite", "dataset": "locomo-dev", "experiment": "locomo", "config_hash": "abc", "seed": 0}
    per_query = [{"query_id": f"s1#{i}", "sample": "s1", "category": 4, "evidence": ["D1:1"],
                  "ranking": [{"source_ids": ["D1:1" if hit else "D1:2"]}]} for i in range(4)]
    doc = {"identity": ident, "written_at": written, "per_query": per_query,
           "metrics": {"all/turn_recall@5": float(hit), "all/turn_hit@5": float(hit), "all/session_recall@5": float(hit)},
           "config": {"adapter": {"name": "lite"}, "experiment": {"name": "locomo", "top_ks": [5]}}}
    path = root / "locomo" / folder / "lite-abc-seed0.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc))


def test_the_report_reads_per_question_rows_from_the_record_it_keeps_only(tmp_path):
    from experiments.report import load_frames

    _locomo_record(tmp_path, "locomo-dev-old", "2026-01-01T00:00:00+00:00", hit=False)  # a copy kept in a renamed folder
    _locomo_record(tmp_path, "locomo-dev", "2026-02-01T00:00:00+00:00", hit=True)
    fr = load_frames(tmp_path)
    assert len(fr.records) == 1 and len(fr.queries) == 4 and (fr.queries["turn_recall@5"] == 1.0).all()


def test_no_test_statement_is_a_dev_statement_said_again():
    dev = {" ".join(s.text.split()).lower() for s in statements("dev")}
    test = statements("test")
    assert test and not [s.id for s in test if " ".join(s.text.split()).lower() in dev]


def test_the_golden_check_fails_a_slice_it_holds_no_numbers_for(monkeypatch, tmp_path):
    name = "contradiction-main"
    store = tmp_path / "golden.json"
    store.write_text(json.dumps({}))
    monkeypatch.setattr(golden, "GOLDEN", store)
    monkeypatch.setattr(golden, "run_slice", lambda n, tmp: {k: 1.0 for k in golden.SLICES[n]["metrics"]})
    assert golden.main(["--only", name]) == 1


# ---- session 34: a review of the runner's edges, each test failing on the code before it
def test_an_experiment_setting_or_another_matcher_is_in_the_label():
    rec = _record(0)
    rec["config"]["experiment"] = {"name": "lifecycle", "top_k": 5}
    assert variant_label(rec) == "naia-local"
    rec["config"]["experiment"] = {"name": "lifecycle", "top_k": 1}
    assert variant_label(rec) == "naia-local[experiment.top_k=1]"
    rec["config"]["experiment"] = {"name": "lifecycle", "top_k": 5}
    rec["config"]["match_embedder"] = "hashing"
    assert variant_label(rec) == "naia-local[match_embedder=hashing]"


@pytest.mark.parametrize("override, message", [
    ({"on_existing": "skpi"}, "on_existing"),
    ({"read_only": 0}, "read_only"),
    ({"read_only": None}, "read_only"),
    ({"dataset": {"name": "aihub141-synthetic", "kind": "aihub141-synthetic", "seed": 5}}, "dataset.seed"),
])
def test_a_setting_that_would_run_another_measurement_is_refused(override, message):
    from experiments.run import ConfigError, check_run_settings

    resolved = {"on_existing": "overwrite", "read_only": True, "seed": 0, "dataset": {"name": "x", "kind": "x"}, **override}
    with pytest.raises(ConfigError, match=message):
        check_run_settings(resolved)
    check_run_settings({"on_existing": "skip", "read_only": False, "seed": 3, "dataset": {"seed": 3}})  # fine as given


def test_a_dataset_setting_no_loader_reads_is_refused():
    """``+dataset.splt=test`` ran the dev part under a new record name, as if
    the setting had been used (session 35)."""
    from omegaconf import OmegaConf

    from experiments.run import ConfigError, check_dataset_keys, check_run_settings

    conf = Path(__file__).parents[1] / "conf" / "dataset"
    for f in sorted(conf.glob("*.yaml")):  # every config as written passes
        check_dataset_keys(OmegaConf.to_container(OmegaConf.load(f), resolve=False))
    updates = OmegaConf.to_container(OmegaConf.load(conf / "natural-updates.yaml"), resolve=False)
    check_dataset_keys({**updates, "only": ["en-0004"]})  # read by the loader, not written in the file
    with pytest.raises(ConfigError, match=r"dataset\.splt: not a setting of natural-updates data .*split"):
        check_run_settings({"on_existing": "overwrite", "read_only": True, "seed": 0, "dataset": {**updates, "splt": "test"}})
    locomo = OmegaConf.to_container(OmegaConf.load(conf / "locomo-dev.yaml"), resolve=False)
    with pytest.raises(ConfigError, match="dataset.pad"):
        check_dataset_keys({**locomo, "pad": 10})  # a setting of another kind of data


def test_a_split_or_switch_that_does_not_exist_is_refused_and_an_empty_dataset_too():
    from experiments.run import ConfigError, load_data, load_nonempty, run_ablation

    with pytest.raises(ConfigError, match="split"):
        load_data({"kind": "contradiction-suite", "name": "c", "split": "mian"})
    with pytest.raises(ConfigError, match="mmmr"):
        run_ablation({}, {"provider": "lite", "name": "lite"}, {"kind": "lifecycle-scripts"},
                     {"name": "ablation", "base": "lifecycle", "switches": ["mmmr"]})
    with pytest.raises(ConfigError, match="no items"):
        from omegaconf import OmegaConf

        ds = OmegaConf.to_container(OmegaConf.load(Path(__file__).parents[1] / "conf" / "dataset" / "aihub141-synthetic.yaml"))
        load_nonempty({**ds, "n": 0, "seed": 0})


def test_a_file_that_is_not_a_run_record_is_skipped_not_a_crash(tmp_path, capsys):
    from experiments.results import load_records

    good = {"identity": {"provider": "lite"}, "metrics": {"x": 1.0}}
    (tmp_path / "lifecycle" / "d").mkdir(parents=True)
    (tmp_path / "lifecycle" / "d" / "lite-abc-seed0.json").write_text(json.dumps(good))
    (tmp_path / "_scratch").mkdir()
    (tmp_path / "_scratch" / "note.json").write_text("[1]")
    (tmp_path / "_scratch" / "cut.json").write_text('{"identity": {"pro')
    assert load_records(tmp_path) == [good]
    assert capsys.readouterr().err.count("skipped") == 2


def test_data_of_another_kind_or_a_bad_session_count_is_refused_before_running():
    from experiments.run import ConfigError, check_kind, load_data

    with pytest.raises(ConfigError, match="reads lifecycle-scripts or natural-lifecycle data"):
        check_kind("lifecycle", {"kind": "locomo", "name": "locomo-dev"})  # an AttributeError deep in the task before
    check_kind("lifecycle", {"kind": "natural-lifecycle", "name": "natural-lifecycle-dev"})
    for bad in (0, -2, "3", True):
        with pytest.raises(ConfigError, match="max_sessions"):
            load_data({"kind": "locomo", "name": "l", "path": "README.md", "max_sessions": bad})


def test_a_task_that_fails_closes_its_progress_bar(monkeypatch):
    """The bar stayed open over the traceback (session 35): closed however the run ends."""
    import experiments.tasks as tasks
    from experiments.run import run_single

    opened = []

    def fails(name, factory, data, exp, ctx, tick):
        tick(1)
        raise RuntimeError("the task failed")

    import tqdm as tqdm_module

    class Recording(tqdm_module.tqdm):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            opened.append(self)

    monkeypatch.setattr(tqdm_module, "tqdm", Recording)
    monkeypatch.setattr(tasks, "run_experiment", fails)
    adapter = {"provider": "none", "name": "none"}
    ds = {"name": "lifecycle-scripts", "kind": "lifecycle-scripts"}
    with pytest.raises(RuntimeError, match="the task failed"):
        run_single({"progress": True, "read_only": True}, adapter, ds, {"name": "lifecycle"})
    assert len(opened) == 1 and opened[0].n == 1 and opened[0].disable  # closed
