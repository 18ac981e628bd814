"""The LLM extractor path against a real HTTP server on loopback."""
from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest

from naia_memory import DecisionOp, LocalStore, MemorySystem
from naia_memory.embedders import HashingEmbedder
from naia_memory.llm import LLMError, LLMFactExtractor, OpenAICompatChat, ScriptedLLM
from naia_memory.llm.extractor import UnparseableAnswer, parse_facts

from .loopback_openai import openai_server


def _system(tmp_path, tokenizer, client):
    return MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=HashingEmbedder(), tokenizer=tokenizer,
                        fact_extractor=LLMFactExtractor(client))


def test_llm_extracted_facts_over_http(tmp_path, tokenizer, t0):
    answer = json.dumps({"facts": [{"content": "사용자는 디자인 회사에 다닌다", "attribute": "job", "memory_class": "identity"}]},
                        ensure_ascii=False)
    with openai_server(chat=lambda msgs: f"```json\n{answer}\n```") as url:
        m = _system(tmp_path, tokenizer, OpenAICompatChat(base_url=url, model="tiny"))
        m.encode(content="User: 디자인 회사로 직장 옮겼어", now=t0)
        m.encode(content="Other: 멋지네요!", role="assistant", now=t0)
        rep = m.consolidate(now=t0 + timedelta(minutes=1))
        sent = [s["body"]["messages"][-1]["content"] for s in openai_server.seen if s["path"].endswith("/chat/completions")]
    assert sent == ["디자인 회사로 직장 옮겼어"]  # the assistant turn was never sent
    assert [d.op for d in rep.decisions] == [DecisionOp.ADD]
    fact = m.facts()[0]
    assert fact.content == "사용자는 디자인 회사에 다닌다" and fact.metadata["attribute"] == "job"


@pytest.mark.parametrize("raw", ["", "Sure! The user works at a design firm.", '{"facts": "none"}', '{"facts": [{"attribute": "job"}]}'])
def test_unparseable_answer_becomes_undecided_never_add(tmp_path, tokenizer, t0, raw):
    llm = ScriptedLLM([raw])
    m = _system(tmp_path, tokenizer, llm)
    ep = m.encode(content="디자인 회사로 직장 옮겼어", now=t0).id
    rep = m.consolidate(now=t0 + timedelta(minutes=1))
    assert [d.op for d in rep.decisions] == [DecisionOp.UNDECIDED]
    assert rep.decisions[0].raw == raw  # the full answer is kept
    assert m.facts() == []
    logged = [e for e in m.audit_log() if e["op"] == "UNDECIDED"]
    assert logged and logged[0]["raw"] == raw
    # the episode stays unconsolidated, so a fixed extractor can retry it
    m.fact_extractor = LLMFactExtractor(ScriptedLLM(['{"facts": [{"content": "디자인 회사에 다닌다", "attribute": "job"}]}']))
    rep2 = m.consolidate(now=t0 + timedelta(minutes=2))
    assert [d.op for d in rep2.decisions] == [DecisionOp.ADD]
    assert m.store.get(ep).consolidated


def test_http_errors_surface_with_the_body():
    with openai_server(fail_with=429) as url:
        with pytest.raises(LLMError, match="HTTP 429.*scripted failure"):
            OpenAICompatChat(base_url=url, model="m").complete([{"role": "user", "content": "x"}])


def test_parse_facts_accepts_fenced_json_and_rejects_garbage():
    assert parse_facts('```json\n{"facts": []}\n```') == []
    with pytest.raises(UnparseableAnswer):
        parse_facts("[1, 2]")


def test_scripted_llm_runs_out_loudly():
    llm = ScriptedLLM(["a"])
    llm.complete([])
    with pytest.raises(LLMError):
        llm.complete([])


def test_the_llm_update_filter_is_scored_on_the_natural_suite(tmp_path, tokenizer, t0):
    """The LLM path (AIDA's ADD/UPDATE/DELETE/NOOP against the three nearest,
    over real HTTP) runs through the same contradiction task as the offline
    rules. Scripted models stand in for the remote one: one that answers
    each case's label (it must read the numbered EXISTING list to find the
    target, as a model would) scores perfectly, one that always answers ADD
    finds nothing; the task tells them apart."""
    from experiments.suites import natural
    from experiments.tasks.contradiction import run_contradiction
    from naia_memory.llm.contradiction_filter import LLMContradictionFilter

    cases = natural.update_cases("dev")[:24]

    def oracle(msgs):
        user = msgs[-1]["content"]
        def said(line):  # a memory about a person the user named carries "(about <name>)"
            return re.sub(r" \(about [^)]*\)$", "", line)

        new = said(user.split("\n", 1)[0].removeprefix("NEW: "))
        listing = [said(line) for line in user.split("EXISTING:\n", 1)[1].splitlines()]
        for c in cases:
            if new in c.new and c.expected != "keep":
                target = c.existing[c.target]
                for line in listing:
                    num, text = line.split(". ", 1)
                    if text in target or target in text:
                        return json.dumps({"op": "UPDATE" if c.expected == "update" else "DELETE", "target": int(num)})
        return '{"op": "ADD", "target": null}'

    scores = {}
    for name, chat in (("oracle", oracle), ("always-add", lambda msgs: '{"op": "ADD", "target": null}')):
        with openai_server(chat=chat) as url:
            made = iter(range(100))
            client = OpenAICompatChat(base_url=url, model="tiny")

            def make():
                return MemorySystem(store=LocalStore(tmp_path / f"{name}-{next(made)}.json"), embedder=HashingEmbedder(),
                                    tokenizer=tokenizer, contradiction_filter=LLMContradictionFilter(client))

            scores[name] = run_contradiction(make, cases)["metrics"]
    assert scores["oracle"]["applicable"] and not scores["oracle"]["fpr"]  # 0.0, or None when the slice has no keep
    assert scores["oracle"]["recall"] >= 0.9 and scores["oracle"]["precision"] == 1.0
    assert scores["always-add"]["recall"] == 0.0 and not scores["always-add"]["fpr"]


def test_the_llm_filter_is_told_whom_each_memory_is_about():
    """A model cannot know that "theo" is the roommate unless it is told; the
    engine's knowledge of whose fact is whose goes into the prompt."""
    from naia_memory.llm.contradiction_filter import FactView, LLMContradictionFilter

    llm = ScriptedLLM(['{"op": "UPDATE", "target": 1}'])
    old = [FactView("f0", "my roommate theo works nights at the warehouse", None, frozenset(), 0.9, about="theo")]
    v = LLMContradictionFilter(llm).judge("theo moved to the day shift", None, frozenset(), old, about="theo")
    assert (v.op, v.target_id) == ("supersede", "f0")
    asked = llm.calls[0][-1]["content"]
    assert "NEW: theo moved to the day shift (about theo)" in asked
    assert "1. my roommate theo works nights at the warehouse (about theo)" in asked


def test_the_experiment_command_turns_the_llm_path_on(tmp_path):
    """`+adapter.llm.base_url=... +adapter.llm.model=...` on the experiment
    command runs the natural update suite through a model the user hosts: the
    facts come from its extraction answers and the decisions from its judge
    answers (here a scripted server that turns every message into one fact,
    keeps the facts told first and ends the nearest memory when the case's new
    statement comes), and a key given inline is not written into the record."""
    import subprocess
    import sys
    from pathlib import Path

    from experiments.suites import natural

    cases = [c for c in natural.update_cases("dev", batch=1) if c.lang == "en"][:6]
    said: list[str] = []

    def chat(msgs):
        user = msgs[-1]["content"]
        if msgs[0]["content"].startswith("Extract atomic facts"):
            said.append(user)
            return json.dumps({"facts": [{"content": user, "attribute": None, "memory_class": "observation"}]})
        new = user.split("\n", 1)[0]
        return '{"op": "DELETE", "target": 1}' if any(c.new in new for c in cases) else '{"op": "ADD", "target": null}'

    repo = Path(__file__).resolve().parents[1]
    with openai_server(chat=chat) as url:
        cmd = [sys.executable, "-m", "experiments.run", "+adapter=naia-local", "experiment=contradiction",
               "dataset=natural-updates", "dataset.batch=1", "adapter.name=naia-llm", "adapter.embedder.kind=hashing",
               f"+adapter.llm.base_url={url}", "+adapter.llm.model=tiny", "+adapter.llm.api_key=sk-secret",
               f"results_dir={tmp_path}", "progress=false", f"hydra.run.dir={tmp_path}/hydra"]
        # only the six cases: the loader reads the suite, so the run is cut with a case filter of the task
        out = subprocess.run(cmd + [f"+dataset.only=[{','.join(c.case_id for c in cases)}]"], cwd=repo,
                             capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    record = json.loads(next(tmp_path.rglob("naia-llm-*.json")).read_text())
    rows = record["per_query"]
    assert [r["case_id"] for r in rows] == [c.case_id for c in cases]
    assert any(c.new in s for c in cases for s in said)  # the model was asked for the facts of each case
    for r, c in zip(rows, cases):  # the model's DELETE of the nearest, never the rules' own reading
        assert r["predicted"] == "delete", json.dumps(r, ensure_ascii=False)[:2000]
    assert record["config"]["adapter"]["llm"]["api_key"] == "(not recorded)"
    written = [p for p in tmp_path.rglob("*") if p.is_file()]  # the record, and whatever Hydra writes beside the run
    assert written and not [p for p in written if b"sk-secret" in p.read_bytes()]


@pytest.mark.parametrize("spec, error", [
    ({"model": "m"}, "base_url"),
    ({"base_url": "http://127.0.0.1:1/v1"}, "model"),
    ({"base_url": "http://127.0.0.1:1/v1", "model": "m", "temperature": 0.2}, "unknown keys"),
    ({"base_url": "http://127.0.0.1:1/v1", "model": "m", "paths": ["facts", "summaries"]}, "llm.paths"),
    ({"base_url": "http://127.0.0.1:1/v1", "model": "m", "paths": []}, "llm.paths"),  # none, not quietly both
    ({"base_url": "http://127.0.0.1:1/v1", "model": "m", "api_key_env": "NAIA_TEST_NO_SUCH_KEY"}, "not set"),
])
def test_a_bad_model_spec_is_refused_before_the_store_is_opened(tmp_path, spec, error, monkeypatch):
    from naia_memory import create_provider

    monkeypatch.delenv("NAIA_TEST_NO_SUCH_KEY", raising=False)
    with pytest.raises(ValueError, match=error):
        create_provider("naia-local", path=str(tmp_path / "m.json"), embedder={"kind": "hashing"}, llm=spec)
    assert list(tmp_path.iterdir()) == []  # no store file, no lock left behind


def test_a_model_spec_and_a_model_of_ones_own_are_not_both_taken(tmp_path):
    from naia_memory import create_provider

    with pytest.raises(ValueError, match="not both"):
        create_provider("naia-local", path=str(tmp_path / "m.json"), embedder={"kind": "hashing"},
                        llm={"base_url": "http://127.0.0.1:1/v1", "model": "m"},
                        fact_extractor=LLMFactExtractor(ScriptedLLM([])))
    assert list(tmp_path.iterdir()) == []


def test_some_cases_again_by_id():
    from experiments.run import ConfigError, load_data

    ds = {"kind": "natural-updates", "split": "dev", "batch": "1"}
    assert [c.case_id for c in load_data({**ds, "only": "en-0005"})] == ["en-0005"]  # +dataset.only=en-0005
    assert [c.case_id for c in load_data({**ds, "only": ["ko-0005", "en-0005"]})] == ["en-0005", "ko-0005"]
    with pytest.raises(ConfigError, match="en-9999"):
        load_data({**ds, "only": ["en-9999"]})


def test_a_model_spec_picks_its_paths_and_reads_its_key_from_the_environment(tmp_path, monkeypatch):
    from naia_memory.llm.contradiction_filter import LLMContradictionFilter
    from naia_memory.providers.naia import build_llm

    monkeypatch.setenv("NAIA_TEST_KEY", "sk-from-env")
    got = build_llm({"base_url": "http://127.0.0.1:1/v1", "model": "m", "paths": "updates", "api_key_env": "NAIA_TEST_KEY"})
    assert set(got) == {"contradiction_filter"} and isinstance(got["contradiction_filter"], LLMContradictionFilter)
    assert got["contradiction_filter"].client.api_key == "sk-from-env"
    both = build_llm({"base_url": "http://127.0.0.1:1/v1", "model": "m"})
    assert set(both) == {"fact_extractor", "contradiction_filter"} and build_llm(None) == {}
