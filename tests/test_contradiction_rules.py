"""Contradiction rules, Korean and English, through the pure ``judge``."""
from __future__ import annotations

import pytest

from naia_memory.cognition import contradiction as c
from naia_memory.cognition.facts import extract_facts


def _fact(tokenizer, fid, text):
    attr = c.detect_attribute(text)
    vals = c.value_tokens(text, tokenizer.tokens(text), attr, tokenizer.tokens)
    return c.ExistingFact(fid, attr.name if attr else None, vals)


def _judge(tokenizer, existing_texts, new_text):
    existing = [_fact(tokenizer, f"f{i}", t) for i, t in enumerate(existing_texts)]
    attr = c.detect_attribute(new_text)
    vals = c.value_tokens(new_text, tokenizer.tokens(new_text), attr, tokenizer.tokens)
    return c.judge(new_text, attr, vals, existing)


@pytest.mark.parametrize("old,new,op", [
    ("디자인 회사로 직장 옮겼어", "회사 그만두고 지금은 스타트업 다녀", "supersede"),
    ("나는 서울에 살아", "지난달에 부산으로 이사했어", "supersede"),
    ("나는 채식주의자야", "나 이제 채식주의자 아니야", "delete"),
    ("제일 좋아하는 색은 초록색이야", "사실 초록색은 싫어, 좋아하는 색은 파란색이야", "supersede"),
    ("I work at Google", "I work at Microsoft now", "supersede"),
    ("I live in Seoul", "I moved to Berlin last month", "supersede"),
    ("I'm vegetarian", "I'm not vegetarian anymore", "delete"),
])
def test_true_updates(tokenizer, old, new, op):
    v = _judge(tokenizer, [old], new)
    assert v.op == op, v
    assert v.target_id == "f0"


@pytest.mark.parametrize("old,new,op", [
    ("디자인 회사로 직장 옮겼어", "디자인 회사 다녀", "reaffirm"),               # reaffirmation
    ("고양이 키워", "강아지도 키워", "add"),                                    # list-valued
    ("디자인 회사로 직장 옮겼어", "나는 부산에 살아", "add"),                   # other attribute
    ("I have a dog", "I have a cat", "add"),                                     # list-valued
    ("I work at Google", "I work at Google", "reaffirm"),
    ("나는 커피를 좋아해", "나는 녹차도 좋아해", "add"),                         # likes are list-valued
])
def test_false_positive_traps(tokenizer, old, new, op):
    v = _judge(tokenizer, [old], new)
    assert v.op == op, v


def test_refinement_keeps_the_old_fact(tokenizer):
    v = _judge(tokenizer, ["디자인 회사 다녀"], "서울에 있는 디자인 회사 다녀")
    assert v.op in ("refine", "reaffirm") and v.op != "supersede"


@pytest.mark.parametrize("text", [
    "회사 그만둔 거 아니지?",            # negated question
    "만약 이직하면 어떨까",              # hypothetical
    "If I moved to Paris I would learn French",
    "Do you think I should quit my job?",
])
def test_questions_and_hypotheticals_are_never_facts(tokenizer, text):
    assert not c.is_statement(text)
    assert extract_facts(f"User: {text}", "user", tokenizer.sentences) == []


def test_assistant_turns_are_never_facts(tokenizer):
    assert extract_facts("디자인 회사로 직장 옮기셨군요!", "assistant", tokenizer.sentences) == []
    assert len(extract_facts("User: 디자인 회사로 직장 옮겼어", "user", tokenizer.sentences)) == 1


def test_attribute_detection():
    assert c.detect_attribute("디자인 회사로 직장 옮겼어").name == "job"
    assert c.detect_attribute("I moved to Berlin").name == "residence"
    assert c.detect_attribute("우리 회사는 강남에 있어") is None
    assert c.attribute("pets").multi and not c.attribute("job").multi
