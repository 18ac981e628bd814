"""Koog's automatic fact detection: a chat model reads a conversation and
names structured facts (subject, concept, type, values). Strict parsing: an
answer that is not the asked-for JSON raises, and nothing is saved."""
from __future__ import annotations

import json
import re

from ..structured import Concept, Fact, FactType, MemorySubject, MultipleFacts, SingleFact
from .extractor import UnparseableAnswer


DETECT_PROMPT = (
    "Find lasting facts in the conversation. Answer JSON only: a list of objects "
    '{"subject": <one of the subjects below>, "concept": <short keyword>, "description": <what the concept is>, '
    '"fact_type": "single" or "multiple", "values": [<strings>]}. An empty list when there is none.'
)


def parse_detected(raw: str, subjects: dict[str, MemorySubject]) -> list[tuple[str, Fact]]:
    text = raw.strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    text = fence.group(1).strip() if fence else text
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise UnparseableAnswer(raw, "not JSON") from None
    if not isinstance(data, list):
        raise UnparseableAnswer(raw, "expected a list")
    out: list[tuple[str, Fact]] = []
    for item in data:
        try:
            subject, keyword = item["subject"], item["concept"]
            kind = FactType(str(item.get("fact_type", "single")).lower())
            values = [str(v) for v in item["values"]]
        except (KeyError, TypeError, ValueError) as e:
            raise UnparseableAnswer(raw, f"bad fact {item!r}: {e}") from None
        if subject not in subjects:
            raise UnparseableAnswer(raw, f"unknown subject {subject!r}")
        if not values:
            continue
        concept = Concept(str(keyword), str(item.get("description", "")), kind)
        out.append((subject, SingleFact(concept, values[-1]) if kind is FactType.SINGLE else MultipleFacts(concept, tuple(values))))
    return out
