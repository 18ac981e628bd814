"""LLM fact extraction with a strict parser: an answer that cannot be parsed
raises ``UnparseableAnswer`` carrying the full text, and the engine records an
explicit UNDECIDED decision. It never turns into a quiet ADD (AIDA's bug)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..cognition.contradiction import ATTRIBUTES
from ..cognition.facts import FactCandidate, strip_speaker
from .client import ChatClient, clip

_CLASSES = ("permanent", "identity", "preference", "observation", "task_state")

PROMPT = (
    "Extract atomic facts about the USER from the user's message below. Only the user's own statements count; "
    "ignore questions, hypotheticals and greetings. Answer with JSON only: "
    '{"facts": [{"content": "<one short fact, in the message\'s language>", "attribute": <one of %s or null>, '
    '"memory_class": <one of %s>}]}. Answer {"facts": []} when there is nothing to keep.'
) % ([a.name for a in ATTRIBUTES], list(_CLASSES))


RAW_KEPT = 20_000  # characters of an unparseable answer kept in the log (a facts answer is far shorter)


class UnparseableAnswer(ValueError):
    """``raw``: the answer as logged, its start when it is long (a 5 MB answer
    was stored whole in the audit log on every retry)."""

    def __init__(self, raw: str, why: str):
        raw = clip(raw, RAW_KEPT)
        super().__init__(f"unparseable LLM answer ({why}): {clip(repr(raw))}")
        self.raw = raw
        self.why = why


def json_answer(raw: str) -> Any:
    """A model's answer as JSON, a ```json fence allowed; anything else is
    UnparseableAnswer (every LLM path in this package reads answers here)."""
    text = raw.strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fence:
        text = fence.group(1).strip()
    if not text:
        raise UnparseableAnswer(raw, "empty answer (truncated by max_tokens?)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UnparseableAnswer(raw, f"not JSON: {e.msg}") from None
    except RecursionError:  # a degenerate answer ("[[[[...") is a bad answer, not a crash of the caller
        raise UnparseableAnswer(raw, "not JSON: nested too deeply") from None


def parse_facts(raw: str) -> list[dict]:
    data = json_answer(raw)
    if not isinstance(data, dict) or not isinstance(data.get("facts"), list):
        raise UnparseableAnswer(raw, 'expected an object with a "facts" list')
    facts = []
    for item in data["facts"]:
        if not isinstance(item, dict) or not isinstance(item.get("content"), str) or not item["content"].strip():
            raise UnparseableAnswer(raw, f"fact without content: {item!r}")
        for key in ("attribute", "memory_class"):  # text or absent; a list there crashed the lookup below
            if item.get(key) is not None and not isinstance(item[key], str):
                raise UnparseableAnswer(raw, f"{key} must be text or null: {item!r}")
        cls = (item.get("memory_class") or "observation").strip().lower()
        if cls not in _CLASSES:  # "fact" or "preferences" is not a class: filing it as an observation hid it
            raise UnparseableAnswer(raw, f"memory_class must be one of {list(_CLASSES)} or null: {item!r}")
        facts.append({**item, "memory_class": cls})
    return facts


@dataclass
class LLMFactExtractor:
    client: ChatClient

    @property
    def name(self) -> str:
        return f"llm:{self.client.name}"

    def extract(self, text: str, role: str) -> tuple[list[FactCandidate], str]:
        """Returns (candidates, raw answer). Assistant turns are never sent."""
        if role != "user":
            return [], ""
        raw = self.client.complete([
            {"role": "system", "content": PROMPT},
            {"role": "user", "content": strip_speaker(text)},
        ])
        known = {a.name for a in ATTRIBUTES}
        out = []
        for item in parse_facts(raw):
            attr = (item.get("attribute") or "").strip().lower()
            attr = attr if attr in known else None  # a name outside the list is "none of the listed", not an error
            out.append(FactCandidate(content=item["content"].strip(), attribute=attr, memory_class=item["memory_class"],
                                     source_sentence=strip_speaker(text)))
        return out, raw
