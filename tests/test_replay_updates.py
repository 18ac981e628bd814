"""The replay harness decides as the engine does: replaying a capture with the
weights it was made with gives the contradiction experiment's rows, a weight
that moves changes them, and a stale capture or a scan of the frozen part is
refused."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from experiments import replay_updates as ru
from experiments.suites.natural import padded, update_cases
from experiments.tasks.contradiction import run_contradiction, score
from naia_memory.cognition.updates import SlotWeights
from naia_memory.providers import create_provider

CASES = update_cases("dev")[::12]  # every category and both languages, a few seconds with the hashing embedder


@pytest.fixture(scope="module")
def emb(update_sample):
    return update_sample[1]


@pytest.fixture(scope="module")
def traces(update_sample):
    assert [c.case_id for c in update_sample[0]] == [c.case_id for c in CASES]
    return update_sample[2]


def test_replay_with_the_capture_weights_is_the_experiment(traces, emb):
    ran = run_contradiction(lambda: create_provider("naia-local", embedder=emb, path=None), CASES)["queries"]
    rows = ru.replay(traces)
    assert [(r["case_id"], r["predicted"], r["predicted_target"] is not None, r["correct_target"]) for r in rows] == \
        [(r["case_id"], r["predicted"], r["predicted_target"] is not None, r["correct_target"]) for r in ran]
    assert score(rows) == score(ran)
    assert sum(len(t.calls) for t in traces) >= len(CASES) * 0.8  # the new statements' calls, not the setup's


def test_only_the_new_statements_calls_are_kept(traces):
    for t, case in zip(traces, CASES):
        assert all(c.new_text in case.new for c in t.calls)  # each call judges a sentence of the new statement
        assert all(c.new_text != text for c in t.calls for text in case.existing if text != case.new)


def test_a_weight_that_moves_changes_the_decisions(traces):
    base = score(ru.replay(traces))
    open_door = SlotWeights(cued=0.0, margin=0.0, shared=0.0, alone=0.0, c_cued=0.0, c_margin=0.0, c_shared=0.0, c_alone=0.0)
    shut = SlotWeights(cued=2.0, margin=2.0, shared=2.0, alone=2.0, c_cued=2.0, c_margin=2.0, c_shared=2.0, c_alone=2.0)
    assert score(ru.replay(traces, open_door))["recall"] > base["recall"]
    assert score(ru.replay(traces, shut))["recall"] < base["recall"]  # only the attribute prior still finds a slot


def test_save_load_round_trip_and_stale_captures_are_refused(traces, tmp_path):
    path = tmp_path / "cap.json"
    ru.save(path, traces, {"fingerprint": ru.fingerprint(CASES)})
    back = ru.load(path, CASES)
    assert score(ru.replay(back)) == score(ru.replay(traces))
    with pytest.raises(ValueError, match="other cases"):
        ru.load(path, CASES[:-1])
    changed = [replace(CASES[0], new=CASES[0].new + " 진짜로")] + list(CASES[1:])
    with pytest.raises(ValueError, match="texts changed"):
        ru.load(path, changed)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["format"] = 0
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="format"):
        ru.load(path)
    with pytest.raises(FileNotFoundError, match="capture"):
        ru.load(tmp_path / "none.json")


def test_settings_are_parsed_strictly():
    assert ru.parse_settings(["c_cued=0.2,0.3", "nearest=3,5"], grid=True) == [
        {"c_cued": 0.2, "nearest": 3}, {"c_cued": 0.2, "nearest": 5}, {"c_cued": 0.3, "nearest": 3}, {"c_cued": 0.3, "nearest": 5}]
    assert ru.parse_settings([], grid=True) == [{}]
    with pytest.raises(ValueError, match="NAME one of"):
        ru.parse_settings(["cuedd=0.3"], grid=False)
    with pytest.raises(ValueError, match="numbers"):
        ru.parse_settings(["cued=high"], grid=False)


def test_leave_one_batch_out_chooses_on_the_other_batches():
    def rows(batch_hits):  # one update case per batch: found or not
        return [{"batch": b, "expected": "update", "predicted": "update" if hit else "keep", "correct_target": hit,
                 "target_id": "f", "undecided": False, "setup_ok": True} for b, hit in batch_hits]
    results = [{"set": {}, "rows": {0: rows([(1, False), (2, False), (3, True)])}},
               {"set": {"c_cued": 0.1}, "rows": {0: rows([(1, True), (2, True), (3, False)])}}]
    lobo = {x["batch"]: x for x in ru.leave_one_batch_out(results)}
    # fits batches 1 and 2, fails on 3: the held-out score says so
    assert lobo[3]["chosen"] == {"c_cued": 0.1} and lobo[3]["held_out_j"] == 0.0 and lobo[3]["default_held_out_j"] == 1.0
    assert lobo[1]["chosen"] == {}  # 0.5 either way on batches 2 and 3: a tie keeps the defaults
    swap = [{"set": {}, "rows": {0: rows([(1, True), (2, False)])}}, {"set": {"x": 1}, "rows": {0: rows([(1, False), (2, True)])}}]
    assert [x["chosen"] for x in ru.leave_one_batch_out(swap)] == [{"x": 1}, {}]
    same = [{"set": {}, "rows": {0: rows([(1, True), (2, False)])}}, {"set": {"x": 1}, "rows": {0: rows([(1, True), (2, False)])}}]
    assert [x["chosen"] for x in ru.leave_one_batch_out(same)] == [{}, {}]  # a tie keeps the defaults


def test_the_frozen_part_cannot_be_scanned(capsys):
    with pytest.raises(SystemExit):
        ru.main(["scan", "--split", "test"])
    assert "frozen" in capsys.readouterr().err


def test_padding_is_replayed_with_its_own_cases(emb, tmp_path):
    cases = padded(CASES[:3], 2)
    tr = ru.capture(cases, lambda: create_provider("naia-local", embedder=emb, path=None))
    assert all(t.row["padding"] == 2 for t in tr)
    path = tmp_path / "p.json"
    ru.save(path, tr, {"fingerprint": ru.fingerprint(cases)})
    with pytest.raises(ValueError):
        ru.load(path, CASES[:3])  # the unpadded cases are other cases
