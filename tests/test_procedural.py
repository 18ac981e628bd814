"""Procedural memory (issue 10): skill outcomes per context and corrective
recall: after a failure, the skill's report brings back what went wrong and
what has worked since."""
from __future__ import annotations

from datetime import timedelta

import pytest

from naia_memory import EngineConfig, MemoryKind, MemorySystem
from naia_memory.embedders import HashingEmbedder
from naia_memory.procedural import ProceduralMemory

from .conftest import naia_store


@pytest.mark.parametrize("kind", ["json", "sqlite", "qdrant"])
def test_corrective_recall_after_a_failure(tmp_path, tokenizer, t0, kind):
    m = MemorySystem(store=naia_store(kind, tmp_path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer, config=EngineConfig())
    pm = ProceduralMemory(m)
    pm.record("deploy", success=True, context="staging", approach="rsync", now=t0)
    fail = pm.record("deploy", success=False, context="prod", approach="rsync", detail="permission denied on /srv", now=t0 + timedelta(days=1))
    pm.record("deploy", success=True, context="prod", approach="docker push", now=t0 + timedelta(days=2))
    pm.record("deploy", success=True, context="prod", approach="docker push", now=t0 + timedelta(days=3))
    pm.record("backup", success=False, context="prod", detail="disk full", now=t0 + timedelta(days=3))
    prod = pm.report("deploy", "prod")
    assert (prod.attempts, prod.successes, prod.failures) == (3, 2, 1) and abs(prod.success_rate - 2 / 3) < 1e-9
    assert prod.last_failure.id == fail and "permission denied" in prod.last_failure.content
    assert [h.metadata["valid_from"] for h in prod.worked_since] == [t0 + timedelta(days=3), t0 + timedelta(days=2)]
    assert prod.best_approach == "docker push"
    every = pm.report("deploy")  # all contexts
    assert (every.attempts, every.successes) == (4, 3) and every.best_approach == "docker push"
    assert pm.report("unknown skill").attempts == 0 and pm.report("unknown skill").success_rate is None
    # outcomes are memories: recalled with the rest, kept across reopening, forgettable
    assert any("permission denied" in c for c in m.recall(query="deploy permission denied", now=t0 + timedelta(days=4)).contents())
    m.close()
    m = MemorySystem(store=naia_store(kind, tmp_path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer, config=EngineConfig())
    pm = ProceduralMemory(m)
    assert pm.report("deploy", "prod").last_failure.id == fail
    assert m.memories(kinds=[MemoryKind.SKILL])[0].kind is MemoryKind.SKILL
    m.forget(memory_id=fail)
    assert pm.report("deploy", "prod").failures == 0
    m.close()


@pytest.mark.parametrize("kwargs", [{"detail": "x" * 100_001}, {"detail": "bad\udcff"}, {"context": 5}, {"approach": None}])
def test_record_refuses_what_encode_refuses_and_writes_nothing(tmp_path, tokenizer, t0, kwargs):
    """Found by a review in session 32: an outcome past the content limit,
    a lone surrogate or a non-text context was stored."""
    m = MemorySystem(store=naia_store("json", tmp_path), embedder=HashingEmbedder(dim=64), tokenizer=tokenizer, config=EngineConfig())
    pm = ProceduralMemory(m)
    with pytest.raises(ValueError):
        pm.record("deploy", success=False, now=t0, **kwargs)
    assert pm.report("deploy").attempts == 0 and len(m.store) == 0
    m.close()
