"""A model proposes reflections from evidence bundles; the engine checks
every link it cites (``cognition.reflection.check_links``).

The bundles are what the store selected as evidence (never a reflection or
a summary). A model that cites anything else, makes up an id, or builds a
pattern on too few sessions has that proposal rejected with the reason in
the decision log; an answer that does not parse is logged and adds nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..cognition.reflection import Evidence
from .client import ChatClient
from .extractor import UnparseableAnswer, json_answer

PROMPT = (
    "Below are bundles of the user's own memories, each marked with an id. Find higher-order patterns "
    "(a habit, a preference, a recurring concern) that the evidence shows across several sessions. Cite the ids "
    "that show each one. Answer JSON only: {\"patterns\": [{\"pattern\": \"...\", \"evidence\": [\"id\", ...]}]}."
)


@dataclass
class LLMReflector:
    client: ChatClient

    @property
    def name(self) -> str:
        return f"llm:{self.client.name}"

    def propose(self, bundles: Sequence[Sequence[Evidence]]) -> list[tuple[str, list[str]]]:
        listing = "\n\n".join(
            f"BUNDLE {b + 1}:\n" + "\n".join(f"[{e.id}] ({e.at:%Y-%m-%d}, session {e.session}) {e.content}" for e in bundle)
            for b, bundle in enumerate(bundles))
        raw = self.client.complete([{"role": "system", "content": PROMPT}, {"role": "user", "content": listing}])
        data = json_answer(raw)
        items = data.get("patterns") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise UnparseableAnswer(raw, "expected an object with a \"patterns\" list")
        out = []
        for it in items:
            text, ids = (it.get("pattern"), it.get("evidence")) if isinstance(it, dict) else (None, None)
            if not isinstance(text, str) or not text.strip() or not isinstance(ids, list) \
                    or not all(isinstance(i, str) for i in ids):
                raise UnparseableAnswer(raw, "each pattern needs a \"pattern\" string and an \"evidence\" list of ids")
            out.append((text.strip(), list(dict.fromkeys(ids))))
        return out
