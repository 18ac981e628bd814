"""Model answers of the wrong shape are refused loudly (an UNDECIDED decision
with the raw answer, or UnparseableAnswer), never read as something else and
never a crash of the caller: bugs a review found in session 32, each test
failing on the code before it."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from naia_memory import DecisionOp, LocalStore, MemorySystem
from naia_memory.embedders import make_embedder
from naia_memory.llm import LLMFactExtractor, ScriptedLLM
from naia_memory.llm.contradiction_filter import LLMContradictionFilter
from naia_memory.llm.client import clip
from naia_memory.llm.extractor import RAW_KEPT, UnparseableAnswer, json_answer
from naia_memory.llm.fact_detector import parse_detected
from naia_memory.llm.summarizer import LLMSummarizer, Source

T0 = datetime(2026, 1, 1, 9, tzinfo=timezone.utc)
JOBS = [json.dumps({"facts": [{"content": "I work at Google", "attribute": "job"}]}),
        json.dumps({"facts": [{"content": "I work at Apple now", "attribute": "job"}]})]


def two_jobs(tmp_path, tokenizer, extract_answers, judge_answers):
    """The Google job stored (nothing to compare: no judge call), then "Apple now" judged by the scripted filter."""
    m = MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=make_embedder("hashing", dim=64), tokenizer=tokenizer,
                     fact_extractor=LLMFactExtractor(ScriptedLLM(extract_answers)),
                     contradiction_filter=LLMContradictionFilter(ScriptedLLM(judge_answers)))
    m.encode(content="I work at Google", now=T0)
    m.consolidate(now=T0 + timedelta(minutes=1))
    m.encode(content="I work at Apple now", now=T0 + timedelta(minutes=2))
    return m


@pytest.mark.parametrize("answer", ['{"op": "UPDATE", "target": true}', '{"op": ["ADD"], "target": null}',
                                    '{"op": {"x": 1}, "target": 1}'])
def test_a_judge_answer_of_the_wrong_shape_is_undecided_and_changes_nothing(tmp_path, tokenizer, answer):
    m = two_jobs(tmp_path, tokenizer, JOBS, [answer])  # true was read as memory 1; a list or a dict op crashed
    rep = m.consolidate(now=T0 + timedelta(minutes=3))
    assert [d.op for d in rep.decisions] == [DecisionOp.UNDECIDED] and rep.decisions[0].raw == answer
    assert sorted(f.content for f in m.facts()) == ["I work at Google"]
    m.close()


@pytest.mark.parametrize("answer", ['{"facts": [{"content": "I work at Apple now", "attribute": ["job"]}]}',
                                    '{"facts": [{"content": "I work at Apple now", "memory_class": 5}]}',
                                    '{"facts": [{"content": "I work at Apple now", "memory_class": "fact"}]}',
                                    '{"facts": ' + "[" * 100_000])
def test_an_extractor_answer_of_the_wrong_shape_is_undecided(tmp_path, tokenizer, answer):
    m = two_jobs(tmp_path, tokenizer, [JOBS[0], answer], [])
    rep = m.consolidate(now=T0 + timedelta(minutes=3))
    assert [d.op for d in rep.decisions] == [DecisionOp.UNDECIDED] and rep.decisions[0].raw == clip(answer, RAW_KEPT)  # a long one logged by its start
    m.close()


def test_an_extractor_class_is_read_case_blind_and_absent_means_observation():
    raw = json.dumps({"facts": [{"content": "I love jazz", "attribute": " Hobby ", "memory_class": "Preference"},
                                {"content": "I was at the dentist today"}]})
    cands, _ = LLMFactExtractor(ScriptedLLM([raw])).extract("I love jazz. I was at the dentist today", "user")
    assert [(c.attribute, c.memory_class) for c in cands] == [("hobby", "preference"), (None, "observation")]


def test_a_degenerate_answer_is_unparseable_not_a_recursion_error():
    with pytest.raises(UnparseableAnswer, match="nested too deeply"):
        json_answer("[" * 100_000)


@pytest.mark.parametrize("answer", ['[{"subject": "user", "concept": "color", "values": "blue"}]',
                                    '[{"subject": "user", "concept": null, "values": ["blue"]}]',
                                    '[{"subject": "user", "concept": "color", "values": [null]}]',
                                    '[{"subject": ["user"], "concept": "c", "values": ["a"]}]'])
def test_a_fact_detector_answer_of_the_wrong_shape_is_refused(answer):
    # "blue" was read letter by letter into the value "e"; a null was saved as the text "None"
    with pytest.raises(UnparseableAnswer):
        parse_detected(answer, {"user": object()})


@pytest.mark.parametrize("answer", ['{}', '{"ok": false, "problems": [1]}', '{"Missing": [1]}'])
def test_a_summary_checker_that_names_none_of_the_lists_checked_nothing(answer):
    with pytest.raises(UnparseableAnswer):
        LLMSummarizer(ScriptedLLM([answer])).check("I work at Apple.", [Source("f1", "I work at Apple")])
