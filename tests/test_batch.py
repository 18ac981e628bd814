"""encode_many / recall_many: the same memory as one call per turn, cheaper."""
from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from naia_memory import LocalStore, MemorySystem, Turn
from naia_memory.embedders import EmbedderError
from naia_memory.embedders.hashing import HashingEmbedder

HISTORY = [
    ("S1", "user", "나는 서울에 살아"), ("S1", "assistant", "서울 어디쯤 사세요?"), ("S1", "user", "마포구"),
    ("S1", "user", "I work as a nurse at a hospital"), ("S2", "user", "주말마다 한강에서 자전거 타"),
    ("S2", "user", "My sister Mina lives in Busan"), ("S2", "assistant", "Nice!"), ("S2", "user", "ㅋㅋ"),
    ("S2", "user", "이사했어, 이제 부산에 살아"), ("S2", "user", "I quit the hospital, I'm freelancing now"),
]


class CountingEmbedder(HashingEmbedder):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def embed_passages(self, texts):
        self.calls += 1
        return super().embed_passages(texts)


def _turns(t0):
    return [Turn(content=c, role=r, session=s, now=t0 + timedelta(minutes=i)) for i, (s, r, c) in enumerate(HISTORY)]


def _system(path, tokenizer, embedder=None):
    return MemorySystem(store=LocalStore(path), embedder=embedder or HashingEmbedder(), tokenizer=tokenizer)


def _snapshot(m):
    return sorted((r.to_json() for r in m.store.records(None)), key=lambda d: d["id"])


def test_encode_many_builds_the_same_memory_as_encode_in_order(tmp_path, tokenizer, t0, monkeypatch):
    one = _system(tmp_path / "one.json", tokenizer)
    singles = [one.encode(content=t.content, role=t.role, session=t.session, now=t.now) for t in _turns(t0)]
    emb = CountingEmbedder()
    many = _system(tmp_path / "many.json", tokenizer, emb)
    commits = []
    real_commit = many.store.commit
    monkeypatch.setattr(many.store, "commit", lambda: (commits.append(1), real_commit()))
    batch = many.encode_many(turns=_turns(t0), batch_size=4)
    assert batch == singles  # same ids, same gate decisions, same scores
    assert any(not r.stored for r in batch)  # the gate still works inside a batch
    assert emb.calls == 3  # ten turns in batches of four
    assert _snapshot(many) == _snapshot(one)
    assert np.allclose(many.store.embeddings([r.id for r in batch if r.stored]),
                       one.store.embeddings([r.id for r in singles if r.stored]))
    assert len(commits) == 1
    later = t0 + timedelta(days=1)
    assert [r.contents() for r in many.recall_many(queries=["어디 살아?", "job"], top_k=3, now=later)] == \
        [one.recall(query=q, top_k=3, now=later).contents() for q in ["어디 살아?", "job"]]
    one.close(), many.close()


def test_recall_many_strengthens_in_order_like_recall(tmp_path, tokenizer, t0):
    a, b = _system(tmp_path / "a.json", tokenizer), _system(tmp_path / "b.json", tokenizer)
    for m in (a, b):
        m.encode_many(turns=_turns(t0))
    later = t0 + timedelta(days=2)
    qs = ["자전거", "자전거", "sister"]
    assert [r.contents() for r in a.recall_many(queries=qs, now=later)] == [b.recall(query=q, now=later).contents() for q in qs]
    assert _snapshot(a) == _snapshot(b)  # recall counts and last_accessed moved the same way
    a.close(), b.close()


def test_a_bad_turn_refuses_the_whole_batch_before_anything_is_stored(tmp_path, tokenizer, t0):
    m = _system(tmp_path / "m.json", tokenizer)
    m.encode(content="나는 서울에 살아", now=t0)
    before = _snapshot(m)
    with pytest.raises(ValueError):
        m.encode_many(turns=[{"content": "fine", "now": t0}, {"content": "   ", "now": t0}])
    with pytest.raises(ValueError, match="needs 'content'"):
        m.encode_many(turns=[{"text": "wrong key"}])
    with pytest.raises(TypeError):
        m.encode_many(turns=["a bare string"])
    assert _snapshot(m) == before
    m.close()


def test_a_failure_part_way_leaves_the_memory_as_it_was(tmp_path, tokenizer, t0, monkeypatch):
    m = _system(tmp_path / "m.json", tokenizer)
    m.encode(content="나는 서울에 살아", now=t0)
    before = _snapshot(m)
    real = m.store.put
    calls = []

    def failing_put(rec, vec):
        calls.append(rec.id)
        if len(calls) == 3:
            raise OSError("disk full")
        real(rec, vec)

    monkeypatch.setattr(m.store, "put", failing_put)
    with pytest.raises(OSError):
        m.encode_many(turns=_turns(t0 + timedelta(hours=1)))
    monkeypatch.undo()
    assert _snapshot(m) == before
    again = m.encode_many(turns=_turns(t0 + timedelta(hours=1)))  # and the same call then works, with the same ids
    assert [r.id for r in again if r.stored][:2] == calls[:2]
    m.close()


def test_consolidating_a_batch_decides_as_one_turn_at_a_time(make_system, t0, tmp_path):
    """consolidate_all finds every candidate's neighbours up front; each
    candidate must still meet its own (looked up by the candidate, not by
    its place in line), so the decisions equal consolidating after every turn."""
    said = ["I live in Osaka", "I work at a bakery downtown", "I play bass in a band", "I moved to Kyoto last month",
            "I left the band, too many late nights", "quit the bakery, I'm a barista at a cafe now", "I also play the ukulele"]
    batch = make_system(path=tmp_path / "batch.json")
    for i, text in enumerate(said):
        batch.encode(content=text, now=t0 + timedelta(minutes=i))
    at_once = [(d.op.value, d.reason) for d in batch.consolidate(now=t0 + timedelta(hours=1)).decisions]
    single = make_system(path=tmp_path / "single.json")
    one_by_one = []
    for i, text in enumerate(said):
        single.encode(content=text, now=t0 + timedelta(minutes=i))
        one_by_one += [(d.op.value, d.reason) for d in single.consolidate(now=t0 + timedelta(minutes=i, seconds=30)).decisions]
    assert at_once == one_by_one
    assert sum(op in ("UPDATE", "DELETE") for op, _ in at_once) >= 2  # the batch retires facts as it goes


def test_a_candidate_the_batch_did_not_list_is_searched_as_usual():
    import numpy as np

    from naia_memory.consolidation import _Lookahead

    listed, stranger = object(), object()
    ahead = _Lookahead([np.ones(4, dtype=np.float32)], [[("f1", 0.9)]], width=2, keys=[id(listed)])
    assert ahead.vector_for(listed) is not None
    assert ahead.vector_for(stranger) is None
    assert ahead.nearest(None, np.ones(4), 1, None) is None  # no current list: the caller searches


def test_a_batch_embeds_its_candidates_in_one_call(tmp_path, tokenizer, t0):
    """consolidate_all asks the embedder once for all its candidates (a
    remote embedder pays one round trip, not one per fact), and decides as
    with the vectors one at a time."""
    said = ["I live in Osaka", "I work at a bakery downtown", "I play bass in a band", "I moved to Kyoto last month",
            "quit the bakery, I'm a barista at a cafe now"]

    def run(name, embed_many):
        emb = CountingEmbedder()
        m = _system(tmp_path / name, tokenizer, emb)
        if not embed_many:  # the engine without its batch call: one embedder call per candidate
            m.consolidator.embed_many = lambda texts: np.stack([m._embed_one(t) for t in texts])
        for i, text in enumerate(said):
            m.encode(content=text, now=t0 + timedelta(minutes=i))
        before = emb.calls
        decisions = [(d.op.value, d.reason) for d in m.consolidate(now=t0 + timedelta(hours=1)).decisions]
        m.close()
        return emb.calls - before, decisions

    single, decided_alone = run("single.json", False)  # first: it also pays the background sample (memoised)
    batched, decided = run("batched.json", True)
    assert single >= len(said) and batched == 1
    assert decided == decided_alone and any(op == "UPDATE" for op, _ in decided)


class _PoisonedEmbedder(HashingEmbedder):
    """A real hashing embedder whose answer for one text is NaN, as a broken model's can be."""

    def embed_passages(self, texts):
        v = super().embed_passages(texts)
        for i, t in enumerate(texts):
            if "poison" in t:
                v[i] = np.nan
        return v

    def embed_query(self, text):
        v = super().embed_query(text)
        return v * np.nan if "poison" in text else v


def test_a_nan_vector_is_an_embedder_error_and_nothing_is_stored(tmp_path, tokenizer, t0):
    m = _system(tmp_path / "m.json", tokenizer, embedder=_PoisonedEmbedder())
    m.encode(content="I adopted a cat named Miso", now=t0)
    before = len(m.store)
    with pytest.raises(EmbedderError, match="non-finite"):
        m.encode(content="this one is poison", now=t0)
    with pytest.raises(EmbedderError, match="non-finite"):
        m.encode_many(turns=[{"content": "fine turn"}, {"content": "poison turn"}])
    assert len(m.store) == before
    with pytest.raises(EmbedderError, match="non-finite"):
        m.recall(query="poison cat?", now=t0)
    assert m.recall(query="cat?", now=t0).hits  # the rest of the memory is as it was
    m.close()


class _OneBadText(HashingEmbedder):
    """NaN for one exact text, so a later turn that carries it embeds fine."""

    bad = "My bank PIN is 4921, is that safe?"

    def embed_passages(self, texts):
        v = super().embed_passages(texts)
        v[[i for i, t in enumerate(texts) if t == self.bad]] = np.nan
        return v


def test_a_turn_refused_for_its_vector_is_not_the_next_turns_context(tmp_path, tokenizer, t0):
    m = _system(tmp_path / "m.json", tokenizer, embedder=_OneBadText())
    with pytest.raises(EmbedderError):
        m.encode(content=_OneBadText.bad, session="s", now=t0)
    r = m.encode(content="I will change it tomorrow, remember that!", session="s", now=t0 + timedelta(minutes=1))
    assert r.stored
    rec = m.store.get(r.id)
    assert "4921" not in (rec.metadata.get("context") or "") and "4921" not in rec.tokens
    m.close()


class _NanEverywhere(HashingEmbedder):
    def embed_passages(self, texts):
        return super().embed_passages(texts) * np.nan


def test_a_failed_reindex_leaves_the_memory_on_its_old_vectors(tmp_path, tokenizer, t0):
    path = tmp_path / "m.json"
    m = _system(path, tokenizer)
    m.encode(content="I adopted a cat named Miso", now=t0)
    before = m.store.embeddings([r.id for r in m.store.records()]).copy()
    with pytest.raises(EmbedderError, match="non-finite"):
        m.reindex(_NanEverywhere(dim=64))
    assert m.store.meta()["embedder"]["dim"] == 256
    assert np.array_equal(m.store.embeddings([r.id for r in m.store.records()]), before)
    m.close()
    with pytest.raises(EmbedderError, match="non-finite"):
        MemorySystem.open_reindexing(path, embedder=_NanEverywhere(dim=64), tokenizer=tokenizer)
    again = _system(path, tokenizer)  # the file is as it was, and no lock is left behind
    assert again.store.meta()["embedder"]["dim"] == 256 and again.recall(query="cat?", now=t0).hits
    again.close()


class _ShortBatch(HashingEmbedder):
    def embed_queries(self, texts):
        return np.stack([self.embed_query(t) for t in texts[:-1]])  # one row short


def test_recall_many_refuses_a_batch_answer_missing_a_query(tmp_path, tokenizer, t0):
    m = _system(tmp_path / "m.json", tokenizer, embedder=_ShortBatch())
    m.encode(content="I adopted a cat named Miso", now=t0)
    with pytest.raises(EmbedderError, match="shape"):
        m.recall_many(queries=["cat?", "dog?", "fish?"], now=t0)
    m.close()
