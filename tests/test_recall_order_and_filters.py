"""Recall's own promises at its edges: bugs a review found in session 33,
each test failing on the code before it. With MMR on (the default) a hit's
score could rise down the list (a negative cosine to what was picked was a
bonus); ``kinds=[]`` meant every kind on the profile path and none on a
search."""
from __future__ import annotations

import numpy as np
import pytest

from naia_memory import InvalidInput, LocalStore, MemorySystem
from naia_memory.cognition.mmr import mmr, mmr_matrix
from naia_memory.embedders import HashingEmbedder


def test_mmr_scores_never_rise_down_the_list_even_with_negative_cosines():
    sim = np.array([[1.0, -0.5, 0.1], [-0.5, 1.0, 0.0], [0.1, 0.0, 1.0]])
    cands = [("a", 1.0), ("b", 0.95), ("c", 0.1)]
    for picked in (mmr_matrix(cands, sim, 3, 0.7), mmr(cands, lambda x, y: sim["abc".index(x), "abc".index(y)], 3, 0.7)):
        scores = [s for _, s in picked]
        assert scores == sorted(scores, reverse=True), picked
    rng = np.random.default_rng(0)
    for _ in range(50):
        v = rng.normal(size=(12, 8))
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        cands = [(f"d{i}", float(s)) for i, s in enumerate(rng.random(12))]
        scores = [s for _, s in mmr_matrix(cands, v @ v.T, 8, 0.7)]
        assert all(a >= b - 1e-12 for a, b in zip(scores, scores[1:]))


def test_an_empty_kinds_list_is_refused_on_every_path(tmp_path, tokenizer, t0):
    m = MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    m.encode(content="I work as a designer at a studio in Seoul", now=t0)
    for q in ("designer studio", "What do you know about me?"):
        with pytest.raises(InvalidInput, match="at least one kind"):
            m.recall(query=q, kinds=[], now=t0)
    m.close()
