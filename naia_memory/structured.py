"""Koog's structured facts (AgentMemory) on the naia engine (issue 10).

A host saves facts under a concept ("preferred-language", SINGLE or
MULTIPLE), a subject (user, machine, everything, or its own, each with a
priority) and a scope (an agent, a feature, a product, or across products),
and loads them back by concept, all at once, or by description. They are
ordinary fact records in the same store: they are recalled with everything
else, take part in supersede (a SINGLE concept's new value supersedes the
old; a MULTIPLE concept accumulates), and forget, audit and encryption apply
to them. Names and semantics follow the Koog documentation
(``../shared/seeds/koog-agent-memory.ko.txt``); the code is ours.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Iterable, Sequence, Union

from .contract import InvalidInput, MemoryKind
from .llm.client import ChatClient
from .records import ACTIVE, MemoryRecord, ensure_aware
from .stores.port import RecordFilter
from .validate import check_content, check_name, check_query
from .stale_retry import again_when_stale

if TYPE_CHECKING:
    from .engine import MemorySystem


class FactType(str, Enum):
    SINGLE = "single"  # one value at a time: a new one supersedes
    MULTIPLE = "multiple"  # values accumulate


@dataclass(frozen=True)
class Concept:
    keyword: str
    description: str
    fact_type: FactType = FactType.SINGLE

    def __post_init__(self) -> None:
        if not self.keyword.strip():
            raise InvalidInput("a concept needs a keyword")
        object.__setattr__(self, "fact_type", FactType(self.fact_type))


@dataclass(frozen=True)
class SingleFact:
    concept: Concept
    value: str
    timestamp: datetime | None = None


@dataclass(frozen=True)
class MultipleFacts:
    concept: Concept
    values: tuple[str, ...]
    timestamp: datetime | None = None

    def __post_init__(self) -> None:
        if isinstance(self.values, (str, bytes)):  # tuple("Python") would be six one-letter values
            raise InvalidInput(f"values must be a list of strings, not one string: ({self.values!r},)")
        object.__setattr__(self, "values", tuple(self.values))


Fact = Union[SingleFact, MultipleFacts]


@dataclass(frozen=True)
class MemorySubject:
    """Whom a fact is about; on load the most specific subject (highest
    ``priority``) that has facts wins."""

    name: str
    description: str = ""
    priority: int = 1


EVERYTHING = MemorySubject("everything", "Facts that hold for every subject", 0)
USER = MemorySubject("user", "User information (conversation preferences, issue history, contact details, etc.)", 1)
MACHINE = MemorySubject("machine", "Technical environment (installed tools, package managers, SDKs, OS, etc.)", 1)


@dataclass(frozen=True)
class MemoryScope:
    """Where a fact holds: one agent, feature or product, or across products
    (visible from every scope)."""

    kind: str
    name: str = ""

    KINDS = ("agent", "feature", "product", "cross-product")

    def __post_init__(self) -> None:
        if self.kind not in self.KINDS:
            raise InvalidInput(f"unknown scope kind {self.kind!r}; use one of {self.KINDS}")
        if self.kind != "cross-product" and not self.name:
            raise InvalidInput(f"a {self.kind} scope needs a name")

    @classmethod
    def agent(cls, name: str) -> "MemoryScope":
        return cls("agent", name)

    @classmethod
    def feature(cls, name: str) -> "MemoryScope":
        return cls("feature", name)

    @classmethod
    def product(cls, name: str) -> "MemoryScope":
        return cls("product", name)

    @classmethod
    def cross_product(cls) -> "MemoryScope":
        return cls("cross-product")

    def key(self) -> str:
        return f"{self.kind}:{self.name}"


@dataclass
class StructuredMemory:
    """Koog's memory provider API over a ``MemorySystem``."""

    system: "MemorySystem"
    project: str = "default"
    subjects: dict[str, MemorySubject] = field(default_factory=lambda: {s.name: s for s in (EVERYTHING, USER, MACHINE)})

    def __post_init__(self) -> None:
        check_name(self.project, "project")  # a name the engine refuses could never be listed or forgotten by project

    def _check(self, fact: Fact, subject: MemorySubject, scope: MemoryScope) -> list[str]:
        """Everything ``save`` refuses, before anything is touched: the values,
        and the names (a lone surrogate in a subject failed inside the store,
        with the refused fact held as saved)."""
        values = [fact.value] if isinstance(fact, SingleFact) else list(dict.fromkeys(fact.values))
        if not values or any(not isinstance(v, str) or not v.strip() for v in values):
            raise InvalidInput(f"a fact needs non-empty text values, got {values!r}")
        check_name(fact.concept.keyword, "concept keyword")
        check_name(subject.name, "subject name")
        if scope.kind not in MemoryScope.KINDS:
            raise InvalidInput(f"scope kind must be one of {MemoryScope.KINDS}, got {scope.kind!r}")
        if scope.kind != "cross-product":
            check_name(scope.name, "scope name")
        for v in values:  # the length and text checks encode applies, on what will be stored
            check_content(f"{fact.concept.description or fact.concept.keyword}: {v}", "fact")
        if isinstance(fact, SingleFact) and fact.concept.fact_type is not FactType.SINGLE:
            raise InvalidInput(f"{fact.concept.keyword} is a MULTIPLE concept: save MultipleFacts")
        if isinstance(fact, MultipleFacts) and fact.concept.fact_type is not FactType.MULTIPLE:
            raise InvalidInput(f"{fact.concept.keyword} is a SINGLE concept: save SingleFact")
        return values

    # ---------------------------------------------------------------- save
    @again_when_stale
    def save(self, fact: Fact, subject: MemorySubject, scope: MemoryScope, *, now: datetime | None = None) -> list[str]:
        """Store ``fact``; returns the ids of the records written. A SINGLE
        concept's earlier value (same subject and scope) is superseded; a
        MULTIPLE concept gains the values it does not hold yet."""
        values = self._check(fact, subject, scope)
        now = ensure_aware(now or fact.timestamp)
        sys = self.system
        with sys._lock:
            sys._check_open()
            current = self._records(fact.concept.keyword, subject.name, scope.key(), exact_scope=True)
            stored = {r.metadata.get("fact_type") for r in current} - {fact.concept.fact_type.value}
            if stored:  # one keyword, one type: a SINGLE concept saved as MULTIPLE loaded as three values
                raise InvalidInput(f"{fact.concept.keyword} is stored as a {stored.pop()} concept for this subject and scope")
            self.subjects.setdefault(subject.name, subject)
            held = {r.value: r for r in current}
            # every new value embedded before anything is written: an embedder that fails leaves the store as it was
            made = {v: self._record(fact.concept, v, subject, scope, now) for v in values if v not in held}
            vecs = {v: sys._embed_one(rec.content) for v, rec in made.items()}
            reaffirmed: list[str] = []
            try:
                written = self._write(fact, values, held, made, vecs, current, now, reaffirmed)
                # the names are words of the fact: a forget of these ids clears them (LOG_TEXT_FIELDS)
                sys.store.append_log([{"op": "SAVE", "ids": written, "reaffirmed": reaffirmed,
                                       "concept": fact.concept.keyword, "subject": subject.name, "scope": scope.key(),
                                       "at": now.isoformat()}])
                sys._commit_with_owed()
            except BaseException:
                # a write that failed part-way (a full disk): the values put before it must not stay in this process
                # to be written by the next commit; the store drops what it holds uncommitted and reads its file
                # again at the next call (the host that commits, autosave=False, decides for its own transaction)
                if getattr(sys.store, "autosave", True):
                    discard = getattr(sys.store, "discard", None)
                    if discard is not None:
                        discard()
                raise
            return written

    def _write(self, fact: Fact, values: Sequence[str], held: dict[str, MemoryRecord], made: dict[str, MemoryRecord],
               vecs: dict, current: list[MemoryRecord], now: datetime, reaffirmed: list[str]) -> list[str]:
        """``save``'s writes: new values put, values said again reaffirmed, a
        SINGLE concept's earlier value retired. Returns the ids put."""
        sys = self.system
        written: list[str] = []
        for v in values:
            if v in held:  # said again: a reaffirmation, not a second copy
                held[v].updated_at = now
                sys.store.update(held[v])
                reaffirmed.append(held[v].id)
                continue
            rec = made[v]
            sys.store.put(rec, vecs[v])
            sys.index.add(rec)
            sys.store.graph.add_cooccurrence(rec.entities)
            written.append(rec.id)
            if fact.concept.fact_type is FactType.SINGLE:
                for old in current:
                    rec.supersedes = old.id
                    sys.consolidator.retire(old, now, successor=rec.id, reason=f"new value of {fact.concept.keyword}",
                                            episode_id="structured-save")
                sys.store.update(rec)
        return written

    def _record(self, concept: Concept, value: str, subject: MemorySubject, scope: MemoryScope, now: datetime) -> MemoryRecord:
        sys = self.system
        content = f"{concept.description}: {value}" if concept.description else f"{concept.keyword}: {value}"
        return MemoryRecord(
            id=sys._new_id("fact", content, now, self.project), kind=MemoryKind.FACT, content=content, created_at=now,
            updated_at=now, last_accessed=now, project=self.project, role="user",
            tokens=sys.tokenizer.tokens(f"{concept.keyword} {content}"), entities=sorted(set(sys.tokenizer.nouns(content))),
            importance=1.0, memory_class="preference", valid_from=now, value=value,
            metadata={"structured": True, "concept": concept.keyword, "concept_description": concept.description,
                      "fact_type": concept.fact_type.value, "subject": subject.name, "subject_priority": subject.priority,
                      "scope": scope.key(), "values": [value]},
        )

    # ---------------------------------------------------------------- load
    def _records(self, keyword: str | None, subject: str | None, scope: str | None, *, exact_scope: bool = False) -> list[MemoryRecord]:
        flt = RecordFilter(project=self.project, kinds=(MemoryKind.FACT,), statuses=(ACTIVE,))
        out = []
        with self.system._lock:
            self.system._check_open()  # closed: refused; a shared file: another process's writes (a forget) first
            recs = list(self.system.store.records(flt))
        for r in recs:
            md = r.metadata
            if not md.get("structured") or (keyword is not None and md.get("concept") != keyword):
                continue
            if subject is not None and md.get("subject") != subject:
                continue
            if scope is not None and not (md.get("scope") == scope if exact_scope else _sees(scope, md.get("scope", ""))):
                continue
            out.append(r)
        return sorted(out, key=lambda r: (r.created_at, r.id))

    def _in_use(self) -> bool:
        """Memory on, asked of an open system under its lock (a closed one refuses)."""
        with self.system._lock:
            self.system._check_open()
            return self.system.encoder.enabled

    def load(self, concept: Concept, subjects: MemorySubject | Sequence[MemorySubject], scope: MemoryScope | None = None) -> list[Fact]:
        """The concept's facts for the most specific of ``subjects`` that has
        any, in ``scope`` (and across products); ``scope=None``: every scope."""
        subs = [subjects] if isinstance(subjects, MemorySubject) else list(subjects)
        if not self._in_use():  # memory off: nothing remembered is used (a save is the host's, and kept)
            return []
        for s in sorted(subs, key=lambda s: -s.priority):
            recs = self._records(concept.keyword, s.name, scope.key() if scope else None)
            if recs:
                return _as_facts(recs)
        return []

    def load_all(self, subjects: MemorySubject | Sequence[MemorySubject], scope: MemoryScope | None = None) -> list[Fact]:
        """Every concept's facts; per concept the most specific subject wins."""
        subs = [subjects] if isinstance(subjects, MemorySubject) else list(subjects)
        names = {s.name: s.priority for s in subs}
        if not self._in_use():  # memory off: nothing remembered is used
            return []
        by_concept: dict[str, list[MemoryRecord]] = {}
        for r in self._records(None, None, scope.key() if scope else None):
            if r.metadata.get("subject") in names:
                by_concept.setdefault(r.metadata["concept"], []).append(r)
        out: list[Fact] = []
        for keyword in sorted(by_concept):
            recs = by_concept[keyword]
            top = max(names[r.metadata["subject"]] for r in recs)
            out.extend(_as_facts([r for r in recs if names[r.metadata["subject"]] == top]))
        return out

    def load_by_description(self, description: str, subjects: MemorySubject | Sequence[MemorySubject],
                            scope: MemoryScope | None = None, *, top_k: int = 10, now: datetime | None = None) -> list[Fact]:
        """Facts whose concept or value is nearest in meaning to ``description``
        (the engine's recall over structured facts only; read-only)."""
        check_query(description, top_k)
        subs = {s.name for s in ([subjects] if isinstance(subjects, MemorySubject) else subjects)}
        now = ensure_aware(now)
        flt = RecordFilter(project=self.project, kinds=(MemoryKind.FACT,), statuses=(ACTIVE,), created_before=now)
        with self.system._lock:
            self.system._check_open()
            if not self.system.encoder.enabled:  # memory off: nothing remembered is used (and nothing is embedded)
                return []
            ranked, _ = self.system.pipeline.run(description, max(top_k * 4, 20), flt, now)
        hits = [r for r, *_ in ranked if r.metadata.get("structured") and r.metadata.get("subject") in subs
                and (scope is None or _sees(scope.key(), r.metadata.get("scope", "")))]
        return _as_facts(hits[:top_k])

    # ---------------------------------------------------------------- detect
    def detect_and_save(self, turns: Iterable[str], client: ChatClient, subjects: Sequence[MemorySubject],
                        scope: MemoryScope, *, now: datetime | None = None) -> list[Fact]:
        """Koog's automatic fact detection: the model reads the conversation
        and names concepts and values per subject; each is saved. An answer
        that does not parse saves nothing and raises."""
        from .llm.fact_detector import DETECT_PROMPT, parse_detected  # it builds these classes: imported late

        subs = {s.name: s for s in subjects}
        listing = "\n".join(f"- {s.name}: {s.description}" for s in subjects)
        raw = client.complete([
            {"role": "system", "content": DETECT_PROMPT + "\nSubjects:\n" + listing},
            {"role": "user", "content": "\n".join(turns)},
        ])
        facts = parse_detected(raw, subs)
        for subject, fact in facts:  # every fact checked before any is saved (a bad third one left two saved)
            self._check(fact, subs[subject], scope)
        for subject, fact in facts:
            self.save(fact, subs[subject], scope, now=now)
        return [f for _, f in facts]


def _sees(wanted: str, stored: str) -> bool:
    return stored == wanted or stored == "cross-product:"


def _as_facts(recs: list[MemoryRecord]) -> list[Fact]:
    """Records as Koog facts: one SingleFact per value of a single concept,
    one MultipleFacts per (concept, subject, scope) of a multiple one."""
    out: list[Fact] = []
    groups: dict[tuple[str, str, str], list[MemoryRecord]] = {}
    for r in recs:
        md = r.metadata
        concept = Concept(md["concept"], md.get("concept_description", ""), FactType(md["fact_type"]))
        if concept.fact_type is FactType.SINGLE:
            out.append(SingleFact(concept, r.value or "", r.updated_at))
            continue
        key = (md["concept"], md["subject"], md["scope"])
        if key not in groups:
            groups[key] = []
            out.append(key)  # placeholder, keeps the order of first appearance
        groups[key].append(r)
    final: list[Fact] = []
    for item in out:
        if isinstance(item, tuple):
            rs = groups[item]
            md = rs[0].metadata
            concept = Concept(md["concept"], md.get("concept_description", ""), FactType.MULTIPLE)
            final.append(MultipleFacts(concept, tuple(r.value or "" for r in rs), max(r.updated_at for r in rs)))
        else:
            final.append(item)
    return final


class NoMemory:
    """Koog's default provider when none is configured: keeps nothing."""

    def save(self, fact: Fact, subject: MemorySubject, scope: MemoryScope, *, now: datetime | None = None) -> list[str]:
        return []

    def load(self, concept: Concept, subjects, scope: MemoryScope | None = None) -> list[Fact]:
        return []

    def load_all(self, subjects, scope: MemoryScope | None = None) -> list[Fact]:
        return []

    def load_by_description(self, description: str, subjects, scope: MemoryScope | None = None, **_: object) -> list[Fact]:
        return []
