"""Centred cosines for picking the fact a statement is about (issue 8,
``EngineConfig.slot_centring``): the maths, the per-embedder memo, and that the
engine hands them to the judge only when switched on."""
from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from naia_memory.cognition.centring import (_CENTRES, COMPONENTS, Centre, background_centres, centre_of,
                                            centred_cosines, language)
from naia_memory.cognition.contradiction import Verdict
from naia_memory.cognition.statements import read
from naia_memory.cognition.updates import Known, SlotWeights, same_slot
from naia_memory.embedders import HashingEmbedder


def _mean_only(mean) -> Centre:
    return Centre(np.asarray(mean, dtype=np.float32), np.zeros((0, len(mean)), dtype=np.float32))


def test_centred_cosines_take_the_common_direction_out():
    rng = np.random.default_rng(0)
    common = rng.normal(size=64) * 5
    a, b, c = (common + rng.normal(size=64) for _ in range(3))
    near_b = b + 0.3 * rng.normal(size=64)
    rows = np.stack([b, c])
    raw = rows @ near_b / np.linalg.norm(rows, axis=1) / np.linalg.norm(near_b)
    assert raw.min() > 0.9  # everything looks alike while the common part dominates
    cen = centred_cosines(rows, near_b, _mean_only(common))
    assert cen[0] > 0.9 and abs(cen[1]) < 0.4  # with it taken out, only b is close
    np.testing.assert_allclose(centred_cosines(rows, near_b, _mean_only(np.zeros(64))), raw, rtol=1e-5)
    assert centred_cosines(np.stack([common, a]), a, _mean_only(common))[0] == 0.0  # the mean itself has no direction


def test_the_top_directions_of_ordinary_sentences_are_taken_out_too():
    """Two unrelated sentences that both lean the way ordinary sentences vary
    most (say, a register every chat line shares) look alike around the mean;
    with that direction out, only what they say is compared."""
    rng = np.random.default_rng(1)
    dim = 64
    u = np.zeros(dim)
    u[0] = 1.0
    background = rng.normal(size=(200, dim)) * 0.3 + np.outer(rng.normal(size=200) * 4, u)
    centre = centre_of(background, components=1)
    assert centre.directions.shape == (1, dim)
    assert abs(abs(centre.directions[0] @ u) - 1) < 0.01  # found the direction they vary along
    x, y = rng.normal(size=dim), rng.normal(size=dim)
    x[0], y[0] = 12.0, 12.0  # unrelated content, the same strong lean
    assert centred_cosines(x[None], y, _mean_only(background.mean(0)))[0] > 0.6
    assert abs(centred_cosines(x[None], y, centre)[0]) < 0.3
    assert centred_cosines(x[None], x + 0.1 * rng.normal(size=dim), centre)[0] > 0.9  # the same content still matches
    assert centre_of(background[:1]).directions.shape == (0, dim)  # one sentence has a mean and no spread


def test_language_reads_the_script():
    assert language("나 요즘 비건 해") == "ko"
    assert language("카카오 다녀 lol") == "ko"
    assert language("I work at Kaiser") == "en"
    assert language("12:30") == "en"


class _Counting(HashingEmbedder):
    def __init__(self, dim: int, name: str):
        super().__init__(dim=dim)
        self.name = name
        self.calls = 0

    def embed_passages(self, texts):
        self.calls += 1
        return super().embed_passages(texts)


def test_background_centres_are_embedded_once_per_embedder():
    emb = _Counting(48, "counting-test-embedder")
    _CENTRES.pop((emb.name, emb.dim, COMPONENTS), None)
    first = background_centres(emb.name, emb.dim, emb.embed_passages)
    assert set(first) == {"ko", "en"} and first["ko"].mean.shape == (48,)
    assert first["ko"].directions.shape == (COMPONENTS, 48)
    np.testing.assert_allclose(first["ko"].directions @ first["ko"].directions.T, np.eye(COMPONENTS), atol=1e-4)
    assert not np.allclose(first["ko"].mean, first["en"].mean)
    background_centres(emb.name, emb.dim, emb.embed_passages)
    assert emb.calls == 2  # one batch per language, then the memo
    with pytest.raises(ValueError, match="background sentences"):
        background_centres("wrong-dim-embedder", 7, HashingEmbedder(dim=8).embed_passages)


def test_centres_are_kept_on_disk_for_the_next_process(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("NAIA_MEMORY_CACHE", str(tmp_path / "cache"))
    emb = _Counting(32, "disk-test-embedder")
    key = (emb.name, emb.dim, COMPONENTS)
    _CENTRES.pop(key, None)
    first = background_centres(emb.name, emb.dim, emb.embed_passages)
    files = list((tmp_path / "cache").glob("centres-disk-test-embedder-32-*.npz"))
    assert emb.calls == 2 and len(files) == 1
    _CENTRES.pop(key, None)  # a new process: nothing in memory
    again = background_centres(emb.name, emb.dim, emb.embed_passages)
    assert emb.calls == 2  # read from disk, not embedded
    for lang in first:
        np.testing.assert_array_equal(first[lang].mean, again[lang].mean)
        np.testing.assert_array_equal(first[lang].directions, again[lang].directions)
    files[0].write_bytes(b"torn")  # a broken file is embedded again and replaced, with a warning
    _CENTRES.pop(key, None)
    with caplog.at_level("WARNING"):
        background_centres(emb.name, emb.dim, emb.embed_passages)
    assert emb.calls == 4 and "unreadable" in caplog.text
    _CENTRES.pop(key, None)
    background_centres(emb.name, emb.dim, emb.embed_passages)
    assert emb.calls == 4  # the replacement is whole


def test_an_empty_cache_setting_keeps_nothing_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("NAIA_MEMORY_CACHE", "")
    monkeypatch.chdir(tmp_path)
    emb = _Counting(16, "no-disk-embedder")
    _CENTRES.pop((emb.name, emb.dim, COMPONENTS), None)
    background_centres(emb.name, emb.dim, emb.embed_passages)
    assert emb.calls == 2 and not list(tmp_path.rglob("*.npz"))


def test_a_centred_cosine_can_find_the_slot_raw_cosines_miss(tokenizer):
    new = read("ported my number to Mint Mobile, $15 a month vs $80 lol", tokenizer)
    old = read("I'm on Verizon", tokenizer)
    assert new.switch  # "ported ... to": a cue of change, so a lower bar
    w = SlotWeights()
    assert not same_slot(new, None, Known("f0", old, None, 0.70), w)  # below every raw threshold
    assert same_slot(new, None, Known("f0", old, None, 0.70, centred=0.30), w)
    assert not same_slot(new, None, Known("f0", old, None, 0.70, centred=0.05), w)
    # standing out is judged on the same scale: a rival as close leaves it undecided
    assert not same_slot(new, None, Known("f0", old, None, 0.70, centred=0.30), w, runner_up=0.70, centred_runner_up=0.29)


class _Seeing:
    """A contradiction filter that records what the engine showed it."""

    name = "seeing"

    def __init__(self):
        self.seen = []

    def judge(self, new_text, attr, values, existing, about=None):
        self.seen.append(list(existing))
        return Verdict("add", None, "recorded")


@pytest.mark.parametrize("on", [True, False])
def test_the_engine_hands_centred_cosines_to_the_judge_only_when_switched_on(tmp_path, tokenizer, t0, on):
    from naia_memory import EngineConfig, LocalStore, MemorySystem

    judge = _Seeing()
    m = MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer,
                     config=EngineConfig(slot_centring=on), contradiction_filter=judge)
    m.encode(content="I commute by train every day", now=t0)
    m.consolidate(now=t0 + timedelta(minutes=1))
    m.encode(content="I switched to biking to work", now=t0 + timedelta(days=1))
    m.consolidate(now=t0 + timedelta(days=1, minutes=1))
    m.close()
    shown = [v for views in judge.seen for v in views]
    assert shown, "the second statement was compared with the first"
    assert all((v.centred is not None) == on for v in shown)
    if on:
        assert all(-1.0 <= v.centred <= 1.0 for v in shown)
