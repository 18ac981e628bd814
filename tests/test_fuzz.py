"""Fuzzing every public call with hypothesis (issue 11): thousands of calls
with odd text (lone surrogates, blanks, oversized), wrong types, foreign
ids, naive or odd times, on one JSON and one SQLite store each. A call may
succeed or raise the documented errors (``ValueError`` for a refused value,
``KeyError`` for an unknown id); anything else fails the test, and after
every call each stored record must still be writable, and at the end the
store reopens to exactly what the process held."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from naia_memory import EngineConfig, MemoryKind, MemorySystem  # noqa: E402
from naia_memory.embedders import HashingEmbedder  # noqa: E402
from naia_memory.records import MemoryRecord  # noqa: E402
from naia_memory.stores.port import RecordFilter  # noqa: E402
from naia_memory.validate import MAX_CONTENT_CHARS  # noqa: E402

from .conftest import naia_store  # noqa: E402

CASES_PER_STORE = 3000  # two stores: 6,000 calls a run
DOCUMENTED = (ValueError, KeyError)
T0 = datetime(2025, 3, 1, tzinfo=timezone.utc)

SAID = ["I live in Lisbon now", "I don't live in Lisbon anymore", "나는 서울에 살아", "이제 부산에 살아", "What's my job?",
        "remember this: my PIN hint is blue", "I work at Kaiser as a nurse", "I quit Kaiser", "My sister Ana moved to Oslo",
        "I love spicy ramen!", "우리 강아지 이름은 초코야", "I started learning the cello last week"]
ODD_TEXT = ["", "   ", "\n\t", "bad \ud800 half", "\udcff", "x" * (MAX_CONTENT_CHARS + 1), "\x00nul", "🙂" * 50]
# mostly values a caller means (so the store fills and later calls meet real state), often ones it should not send
good_text = st.one_of(st.sampled_from(SAID), st.builds(lambda a, b: f"{a} {b}", st.sampled_from(SAID), st.text(max_size=20)))
texts = st.one_of(good_text, good_text, good_text, st.text(max_size=60), st.sampled_from(ODD_TEXT), st.none(),
                  st.integers(), st.binary(max_size=4), st.lists(st.text(max_size=3), max_size=2))
good_names = st.sampled_from(["default", "default", "p2"])
names = st.one_of(good_names, good_names, good_names,
                  st.sampled_from(["", " ", None, "n" * 300, "s\ud800"]), st.text(max_size=8), st.integers())
good_times = st.datetimes(min_value=datetime(2024, 1, 1), max_value=datetime(2026, 1, 1), timezones=st.just(timezone.utc))
times = st.one_of(st.none(), good_times, good_times, st.datetimes(min_value=datetime(2024, 1, 1), max_value=datetime(2026, 1, 1)),
                  st.just("2025-01-01"))
metadata = st.one_of(st.none(), st.none(), st.none(),
                     st.dictionaries(st.text(max_size=5), st.one_of(st.text(max_size=5), st.integers(), st.floats()), max_size=3),
                     st.just({"when": T0}), st.just({1: "x"}), st.just("not a mapping"))
kinds = st.one_of(st.none(), st.none(), st.just([MemoryKind.FACT]), st.just(["episode"]), st.just("episode"), st.just(["nope"]),
                  st.integers())
roles = st.sampled_from(["user", "user", "user", "assistant", "system", "robot", None, 3])
FUZZ = {"texts": texts, "names": names, "times": times, "metadata": metadata, "kinds": kinds, "roles": roles}
MEANT = {"texts": good_text, "names": good_names, "times": st.one_of(st.none(), good_times), "metadata": st.none(),
         "kinds": st.none(), "roles": st.sampled_from(["user", "user", "assistant"])}


def _ids(m: MemorySystem) -> list[str]:
    return sorted(r.id for r in m.store.records(RecordFilter(statuses=None)))


def _call(m: MemorySystem, data) -> None:
    # the draws never depend on the store (hypothesis replays them): an index picks a live id
    which, n, junk = data.draw(st.tuples(st.sampled_from(["live", "live", "text", "none", "int"]), st.integers(0, 10**6),
                                         st.text(max_size=10)), label="id")
    ids = _ids(m)
    some_id = {"live": ids[n % len(ids)] if ids else junk, "text": junk, "none": None, "int": n}[which]
    S = data.draw(st.sampled_from([MEANT, FUZZ]), label="well-formed or not")
    texts, names, times, metadata, kinds, roles = (S[k] for k in ("texts", "names", "times", "metadata", "kinds", "roles"))
    op = data.draw(st.sampled_from(["encode", "encode", "encode", "encode_many", "recall", "recall_at", "edit", "forget", "get",
                                    "history", "memories", "show", "consolidate", "audit_log", "score_importance"]), label="op")
    d = lambda s, label: data.draw(s, label=label)  # noqa: E731
    if op == "encode":
        m.encode(content=d(texts, "content"), role=d(roles, "role"), session=d(st.one_of(st.none(), st.none(), names), "session"),
                 project=d(names, "project"), now=d(times, "now"), metadata=d(metadata, "metadata"))
    elif op == "encode_many":
        turns = d(st.lists(st.fixed_dictionaries({"content": texts}, optional={"session": names, "role": roles, "metadata": metadata}),
                           max_size=3), "turns")
        m.encode_many(turns=turns, project=d(names, "project"))
    elif op == "recall":
        m.recall(query=d(texts, "query"), top_k=d(st.one_of(st.integers(-2, 30), st.just("5")), "top_k"),
                 project=d(names, "project"), kinds=d(kinds, "kinds"), now=d(times, "now"))
    elif op == "recall_at":
        m.recall_at(query=d(texts, "query"), at=d(times.filter(lambda t: t is not None), "at"), project=d(names, "project"))
    elif op == "edit":
        m.edit(memory_id=some_id, content=d(texts, "content"), now=d(times, "now"))
    elif op == "forget":
        m.forget(memory_id=some_id)
    elif op == "get":
        m.get(some_id)
    elif op == "history":
        m.history(memory_id=some_id)
    elif op == "memories":
        m.memories(project=d(st.one_of(names, st.none()), "project"), kinds=d(kinds, "kinds"))
    elif op == "show":
        m.show(memory_id=some_id)
    elif op == "consolidate":
        m.consolidate(now=d(times, "now"), project=d(st.one_of(st.none(), names), "project"))
    elif op == "audit_log":
        m.audit_log(op=d(st.one_of(st.none(), st.sampled_from(["ADD", "UPDATE"]), st.integers()), "op"))
    else:
        m.score_importance(content=d(texts, "content"))


def _intact(m: MemorySystem) -> None:
    for r in m.store.records(RecordFilter(statuses=None)):
        assert isinstance(r.content, str) and r.content.strip()
        json.dumps(r.to_json(), ensure_ascii=False, allow_nan=False).encode("utf-8")  # what the next commit writes


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_every_public_call_fails_only_in_documented_ways(kind, tmp_path, tokenizer):
    m = MemorySystem(store=naia_store(kind, tmp_path), embedder=HashingEmbedder(dim=32), tokenizer=tokenizer,
                     config=EngineConfig())
    m.encode(content="I live in Lisbon", now=T0)

    @settings(max_examples=CASES_PER_STORE, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=st.data())
    def one_call(data) -> None:
        try:
            _call(m, data)
        except DOCUMENTED:
            pass  # anything else escapes and hypothesis fails the test with the shrunk call
        _intact(m)

    one_call()
    held = {r.id: r.to_json() for r in m.store.records(RecordFilter(statuses=None))}
    m.close()
    again = MemorySystem(store=naia_store(kind, tmp_path), embedder=HashingEmbedder(dim=32), tokenizer=tokenizer)
    try:
        reread = {r.id: r.to_json() for r in again.store.records(RecordFilter(statuses=None))}
    finally:
        again.close()
    assert reread == held
    assert len(held) > 50  # the fuzz stored things, not only refusals
    assert isinstance(next(iter(held.values())), dict) and MemoryRecord.from_json(next(iter(held.values())))
