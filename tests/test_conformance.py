"""One conformance suite over every provider: what the contract promises is
tested once and holds everywhere, or is declared unsupported through the
capability Protocols (and the declaration is checked)."""
from __future__ import annotations

import os
from datetime import datetime, timedelta

import pytest

from naia_memory import MemoryProvider, capabilities_of, create_provider
from naia_memory.contract import ConsolidationReport, EncodeResult, RecallResult

PERSISTENT = {"naia-local": "m.json", "sqlite": "m.sqlite", "sqlite-vec": "m.sqlite", "qdrant": "qdrant", "lite": "lite.sqlite"}
PROVIDERS = ["naia-local", "sqlite", "sqlite-vec", "qdrant", "lite", "mem0", "letta", "none"]
ENGINE_PROVIDERS = ["naia-local", "sqlite", "sqlite-vec", "qdrant"]
FULL_CAPS = {"decay": True, "history": True, "importance": True, "backup": True, "graph": True, "batch": True}
DECLARED = {**{p: FULL_CAPS for p in ENGINE_PROVIDERS},
            **{p: {k: False for k in FULL_CAPS} for p in ("lite", "mem0", "letta", "none")}}


def make(name, tmp_path, e5, sub="a", request=None):
    if name == "letta":
        pytest.importorskip("letta_client", reason="install letta-client to run the Letta comparison backend")
        return create_provider("letta", base_url=request.getfixturevalue("letta_url"), embedder=e5)
    if name == "mem0":
        pytest.importorskip("mem0", reason="install mem0ai to run the mem0 comparison backend")
        return create_provider("mem0", workdir=str(tmp_path / f"mem0-{sub}"), embedder=e5)
    if name == "none":
        return create_provider("none")
    return create_provider(name, path=str(tmp_path / f"{sub}-{PERSISTENT[name]}"), embedder=e5)


@pytest.fixture(params=PROVIDERS)
def provider_name(request):
    return request.param


@pytest.fixture
def provider(provider_name, tmp_path, e5, request):
    p = make(provider_name, tmp_path, e5, request=request)
    yield p
    p.close()


FACTS = ["나는 서울에 살아", "I have a golden retriever named Max", "제일 좋아하는 음식은 김치찌개야"]


def _fill(p, t0, project="default"):
    ids = []
    for i, text in enumerate(FACTS):
        ids.append(p.encode(content=text, now=t0 + timedelta(minutes=i), project=project).id)
    p.consolidate(now=t0 + timedelta(hours=1))
    return ids


def test_contract_and_declared_capabilities(provider, provider_name):
    assert isinstance(provider, MemoryProvider) and isinstance(provider.name, str)
    assert capabilities_of(provider) == DECLARED[provider_name]


def test_encoded_memories_are_recalled(provider, provider_name, t0):
    _fill(provider, t0)
    res = provider.recall(query="What is my dog's name?", top_k=3, now=t0 + timedelta(days=1))
    assert isinstance(res, RecallResult)
    if provider_name == "none":
        assert res.hits == ()
        return
    assert "Max" in res.hits[0].content
    assert [h.score for h in res.hits] == sorted((h.score for h in res.hits), reverse=True)
    res = provider.recall(query="좋아하는 음식이 뭐야?", top_k=3, now=t0 + timedelta(days=1))
    assert "김치찌개" in res.hits[0].content


def test_recall_never_returns_the_future(provider, t0):
    provider.encode(content="다음 달에 제주도로 이사 갈 거야", now=t0 + timedelta(days=5))
    assert provider.recall(query="제주도", top_k=5, now=t0).hits == ()


def test_projects_are_isolated(provider, provider_name, t0):
    _fill(provider, t0, project="work")
    assert provider.recall(query="서울", top_k=5, project="home", now=t0 + timedelta(days=1)).hits == ()
    if provider_name != "none":
        assert provider.recall(query="서울", top_k=5, project="work", now=t0 + timedelta(days=1)).hits


def test_forget_by_id_and_by_project(provider, provider_name, t0):
    _fill(provider, t0)
    if provider_name == "none":
        assert provider.forget(project="default") == 0
        return
    hits = provider.recall(query="서울", top_k=10, now=t0 + timedelta(days=1)).hits
    target = hits[0].id
    assert provider.forget(memory_id=target) >= 1  # naia stores also forget what was made from it (issue 10)
    assert target not in [h.id for h in provider.recall(query="서울", top_k=10, now=t0 + timedelta(days=1)).hits]
    assert provider.forget(project="default") >= 1
    assert provider.recall(query="서울", top_k=10, now=t0 + timedelta(days=1)).hits == ()


def test_bad_input_is_refused(provider, t0):
    with pytest.raises(ValueError):
        provider.encode(content="  ", now=t0)
    with pytest.raises(ValueError):
        provider.recall(query="", now=t0)
    with pytest.raises(ValueError):
        provider.recall(query="x", top_k=0, now=t0)
    assert isinstance(provider.consolidate(now=t0), ConsolidationReport)


@pytest.mark.parametrize("bad", [{"role": "robot"}, {"project": ""}, {"project": 5}, {"session": ""},
                                 {"metadata": {"at": datetime(2026, 1, 1)}}, {"metadata": {"x": float("nan")}},
                                 {"metadata": {"source_ids": 5}}])
def test_every_provider_refuses_what_the_engine_refuses(provider, provider_name, t0, bad):
    """One contract, one door (session 32: lite stored an unknown role, an
    empty project and a datetime turned into text)."""
    if provider_name == "none":
        pytest.skip("the none provider stores nothing and checks nothing")
    with pytest.raises(ValueError):
        provider.encode(content="fine text", now=t0, **bad)
    with pytest.raises(ValueError):
        provider.recall(query="fine", kinds="fact", now=t0)


def test_a_turn_said_again_after_a_forget_is_stored(provider, provider_name, t0):
    """lite made ids from the row count, which falls after a forget: the
    same turn said again at the same time got a stored row's id and the
    insert raised. Saying it again is an answer (stored, or a duplicate
    declined), never a crash, and what is stored stays searchable."""
    if provider_name == "none":
        pytest.skip("the none provider stores nothing")
    a = provider.encode(content="I adopted a cat named Alpha", now=t0)
    provider.encode(content="I work at Beta Corp as a designer", now=t0)
    assert a.stored
    provider.forget(memory_id=a.id)
    again = provider.encode(content="I work at Beta Corp as a designer", now=t0)  # the same turn, the same time
    assert isinstance(again, EncodeResult)
    hits = provider.recall(query="Beta Corp designer", top_k=5, now=t0 + timedelta(hours=1)).hits
    assert any("Beta Corp" in h.content for h in hits)


def test_reopening_keeps_memories(provider_name, tmp_path, e5, t0):
    if provider_name not in PERSISTENT:
        pytest.skip(f"{provider_name} is not a persistent store in this suite")
    p = make(provider_name, tmp_path, e5, sub="r")
    _fill(p, t0)
    p.close()
    q = make(provider_name, tmp_path, e5, sub="r")
    try:
        assert "Max" in q.recall(query="What is my dog's name?", top_k=3, now=t0 + timedelta(days=1)).hits[0].content
    finally:
        q.close()


def test_declared_capabilities_work(provider, provider_name, tmp_path, t0):
    caps = capabilities_of(provider)
    if not any(caps.values()):
        pytest.skip(f"{provider_name} declares no optional capability")
    provider.encode(content="디자인 회사로 직장 옮겼어", now=t0)
    provider.consolidate(now=t0 + timedelta(minutes=1))
    provider.encode(content="회사 그만두고 지금은 스타트업 다녀", now=t0 + timedelta(days=30))
    provider.consolidate(now=t0 + timedelta(days=30, minutes=1))
    current = provider.recall(query="사용자 직업?", top_k=3, now=t0 + timedelta(days=31)).facts[0]
    assert current.content == "회사 그만두고 지금은 스타트업 다녀"
    assert [h.metadata["status"] for h in provider.history(memory_id=current.id)] == ["superseded", "active"]
    assert provider.recall_at(query="사용자 직업?", at=t0 + timedelta(days=10)).facts[0].content == "디자인 회사로 직장 옮겼어"
    assert provider.score_importance(content="안녕").combined == 0.0
    assert isinstance(provider.apply_decay(now=t0 + timedelta(days=400)), int)
    assert provider.neighbors(entity="스타트업") != [] or provider.neighbors(entity="회사") != []
    dest = provider.backup(path=str(tmp_path / "backup" / "copy"))
    assert os.path.exists(dest)
    got = provider.encode_many(turns=[{"content": "주말마다 한강에서 자전거 타", "now": t0 + timedelta(days=32)},
                                      {"content": "I play bass in a band", "now": t0 + timedelta(days=32, minutes=1)}])
    assert [r.stored for r in got] == [True, True]
    many = provider.recall_many(queries=["자전거", "bass"], top_k=1, now=t0 + timedelta(days=33))
    assert [r.hits[0].id for r in many] == [got[0].id, got[1].id]


def test_lite_refuses_another_embedder(tmp_path, e5, hashing):
    p = create_provider("lite", path=str(tmp_path / "l.sqlite"), embedder=e5)
    p.close()
    from naia_memory.stores.port import EmbedderMismatchError

    with pytest.raises(EmbedderMismatchError):
        create_provider("lite", path=str(tmp_path / "l.sqlite"), embedder=hashing)


def test_network_guard_is_active():
    import socket

    with pytest.raises(OSError):
        socket.getaddrinfo("example.com", 443)
    with pytest.raises(OSError):
        socket.create_connection(("93.184.216.34", 80), timeout=1)
