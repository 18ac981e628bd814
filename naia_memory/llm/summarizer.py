"""A model writes a topic's summary; a second, separate call checks it.

HGVM's verified consolidation: the writer and the checker are different
passes, and the mechanical check (``cognition.summaries.verify``) runs on
every summary as well, so a checker that waves a bad summary through does
not get it stored. An answer that does not parse rejects the summary and
says so, never a guess.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..cognition.summaries import Source
from .client import ChatClient
from .extractor import UnparseableAnswer, json_answer

WRITE = (
    "Summarise the numbered facts about one topic of the user's life in a few sentences. Keep every fact and "
    "every value (names, numbers, places, dates) exactly; add nothing. Answer JSON only: {\"summary\": \"...\"}."
)
CHECK = (
    "Check a summary against the numbered facts it must stand for. List the facts it leaves out (missing), "
    "says differently (altered), or contradicts. Answer JSON only: "
    "{\"missing\": [numbers], \"altered\": [numbers], \"contradicted\": [numbers]} (empty lists when it is faithful)."
)
KINDS = ("missing", "altered", "contradicted")


def _listing(sources: Sequence[Source]) -> str:
    return "\n".join(f"{i + 1}. {s.content}" for i, s in enumerate(sources))


@dataclass
class LLMSummarizer:
    client: ChatClient

    @property
    def name(self) -> str:
        return f"llm:{self.client.name}"

    def write(self, label: str, sources: Sequence[Source]) -> str:
        raw = self.client.complete([{"role": "system", "content": WRITE},
                                    {"role": "user", "content": f"TOPIC: {label}\nFACTS:\n{_listing(sources)}"}])
        data = json_answer(raw)
        text = data.get("summary") if isinstance(data, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise UnparseableAnswer(raw, "expected an object with a non-empty \"summary\" string")
        return text.strip()

    def check(self, summary: str, sources: Sequence[Source]) -> list[str]:
        """Problems the checker names, as ``kind: source id``."""
        raw = self.client.complete([{"role": "system", "content": CHECK},
                                    {"role": "user", "content": f"FACTS:\n{_listing(sources)}\nSUMMARY: {summary}"}])
        data = json_answer(raw)
        # all three lists, present: an answer that names none of them ({}, {"ok": false}) checked nothing
        if not isinstance(data, dict) or any(not isinstance(data.get(k), list) for k in KINDS):
            raise UnparseableAnswer(raw, f"expected an object with lists {list(KINDS)}")
        problems = []
        for kind in KINDS:
            for n in data.get(kind, []):
                if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= len(sources):
                    raise UnparseableAnswer(raw, f"{kind}: numbers must be between 1 and {len(sources)}, got {n!r}")
                problems.append(f"{kind}: {sources[n - 1].id} (checker)")
        return problems
