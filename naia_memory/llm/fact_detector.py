"""Koog's automatic fact detection: a chat model reads a conversation and
names structured facts (subject, concept, type, values). Strict parsing: an
answer that is not the asked-for JSON raises, and nothing is saved."""
from __future__ import annotations


from ..structured import Concept, Fact, FactType, MemorySubject, MultipleFacts, SingleFact
from .extractor import UnparseableAnswer, json_answer


DETECT_PROMPT = (
    "Find lasting facts in the conversation. Answer JSON only: a list of objects "
    '{"subject": <one of the subjects below>, "concept": <short keyword>, "description": <what the concept is>, '
    '"fact_type": "single" or "multiple", "values": [<strings>]}. An empty list when there is none.'
)


def parse_detected(raw: str, subjects: dict[str, MemorySubject]) -> list[tuple[str, Fact]]:
    data = json_answer(raw)
    if not isinstance(data, list):
        raise UnparseableAnswer(raw, "expected a list")
    out: list[tuple[str, Fact]] = []
    for item in data:
        try:
            subject, keyword = item["subject"], item["concept"]
            kind = FactType(str(item.get("fact_type", "single")).lower())
            values = item["values"]
        except (KeyError, TypeError, ValueError) as e:
            raise UnparseableAnswer(raw, f"bad fact {item!r}: {e}") from None
        # text where text is meant: a string of values was read letter by letter, a null saved as "None"
        if not isinstance(keyword, str) or not keyword.strip():
            raise UnparseableAnswer(raw, f"concept must be non-empty text: {item!r}")
        if not isinstance(values, list) or not all(isinstance(v, str) and v.strip() for v in values):
            raise UnparseableAnswer(raw, f"values must be a list of non-empty text: {item!r}")
        if not isinstance(subject, str) or subject not in subjects:
            raise UnparseableAnswer(raw, f"unknown subject {subject!r}")
        if not values:
            continue
        concept = Concept(str(keyword), str(item.get("description", "")), kind)
        out.append((subject, SingleFact(concept, values[-1]) if kind is FactType.SINGLE else MultipleFacts(concept, tuple(values))))
    return out
