"""The verifier model behind ``forget_about`` ("forget what I said about my
ex"): it reads the request and the nearest memories and names the ones the
request covers. Fail-closed, as AIDA's structured deletion: an answer that
does not parse deletes nothing and raises, never a guess.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .client import ChatClient
from .extractor import UnparseableAnswer, json_answer

PROMPT = (
    "The user asked to forget some memories. Decide which of the numbered memories the request covers. "
    "Answer JSON only: {\"forget\": [numbers]} (an empty list when none is covered)."
)


@dataclass
class ForgetVerifier:
    client: ChatClient

    @property
    def name(self) -> str:
        return f"llm:{self.client.name}"

    def select(self, request: str, memories: Sequence[tuple[str, str]]) -> list[str]:
        """Ids among ``memories`` (id, text) that ``request`` covers."""
        if not memories:
            return []
        listing = "\n".join(f"{i + 1}. {text}" for i, (_id, text) in enumerate(memories))
        raw = self.client.complete([
            {"role": "system", "content": PROMPT},
            {"role": "user", "content": f"REQUEST: {request}\nMEMORIES:\n{listing}"},
        ])
        data = json_answer(raw)
        picks = data.get("forget") if isinstance(data, dict) else None
        if not isinstance(picks, list) or not all(isinstance(p, int) and not isinstance(p, bool) for p in picks):
            raise UnparseableAnswer(raw, "'forget' must be a list of numbers")
        bad = [p for p in picks if not 1 <= p <= len(memories)]
        if bad:
            raise UnparseableAnswer(raw, f"numbers must be between 1 and {len(memories)}, got {bad}")
        return [memories[p - 1][0] for p in dict.fromkeys(picks)]
