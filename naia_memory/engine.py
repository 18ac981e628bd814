"""MemorySystem: the engine that encodes, recalls, consolidates and forgets.

It owns the cognition (gate, fusion, activation, decay, supersede) and talks
to storage only through the narrow ``StoragePort``, so every store reaches
the same behaviour. Time is always an argument (``now``), defaulting to the
real clock; a recall never sees memories created after its ``now``.
"""
from __future__ import annotations

import logging
import re
import threading
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .cognition import contradiction, importance as imp
from .cognition.decay import retention, should_archive
from .cognition.facts import FactCandidate, extract, extract_facts, strip_speaker
from .cognition.rerank import NoopReranker, Reranker
from .cognition.tokenize import KiwiTokenizer, Tokenizer
from .config import EngineConfig
from .contract import (
    ConsolidationReport,
    Decision,
    DecisionOp,
    EncodeResult,
    ImportanceScore,
    MemoryKind,
    RecallHit,
    RecallResult,
    Role,
)
from .embedders.base import Embedder, EmbedderError
from .llm.contradiction_filter import ContradictionFilter, FactView, HeuristicContradictionFilter, StatementContradictionFilter
from .llm.extractor import LLMFactExtractor, UnparseableAnswer
from .recall.context import carried_context, index_text
from .recall.relative_time import to_json
from .recall.when import event_windows
from .recall.pipeline import RecallPipeline
from .recall.signals import label_tokens
from .validate import check_content, check_query, role_name
from .records import ACTIVE, ARCHIVED, SUPERSEDED, MemoryRecord, content_id, ensure_aware
from .stores.port import RecordFilter, StoragePort

log = logging.getLogger("naia_memory")

_ROLES = {r.value for r in Role}


def _role(role: Role | str) -> str:
    r = role_name(role).lower()
    if r not in _ROLES:
        raise ValueError(f"unknown role {role!r}; use one of {sorted(_ROLES)}")
    return r


def _jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa and sb else 0.0


class MemorySystem:
    """The naia memory engine. See README "Library quick start"."""

    def __init__(
        self,
        *,
        store: StoragePort,
        embedder: Embedder,
        tokenizer: Tokenizer | None = None,
        config: EngineConfig | None = None,
        fact_extractor: LLMFactExtractor | None = None,
        contradiction_filter: ContradictionFilter | None = None,
        reranker: Reranker | None = None,
        name: str = "naia",
    ):
        self.name = name
        self.store = store
        self.embedder = embedder
        self.tokenizer = tokenizer or KiwiTokenizer()
        self.config = config or EngineConfig()
        self.fact_extractor = fact_extractor
        self.contradiction_filter = contradiction_filter or (
            StatementContradictionFilter(self.tokenizer) if self.config.fact_rules == "statements" else HeuristicContradictionFilter())
        self.reranker = reranker or NoopReranker()
        self._lock = threading.RLock()
        self._timer: threading.Timer | None = None
        self._timer_interval: float | None = None
        self._closed = False
        store.bind_embedder(embedder.name, embedder.dim)
        self._entity_index: dict[str, set[str]] = {}
        self._last_turn: dict[tuple[str, str], str] = {}  # (project, session) -> the turn before, gated or not
        self.pipeline = RecallPipeline(store=store, embedder=embedder, tokenizer=self.tokenizer, config=self.config,
                                       reranker=self.reranker, entity_index=lambda e: self._entity_index.get(e, set()))
        self._id_counter = sum(1 for _ in store.records())
        for r in store.records():
            self._index_entities(r)

    # ------------------------------------------------------------------ helpers
    def _index_entities(self, r: MemoryRecord) -> None:
        for e in r.entities:
            self._entity_index.setdefault(e, set()).add(r.id)

    def _unindex_entities(self, r: MemoryRecord) -> None:
        for e in r.entities:
            ids = self._entity_index.get(e)
            if ids is not None:
                ids.discard(r.id)
                if not ids:
                    del self._entity_index[e]

    def _new_id(self, prefix: str, content: str, now: datetime, project: str) -> str:
        """Deterministic ids (same inputs in the same order, same ids), so
        ties broken on id rank the same in every rerun."""
        while True:
            self._id_counter += 1
            rid = f"{prefix}_{content_id(f'{project}|{now.isoformat()}|{content}|{self._id_counter}')}"
            if self.store.get(rid) is None:
                return rid

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this MemorySystem is closed")

    def _commit(self) -> None:
        if getattr(self.store, "autosave", True):
            self.store.commit()

    def _embed_one(self, text: str) -> np.ndarray:
        v = self.embedder.embed_passages([text])
        if v.shape != (1, self.embedder.dim):
            raise EmbedderError(f"{self.embedder.name} returned {v.shape} for one text")
        return v[0]

    # ------------------------------------------------------------------ encode
    def score_importance(self, *, content: str, role: Role | str = Role.USER, project: str = "default",
                         overrides: Mapping[str, float] | None = None) -> ImportanceScore:
        tokens = self.tokenizer.tokens(content)
        flt = RecordFilter(project=project, statuses=(ACTIVE,))
        neighbours = [self.store.get(i) for i, _ in self.store.keyword_top_k(tokens, 5, flt)] if tokens else []
        surprise = imp.lexical_surprise(tokens, [n.tokens for n in neighbours if n is not None])
        return imp.score(strip_speaker(content), _role(role), surprise, self.config.importance, overrides)

    def encode(
        self,
        *,
        content: str,
        role: Role | str = Role.USER,
        session: str | None = None,
        project: str = "default",
        now: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        importance: Mapping[str, float] | None = None,
    ) -> EncodeResult:
        """Store one turn as an episode if it passes the importance gate."""
        check_content(content)
        role_s = _role(role)
        now = ensure_aware(now)
        with self._lock:
            self._check_open()
            score = self.score_importance(content=content, role=role_s, project=project, overrides=importance)
            turn_key = (project, session) if session is not None else None
            context = None
            if turn_key and self.config.context:
                context = carried_context(self._last_turn.get(turn_key), content, self.tokenizer, self.config.context_short_tokens)
            if turn_key:
                self._last_turn[turn_key] = content
            if self.config.gate and not imp.passes_gate(score, self.config.gate_threshold):
                return EncodeResult(False, None, f"gated: combined {score.combined:.3f} < {self.config.gate_threshold}", score)
            body = strip_speaker(content)
            keep = "explicit-keep" in score.cues
            md = {"importance": score.combined, "cues": list(score.cues), **dict(metadata or {})}
            if context:
                md["context"] = context
            when = event_windows(body, now)
            if when:  # "yesterday", said on 8 May: the event was on 7 May
                md["when"] = to_json(when)
            rec = MemoryRecord(
                id=self._new_id("ep", content, now, project), kind=MemoryKind.EPISODE, content=content, created_at=now, updated_at=now,
                last_accessed=now, project=project, session=session, role=role_s,
                tokens=self.tokenizer.tokens(index_text(content, context)), entities=sorted(set(self.tokenizer.nouns(body))),
                importance=max(score.importance, score.emotion), memory_class="permanent" if keep else "episode",
                valid_from=now, metadata=md,
            )
            self.store.put(rec, self._embed_one(index_text(content, context)))
            self._index_entities(rec)
            self._commit()
            return EncodeResult(True, rec.id, "stored", score)

    # ------------------------------------------------------------------ consolidate
    def consolidate(self, *, now: datetime | None = None) -> ConsolidationReport:
        """Turn unconsolidated user episodes into facts; supersede what changed."""
        now = ensure_aware(now)
        with self._lock:
            self._check_open()
            if not self.config.consolidation:
                return ConsolidationReport(0, ())
            episodes = sorted(
                (r for r in self.store.records(RecordFilter(kinds=(MemoryKind.EPISODE,), statuses=None, created_before=now)) if not r.consolidated),
                key=lambda r: (r.created_at, r.id),
            )
            decisions: list[Decision] = []
            for ep in episodes:
                decisions.extend(self._consolidate_episode(ep, now))
            if self.config.decay:
                self.apply_decay(now=now, _commit=False)
            self.store.append_log(_decision_json(d) for d in decisions)
            self.store.commit()
            return ConsolidationReport(len(episodes), tuple(decisions))

    consolidate_now = consolidate

    def _extract(self, ep: MemoryRecord, now: datetime) -> tuple[list[FactCandidate], list[Decision]]:
        """Fact candidates, and the decisions logged for what did not become one."""
        if self.fact_extractor is None:
            if self.config.fact_rules == "attributes":
                return extract_facts(ep.content, ep.role, self._sentences), []
            ex = extract(ep.content, ep.role, self._sentences, self.tokenizer)
            return list(ex.facts), [Decision(DecisionOp.SKIP, s, None, None, None, f"not a fact: {why}", now, (ep.id,))
                                    for s, why in ex.skipped]
        try:
            cands, _raw = self.fact_extractor.extract(ep.content, ep.role)
            return cands, []
        except UnparseableAnswer as e:
            log.warning("fact extractor answer for %s could not be parsed: %s", ep.id, e.raw)
            return [], [Decision(DecisionOp.UNDECIDED, strip_speaker(ep.content), None, None, None,
                                 f"extractor answer unparseable: {e.why}", now, (ep.id,), e.raw)]

    def _sentences(self, text: str) -> list[str]:
        split = getattr(self.tokenizer, "sentences", None)
        return split(text) if split else [text]

    def _consolidate_episode(self, ep: MemoryRecord, now: datetime) -> list[Decision]:
        if ep.role != "user":  # assistant turns never become facts
            ep.consolidated = True
            self.store.update(ep)
            return []
        cands, logged = self._extract(ep, now)
        out = logged + [self._integrate(c, ep, now) for c in cands]
        if any(d.op is DecisionOp.UNDECIDED for d in out):
            ep.metadata["undecided_attempts"] = ep.metadata.get("undecided_attempts", 0) + 1
        else:
            ep.consolidated = True  # else left for a retry once the model answers properly
        self.store.update(ep)
        return out

    def _active_facts(self, project: str) -> list[MemoryRecord]:
        facts = self.store.records(RecordFilter(project=project, kinds=(MemoryKind.FACT,), statuses=(ACTIVE,)))
        return sorted(facts, key=lambda r: (r.created_at, r.id), reverse=True)

    def _integrate(self, cand: FactCandidate, ep: MemoryRecord, now: datetime) -> Decision:
        tokens = self.tokenizer.tokens(cand.content)
        vec = self._embed_one(cand.content)
        subject = ep.metadata.get("subject", "user")
        if cand.about:  # "우리 언니는 은행에 다녀" is the sister's job, not the user's
            subject = f"{subject}/{cand.about}"
        active = [f for f in self._active_facts(ep.project) if _related(f, subject, cand)]
        distance = None
        sims = self.store.embeddings([f.id for f in active]) @ vec if active else []
        if active:
            distance = round(float(1.0 - sims.max()), 6)
        negated = contradiction.is_negated(cand.content)
        for f in active:
            if _jaccard(tokens, self._content_tokens(f)) >= self.config.dedup_jaccard and contradiction.is_negated(f.content) == negated:
                self._add_provenance(f, ep, now)
                return Decision(DecisionOp.NOOP, cand.content, None, f.id, distance, "near-duplicate", now, (ep.id,))
        attr = contradiction.attribute(cand.attribute) if cand.attribute else None
        values = contradiction.value_tokens(cand.content, tokens, attr, self.tokenizer.tokens)
        existing = [FactView(f.id, f.content, f.attribute, frozenset(f.metadata.get("values", ())), float(s)) for f, s in zip(active, sims)]
        try:
            verdict = self.contradiction_filter.judge(cand.content, attr, values, existing)
        except UnparseableAnswer as e:
            log.warning("contradiction filter answer could not be parsed: %s", e.raw)
            return Decision(DecisionOp.UNDECIDED, cand.content, None, None, distance, f"filter answer unparseable: {e.why}",
                            now, (ep.id,), e.raw)
        if verdict.op == "reaffirm":
            old = self.store.get(verdict.target_id)
            self._add_provenance(old, ep, now)
            return Decision(DecisionOp.NOOP, cand.content, None, old.id, distance, verdict.reason, now, (ep.id,))
        if verdict.op == "delete":
            old = self.store.get(verdict.target_id)
            self._retire(old, now, successor=None, reason=verdict.reason, episode_id=ep.id)
            return Decision(DecisionOp.DELETE, cand.content, None, old.id, distance, verdict.reason, now, (ep.id,))
        fact = MemoryRecord(
            id=self._new_id("fact", cand.content, now, ep.project), kind=MemoryKind.FACT, content=cand.content, created_at=now, updated_at=now,
            last_accessed=now, project=ep.project, session=ep.session, role="user", tokens=tokens + self._label_tokens(attr),
            entities=sorted(set(self.tokenizer.nouns(cand.content))), importance=ep.importance,
            memory_class=cand.memory_class, valid_from=ep.created_at, provenance=[ep.id],
            attribute=cand.attribute, value=" ".join(sorted(values)) or None,
            metadata={"values": sorted(values), "extractor": getattr(self.fact_extractor, "name", "heuristic"),
                      "subject": subject, "source_ids": _source_ids(ep)},
        )
        when = event_windows(cand.content, ep.created_at)  # resolved against when it was said, not now
        if when:
            fact.metadata["when"] = to_json(when)
        if verdict.op == "refine":
            fact.metadata["refines"] = verdict.target_id
        self.store.put(fact, vec)
        self._index_entities(fact)
        self.store.graph.add_cooccurrence(fact.entities)
        if verdict.op == "supersede":
            old = self.store.get(verdict.target_id)
            fact.supersedes = old.id
            self.store.update(fact)
            self._retire(old, now, successor=fact.id, reason=verdict.reason, episode_id=ep.id)
            return Decision(DecisionOp.UPDATE, cand.content, fact.id, old.id, distance, verdict.reason, now, (ep.id,))
        return Decision(DecisionOp.ADD, cand.content, fact.id, verdict.target_id, distance, verdict.reason, now, (ep.id,))

    def _label_tokens(self, attr: contradiction.Attribute | None) -> list[str]:
        return list(label_tokens(attr.name, self.tokenizer)) if attr is not None else []

    def _content_tokens(self, fact: MemoryRecord) -> list[str]:
        """A fact's own tokens, without the attribute labels appended to them for
        indexing (facts written before labels existed have none to strip)."""
        labels = list(label_tokens(fact.attribute, self.tokenizer)) if fact.attribute else []
        return fact.tokens[: -len(labels)] if labels and fact.tokens[-len(labels):] == labels else fact.tokens

    def _add_provenance(self, fact: MemoryRecord, ep: MemoryRecord, now: datetime) -> None:
        fact.provenance = sorted(set(fact.provenance) | {ep.id})
        fact.metadata["source_ids"] = sorted(set(fact.metadata.get("source_ids", [])) | set(_source_ids(ep)))
        fact.updated_at = now
        self.store.update(fact)

    def _retire(self, old: MemoryRecord, now: datetime, *, successor: str | None, reason: str, episode_id: str) -> None:
        """Supersede, never destroy: the old fact keeps its content, gains an end."""
        old.status = SUPERSEDED
        old.valid_to = now
        old.superseded_by = successor
        old.updated_at = now
        old.metadata["superseded_reason"] = reason
        old.metadata["superseded_by_episode"] = episode_id
        self.store.update(old)
        for ep_id in old.provenance:  # what was said stays, but no longer reads as current
            ep = self.store.get(ep_id)
            if ep is not None and ep.kind is MemoryKind.EPISODE:
                ep.metadata["stale_fact"] = old.id
                self.store.update(ep)

    # ------------------------------------------------------------------ recall
    def recall(
        self,
        *,
        query: str,
        top_k: int = 10,
        project: str = "default",
        now: datetime | None = None,
        kinds: Sequence[MemoryKind] | None = None,
    ) -> RecallResult:
        """Hybrid recall of what is currently believed; strengthens what it returns."""
        now = ensure_aware(now)
        flt = RecordFilter(project=project, kinds=tuple(kinds) if kinds else None, statuses=(ACTIVE,), created_before=now)
        return self._recall(query, top_k, flt, now, strengthen=self.config.strengthen)

    def recall_at(self, *, query: str, at: datetime, top_k: int = 10, project: str = "default") -> RecallResult:
        """What was believed at ``at``: superseded facts count if valid then. Read-only."""
        at = ensure_aware(at)
        flt = RecordFilter(project=project, statuses=(ACTIVE, SUPERSEDED), created_before=at, valid_at=at)
        return self._recall(query, top_k, flt, at, strengthen=False)

    def _recall(self, query: str, top_k: int, flt: RecordFilter, now: datetime, *, strengthen: bool) -> RecallResult:
        check_query(query, top_k)
        with self._lock:
            self._check_open()
            ranked, timings = self.pipeline.run(query, top_k, flt, now)
            hits = []
            for r, s, members, lead in ranked:
                if strengthen:
                    r.recall_count += 1
                    r.last_accessed = now
                    if r.status == ARCHIVED:  # recalled again: the faded memory is back in use
                        r.status = ACTIVE
                        r.metadata["revived_at"] = now.isoformat()
                    self.store.update(r)
                    if self.config.graph and r.kind is MemoryKind.FACT:
                        self.store.graph.reinforce(r.entities)
                hits.append(_hit(r, s, members, lead))
            if strengthen and hits:
                self._commit()
            return RecallResult(query=query, hits=tuple(hits), timings_ms=timings)

    # ------------------------------------------------------------------ lifecycle
    def apply_decay(self, *, now: datetime | None = None, _commit: bool = True) -> int:
        """Archive (soft-delete) memories whose strength fell below the threshold."""
        now = ensure_aware(now)
        n = 0
        with self._lock:
            for r in list(self.store.records(RecordFilter(statuses=(ACTIVE,), created_before=now))):
                s = retention(r.memory_class, r.importance, r.recall_count, r.last_accessed, now, self.config.decay_params)
                if should_archive(s, r.memory_class, self.config.decay_params):
                    r.status = ARCHIVED
                    r.metadata["archived_at"] = now.isoformat()
                    r.metadata["strength_at_archive"] = round(s, 6)
                    r.updated_at = now
                    self.store.update(r)
                    n += 1
            if n:
                self.store.append_log([{"op": "ARCHIVE", "count": n, "at": now.isoformat()}])
            if _commit:
                self.store.commit()
        return n

    def strength(self, memory_id: str, *, now: datetime | None = None) -> float:
        r = self._require(memory_id)
        return retention(r.memory_class, r.importance, r.recall_count, r.last_accessed, ensure_aware(now), self.config.decay_params)

    def get(self, memory_id: str) -> RecallHit | None:
        r = self.store.get(memory_id)
        return _hit(r, 0.0) if r else None

    def _require(self, memory_id: str) -> MemoryRecord:
        r = self.store.get(memory_id)
        if r is None:
            raise KeyError(f"no memory with id {memory_id!r}")
        return r

    def history(self, *, memory_id: str) -> list[RecallHit]:
        """Every version of a fact, oldest first, following supersede links."""
        r = self._require(memory_id)
        while r.supersedes and self.store.get(r.supersedes):
            r = self.store.get(r.supersedes)
        chain = [r]
        while r.superseded_by and self.store.get(r.superseded_by):
            r = self.store.get(r.superseded_by)
            chain.append(r)
        return [_hit(x, 0.0) for x in chain]

    def facts(self, *, project: str = "default", include_inactive: bool = False) -> list[RecallHit]:
        statuses = None if include_inactive else (ACTIVE,)
        recs = self.store.records(RecordFilter(project=project, kinds=(MemoryKind.FACT,), statuses=statuses))
        return [_hit(r, 0.0) for r in sorted(recs, key=lambda r: (r.created_at, r.id))]

    def edit(self, *, memory_id: str, content: str, now: datetime | None = None) -> str:
        """A user's correction: a new version supersedes the old (auditable)."""
        now = ensure_aware(now)
        with self._lock:
            old = self._require(memory_id)
            if old.status != ACTIVE:
                raise ValueError(f"{memory_id} is {old.status}; edit the current version")
            attr = contradiction.attribute(old.attribute) if old.kind is MemoryKind.FACT and old.attribute else None
            labels = self._label_tokens(attr)
            new = replace(old, id=self._new_id(old.id.split("_")[0], content, now, old.project), content=content, tokens=self.tokenizer.tokens(content) + labels,
                          entities=sorted(set(self.tokenizer.nouns(content))), created_at=now, updated_at=now,
                          valid_from=now, valid_to=None, supersedes=old.id, superseded_by=None, recall_count=0,
                          metadata={**old.metadata, "edited_by_user": True})
            self.store.put(new, self._embed_one(content))
            self._index_entities(new)
            self._retire(old, now, successor=new.id, reason="edited by user", episode_id="user-edit")
            self.store.append_log([{"op": "EDIT", "target": old.id, "new": new.id, "at": now.isoformat()}])
            self.store.commit()
            return new.id

    def forget(self, *, memory_id: str | None = None, project: str | None = None, everything: bool = False) -> int:
        """Hard delete on the user's explicit request; the audit log keeps the id, not the text."""
        if sum(x is not None and x is not False for x in (memory_id, project, everything or None)) != 1:
            raise ValueError("forget needs exactly one of memory_id=, project= or everything=True")
        with self._lock:
            self._check_open()
            if memory_id is not None:
                targets = [self._require(memory_id)]
            else:
                targets = list(self.store.records(RecordFilter(project=project, statuses=None)))
            for r in targets:
                self._unindex_entities(r)
                self.store.delete(r.id)
            self.store.append_log([{"op": "FORGET", "ids": [r.id for r in targets], "at": ensure_aware(None).isoformat()}])
            self.store.commit()
            return len(targets)

    def audit_log(self) -> list[dict[str, Any]]:
        return self.store.log()

    def neighbors(self, *, entity: str, limit: int = 10) -> list[tuple[str, float]]:
        return self.store.graph.neighbors(entity, limit)

    def backup(self, *, path: str) -> str:
        """A consistent copy of the durable store at ``path``."""
        with self._lock:
            dest = Path(path).expanduser()
            dest.parent.mkdir(parents=True, exist_ok=True)
            self.store.backup_to(str(dest))
            return str(dest)

    @classmethod
    def open_reindexing(cls, path_or_store: str | Path | StoragePort, *, embedder: Embedder, **kwargs: Any) -> "MemorySystem":
        """Open a store written with another embedder and re-embed everything."""
        from .stores.json_store import LocalStore

        store = LocalStore(path_or_store) if isinstance(path_or_store, (str, Path)) else path_or_store
        stored = store.meta().get("embedder") or {}
        if stored and (stored.get("name"), stored.get("dim")) != (embedder.name, embedder.dim):
            store.rebind_embedder(embedder.name, embedder.dim)
            system = cls(store=store, embedder=embedder, **kwargs)
            system.reindex(embedder)
            return system
        return cls(store=store, embedder=embedder, **kwargs)

    def reindex(self, embedder: Embedder, *, batch_size: int = 64, progress: Callable[[int, int], None] | None = None) -> int:
        """Re-embed every memory with another embedder (e.g. after a dimension change)."""
        with self._lock:
            recs = list(self.store.records())
            self.store.rebind_embedder(embedder.name, embedder.dim)
            for i in range(0, len(recs), batch_size):
                chunk = recs[i:i + batch_size]
                vecs = embedder.embed_passages([index_text(r.content, r.metadata.get("context")) for r in chunk])
                for r, v in zip(chunk, vecs):
                    self.store.set_embedding(r.id, v)
                if progress:
                    progress(min(i + batch_size, len(recs)), len(recs))
            self.embedder = embedder
            self.pipeline.embedder = embedder
            self.store.append_log([{"op": "REINDEX", "embedder": embedder.name, "dim": embedder.dim, "count": len(recs),
                                    "at": ensure_aware(None).isoformat()}])
            self.store.commit()
            return len(recs)

    # ------------------------------------------------------------------ background consolidation
    def start_consolidation(self, interval_s: float = 1800.0) -> None:
        """Run ``consolidate`` every ``interval_s`` seconds until stopped. Never automatic."""
        if interval_s <= 0:
            raise ValueError("interval_s must be positive")
        with self._lock:
            self.stop_consolidation()
            self._timer_interval = interval_s
            self._schedule()

    def _schedule(self) -> None:
        self._timer = threading.Timer(self._timer_interval, self._tick)
        self._timer.daemon = True
        self._timer.start()

    def _tick(self) -> None:
        try:
            self.consolidate()
        except Exception:  # keep the timer alive, but never silently
            log.exception("background consolidation failed")
        with self._lock:
            if self._timer is not None and not self._closed:
                self._schedule()

    def stop_consolidation(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    @property
    def consolidation_running(self) -> bool:
        return self._timer is not None

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self.stop_consolidation()
            self.store.close()
            self._closed = True

    def __enter__(self) -> "MemorySystem":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_SAID_OF_ONESELF = re.compile(r"^\s*(?:(?:i|i'm|i've|my)\b|(?:나|저|난|전|내가|제가)(?:\s|는|도|가))", re.I)


def _related(fact: MemoryRecord, subject: str, cand: FactCandidate) -> bool:
    """A fact the new one may update: the same subject's, or one that names the
    person the new one is about ("I live with a roommate, Kev" / "Kev moved out"),
    or, when the new one's subject was not found, whose person it names."""
    theirs = str(fact.metadata.get("subject", "user"))
    if theirs == subject:
        return True
    if cand.about and cand.about.lower() in fact.content.lower():
        return True
    who = theirs.split("/", 1)[1] if "/" in theirs else None
    if cand.about or not who or who.lower() not in cand.content.lower():
        return False  # the new fact is about someone else ("Jake's girlfriend"), or does not name them
    # "나 요가 등록했어 민지 따라서": said of oneself, naming a friend; 민지's facts are hers
    return not _SAID_OF_ONESELF.match(cand.source_sentence or cand.content)


def _source_ids(r: MemoryRecord) -> list[str]:
    """Caller-side ids (e.g. a dataset's turn id) passed as metadata["source_id"]."""
    sid = r.metadata.get("source_id")
    return [str(sid)] if sid is not None else list(r.metadata.get("source_ids", []))


def _hit(r: MemoryRecord, score: float, members: Sequence[MemoryRecord] = (), lead: int = 0) -> RecallHit:
    """``members``: what the hit stands for in a recall (a fact's folded turns,
    a superseded turn it now answers), listed in ``covers``; their ids join the
    hit's own in ``source_ids``, after them, except the first ``lead`` members,
    which matched the query better than the hit itself and so come first."""
    first = [sid for m in members[:lead] for sid in _source_ids(m)]
    rest = [sid for m in members[lead:] for sid in _source_ids(m)]
    sources = list(dict.fromkeys([*first, *_source_ids(r), *rest]))
    return RecallHit(
        id=r.id, kind=r.kind, content=r.content, score=float(score), created_at=r.created_at, updated_at=r.updated_at,
        provenance=tuple(r.provenance),
        metadata=MappingProxyType({"status": r.status, "role": r.role, "session": r.session, "project": r.project, "attribute": r.attribute,
                  "memory_class": r.memory_class, "recall_count": r.recall_count, "valid_from": r.valid_from,
                  "valid_to": r.valid_to, "supersedes": r.supersedes, "superseded_by": r.superseded_by,
                  "subject": r.metadata.get("subject", "user"), "source_ids": tuple(sources),
                  "covers": tuple(m.id for m in members), "when": tuple(tuple(w) for w in r.metadata.get("when", ()))}),
    )


def _decision_json(d: Decision) -> dict[str, Any]:
    return {"op": d.op.value, "candidate": d.candidate, "fact_id": d.fact_id, "target_id": d.target_id,
            "distance": d.distance, "reason": d.reason, "at": d.at.isoformat(), "episode_ids": list(d.episode_ids), "raw": d.raw}
