"""Contradiction filters: decide how a new fact relates to existing ones.

The heuristic filter is the pure rule set in ``cognition.contradiction``; the
LLM filter asks an injected chat model (AIDA's ADD / UPDATE / DELETE / NOOP
against at most three existing memories). An answer that cannot be parsed
raises ``UnparseableAnswer`` and the engine records UNDECIDED.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Protocol, Sequence, runtime_checkable

from ..cognition import contradiction
from ..cognition.contradiction import Attribute, ExistingFact, Verdict
from ..cognition.statements import Reading, read
from ..cognition.updates import Known, SlotWeights, decide
from .client import ChatClient
from .extractor import UnparseableAnswer, json_answer


@dataclass(frozen=True)
class FactView:
    """What a filter may see of an existing fact."""

    id: str
    content: str
    attribute: str | None
    values: frozenset[str]
    similarity: float  # cosine to the new fact
    centred: float | None = None  # the same with the mean of ordinary sentences taken out (cognition.centring)
    about: str | None = None  # the person the fact is about ("mia"); None: the user
    earlier: tuple[str, ...] = ()  # what the facts it replaced said, newest first: the same slot, in other words

    @property
    def rank_score(self) -> float:  # as ``updates.Known.rank_score``
        return self.similarity if self.centred is None else self.centred


@runtime_checkable
class ContradictionFilter(Protocol):
    """``about``: the person the new fact is about when the memory, not the
    sentence, knows it ("mia got laid off", mia being a roommate the user
    named before; ``subjects.named_person``); None for the user or when the
    sentence names them itself."""

    name: str

    def judge(self, new_text: str, attr: Attribute | None, values: frozenset[str], existing: Sequence[FactView],
              about: str | None = None) -> Verdict: ...


class HeuristicContradictionFilter:
    """The attribute rules alone (``cognition.contradiction.judge``): a fact
    outside the known attributes never updates anything. Kept to compare with
    (``EngineConfig.update_rules="attributes"``)."""

    name = "heuristic"

    def judge(self, new_text: str, attr: Attribute | None, values: frozenset[str], existing: Sequence[FactView],
              about: str | None = None) -> Verdict:
        return contradiction.judge(new_text, attr, values, [ExistingFact(f.id, f.attribute, f.values) for f in existing])


class StatementContradictionFilter:
    """The offline default: how the sentences are said (``cognition.statements``)
    against the nearest facts of the same subject (``cognition.updates``), the
    attribute list as a prior."""

    name = "statements"

    def __init__(self, tokenizer, weights: SlotWeights | None = None, memo: int = 65536):
        self.tokenizer = tokenizer
        self.weights = weights or SlotWeights()
        # every new fact is compared with all facts of its subject: read each text once, not once per comparison
        self._read = functools.lru_cache(maxsize=memo)(lambda text: read(text, self.tokenizer))
        self._name_tokens = functools.lru_cache(maxsize=4096)(lambda name: frozenset(self.tokenizer.tokens(name)))

    def judge(self, new_text: str, attr: Attribute | None, values: frozenset[str], existing: Sequence[FactView],
              about: str | None = None) -> Verdict:
        known = [Known(f.id, self._as_theirs(self._read(f.content), f.about), f.attribute, f.similarity, f.centred,
                       frozenset().union(*(self._as_theirs(self._read(e), f.about).content for e in f.earlier)))
                 for f in existing]
        return decide(self._as_theirs(self._read(new_text), about), attr, known, self.weights)

    def _as_theirs(self, r: Reading, about: str | None) -> Reading:
        """A sentence the memory knows is about a person it names reads as
        theirs, even where the sentence alone does not say so (a lowercase
        name opening it reads like a thing: "mia got laid off")."""
        if about is None or r.subject is not None:
            return r
        own = self._name_tokens(about)  # their name says nothing in every fact about them (as ``read``)
        return replace(r, subject=about, personal=True, content=frozenset(t for t in r.content if t not in own))


PROMPT = (
    "You maintain a user's long-term memory. Given a NEW fact the user stated and up to three EXISTING memories, "
    "answer with JSON only: {\"op\": \"ADD\"|\"UPDATE\"|\"DELETE\"|\"NOOP\", \"target\": <number of the existing memory or null>}. "
    "ADD: genuinely new information (including another value of a list, e.g. a second pet). "
    "UPDATE: the same single-valued attribute changed (new job, new city); target = the memory it replaces. "
    "DELETE: the new fact says an existing memory is no longer true and replaces it with nothing; target = that memory. "
    "NOOP: a restatement or a refinement that keeps the memory true. Questions and hypotheticals never change memory."
)
_OPS = {"ADD": "add", "UPDATE": "supersede", "DELETE": "delete", "NOOP": "reaffirm"}


@dataclass
class LLMContradictionFilter:
    client: ChatClient
    max_existing: int = 3

    @property
    def name(self) -> str:
        return f"llm:{self.client.name}"

    def judge(self, new_text: str, attr: Attribute | None, values: frozenset[str], existing: Sequence[FactView],
              about: str | None = None) -> Verdict:
        shown = sorted(existing, key=lambda f: -f.rank_score)[: self.max_existing]
        if not shown:
            return Verdict("add", None, "no existing memory to compare")
        listing = "\n".join(f"{i + 1}. {f.content}" + (f" (about {f.about})" if f.about else "") for i, f in enumerate(shown))
        said = f"NEW: {new_text}" + (f" (about {about})" if about else "")
        raw = self.client.complete([
            {"role": "system", "content": PROMPT},
            {"role": "user", "content": f"{said}\nEXISTING:\n{listing}"},
        ])
        data = json_answer(raw)
        op = data.get("op") if isinstance(data, dict) else None
        if not isinstance(op, str) or op not in _OPS:  # a list or an object as op is a bad answer, not a crash
            raise UnparseableAnswer(raw, f"op must be one of {sorted(_OPS)}")
        target = data.get("target")
        if op == "ADD":
            return Verdict("add", None, "llm: ADD")
        if not isinstance(target, int) or isinstance(target, bool) or not 1 <= target <= len(shown):  # true is not 1
            raise UnparseableAnswer(raw, f"{op} needs a target between 1 and {len(shown)}")
        return Verdict(_OPS[op], shown[target - 1].id, f"llm: {op}")
