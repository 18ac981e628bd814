"""MemorySystem: the engine that encodes, recalls, consolidates and forgets.

It owns the cognition (gate, fusion, activation, decay, supersede) and talks
to storage only through the narrow ``StoragePort``, so every store reaches
the same behaviour. Time is always an argument (``now``), defaulting to the
real clock; a recall never sees memories created after its ``now``.
"""
from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .cognition.centring import Centre, background_centres
from .cognition.rerank import NoopReranker, Reranker
from .cognition.tokenize import KiwiTokenizer, Tokenizer
from .config import EngineConfig
from .contract import (
    decision_json,
    InvalidInput,
    ConsolidationReport,
    Decision,
    EncodeResult,
    ImportanceScore,
    MemoryKind,
    RecallResult,
    Role,
    Turn,
    as_turn,
)
from .embedders.base import IMPORT_BATCH, Embedder, check_shape, embed_in_batches
from .llm.contradiction_filter import ContradictionFilter, HeuristicContradictionFilter, StatementContradictionFilter
from .llm.extractor import LLMFactExtractor
from .llm.forget_verifier import ForgetVerifier
from .llm.reflector import LLMReflector
from .llm.summarizer import LLMSummarizer
from .consolidation import Consolidator
from .encoding import Encoder
from .hits import to_hit
from .ownership import OwnerControls
from .review import UpdateReview
from .hierarchy import Hierarchy
from .hgvm_controls import HgvmControls
from .lifecycle import LifecycleControls
from .switch_controls import SwitchControls
from .memory_index import MemoryIndex
from .recall.pipeline import RecallPipeline
from .reflection import Reflector
from .summaries import TopicSummaries
from .validate import check_content, check_kinds, check_metadata, check_name, check_query, check_role, check_turns
from .records import ACTIVE, ARCHIVED, SUPERSEDED, content_id, ensure_aware
from .stores.port import IdTakenError, RecordFilter, StoragePort
from .stale_retry import again_when_stale

log = logging.getLogger("naia_memory")


class MemorySystem(OwnerControls, UpdateReview, LifecycleControls, SwitchControls, HgvmControls):
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
        forget_verifier: ForgetVerifier | None = None,
        summarizer: LLMSummarizer | None = None,
        reflector: LLMReflector | None = None,
        enabled: bool = True,
        name: str = "naia",
    ):
        """``forget_verifier``: the model ``forget_about`` asks (none: it
        refuses). ``summarizer`` / ``reflector``: a model that writes topic
        summaries / proposes reflections (none: the offline extractive summary
        and pattern finder); both are checked before anything is kept.
        ``enabled=False``: memory stays off (nothing encoded, nothing
        recalled) until the host calls ``enable()``."""
        self.name = name
        self.forget_verifier = forget_verifier
        self.store = store
        self.embedder = embedder
        self.tokenizer = tokenizer or KiwiTokenizer()
        self.config = config or EngineConfig()
        judge = contradiction_filter or (
            StatementContradictionFilter(self.tokenizer) if self.config.fact_rules == "statements" else HeuristicContradictionFilter())
        self.reranker = reranker or NoopReranker()
        self._lock = threading.RLock()
        # memory on/off and incognito: held by encode and encode_many (whose turns are worked out under one
        # setting), not by consolidation, so "stop remembering" never waits behind a model call
        self._switch_lock = threading.RLock()
        # memory on/off and incognito: what the store's log says (switch_controls, read once the encoder is made);
        # enabled=False is this process's own
        self._process_off = not enabled
        self._owed_switches: list[dict[str, Any]] = []
        self._closing = False
        self._timer: threading.Timer | None = None
        self._timer_interval: float | None = None
        self._closed = False
        store.bind_embedder(embedder.name, embedder.dim)
        self.index = MemoryIndex(store.records())
        self.hierarchy = Hierarchy(store, self.config, embedder.dim)
        self.pipeline = RecallPipeline(store=store, embedder=embedder, tokenizer=self.tokenizer, config=self.config,
                                       reranker=self.reranker, entity_index=self.index.entity, route=self.hierarchy.route)
        self.encoder = Encoder(store=store, tokenizer=self.tokenizer, config=self.config, index=self.index, new_id=self._new_id,
                               place=self.hierarchy.place, unplace=self.hierarchy.unplace)
        self.consolidator = Consolidator(store=store, tokenizer=self.tokenizer, config=self.config, index=self.index,
                                         contradiction_filter=judge, fact_extractor=fact_extractor,
                                         embed_one=self._embed_one, new_id=self._new_id, place=self.hierarchy.place,
                                         unplace=self.hierarchy.unplace,
                                         background=self._background if self.config.slot_centring else None,
                                         embed_many=self._embed_many)
        self.summaries = TopicSummaries(store=store, tokenizer=self.tokenizer, config=self.config, index=self.index,
                                        hierarchy=self.hierarchy, new_id=self._new_id, embed_one=self._embed_one,
                                        writer=summarizer)
        self.reflector = Reflector(store=store, tokenizer=self.tokenizer, config=self.config, index=self.index,
                                   new_id=self._new_id, embed_one=self._embed_one, proposer=reflector)
        self._place_unplaced()
        self._id_counter = len(store)
        self._read_switches()

    # the consolidator owns these; they stay settable here (swap in a model at run time)
    @property
    def fact_extractor(self) -> LLMFactExtractor | None:
        return self.consolidator.fact_extractor

    @fact_extractor.setter
    def fact_extractor(self, value: LLMFactExtractor | None) -> None:
        self.consolidator.fact_extractor = value

    @property
    def contradiction_filter(self) -> ContradictionFilter:
        return self.consolidator.contradiction_filter

    @contradiction_filter.setter
    def contradiction_filter(self, value: ContradictionFilter) -> None:
        self.consolidator.contradiction_filter = value

    # ------------------------------------------------------------------ helpers
    def _new_id(self, prefix: str, content: str, now: datetime, project: str) -> str:
        """Deterministic ids (same inputs in the same order, same ids), so
        ties broken on id rank the same in every rerun."""
        key = getattr(self.store, "id_key", lambda: None)()
        while True:
            self._id_counter += 1
            rid = f"{prefix}_{content_id(f'{project}|{now.isoformat()}|{content}|{self._id_counter}', key)}"
            if self.store.get(rid) is None:
                return rid

    def _refuse_closed(self) -> None:
        if self._closed:
            raise RuntimeError("this MemorySystem is closed")

    def _check_open(self) -> None:
        """Every call passes here under the lock: refuse a closed system, and
        catch up with what another process wrote to a shared SQLite file (so a
        recall sees it and an id is never reused)."""
        self._refuse_closed()
        changed = getattr(self.store, "changed_elsewhere", None)
        if changed is not None and changed():
            self.store.refresh()
            self._caught_up()

    def _caught_up(self, *, commit: bool = True) -> None:
        """The engine's maps, read again after the store read its file (another
        process wrote it, a failed commit was dropped, a re-key or re-index
        took the write lock). ``commit=False``: the places given are saved by
        the caller's own commit (which holds the write lock till then)."""
        self.index.rebuild(self.store.records())
        self._place_unplaced(commit=commit)  # another process's memories may need a path (saved, not only held)
        self._read_switches()  # another process may have turned memory off or made a conversation incognito

    def _commit(self) -> None:
        """Commit the call's writes (unless the caller commits: ``autosave=False``),
        with any switch still owed since its own save failed or had to wait."""
        if getattr(self.store, "autosave", True):
            self._commit_with_owed()

    def _background(self, lang: str) -> Centre:
        return background_centres(self.embedder.name, self.embedder.dim, self.embedder.embed_passages)[lang]

    def _embed_many(self, texts: Sequence[str], batch_size: int = IMPORT_BATCH,
                    progress: Callable[[int, int], None] | None = None) -> np.ndarray:
        return embed_in_batches(self.embedder, texts, batch_size, progress)

    def _embed_one(self, text: str) -> np.ndarray:
        return self._embed_many([text])[0]

    def warm_up(self) -> None:
        """Load what the engine loads on first use (the Korean analyser, about
        1.4 s) so that a server's first turn, or an import's clock, does not pay it."""
        load = getattr(self.tokenizer, "warm_up", None)
        if load is not None:
            load()

    # ------------------------------------------------------------------ encode
    def score_importance(self, *, content: str, role: Role | str = Role.USER, project: str = "default",
                         overrides: Mapping[str, float] | None = None) -> ImportanceScore:
        check_content(content)
        check_name(project, "project")
        with self._lock:
            self._check_open()
            return self.encoder.score_importance(content, check_role(role), project, overrides)

    @again_when_stale
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
        check_name(session, "session", optional=True)
        check_name(project, "project")
        metadata = check_metadata(metadata)
        role_s = check_role(role)
        now = ensure_aware(now)
        with self._lock, self._switch_lock:
            self._check_open()
            key = (project, session)
            last = self.encoder.last_turn.get(key)
            previous = self.encoder.turn_before(key) if session is not None else None  # a retry indexes it the same way
            made: dict[str, np.ndarray] = {}

            def vector(text: str) -> np.ndarray:  # a retry below reuses it: one embedder call per turn
                if text not in made:
                    made[text] = self._embed_one(text)
                    # another process may have turned memory off or made this conversation incognito while the
                    # embedder ran (seconds, for a remote one): what the file says now decides
                    why = self._refused_now(session, project)
                    if why:
                        raise _KeptOut(why)
                return made[text]
            def attempt() -> EncodeResult:
                try:
                    return self.encoder.encode(content, role_s, session, project, now, metadata, importance, vector,
                                               previous)
                except BaseException:  # a turn not stored is not the next turn's context either
                    self._restore_last_turn(key, last)
                    raise
            try:
                try:
                    result = attempt()
                except IdTakenError:  # another process took this id a moment ago: read what it wrote, take the next
                    self._check_open()
                    result = attempt()
            except _KeptOut as e:  # (the turn before was put back by attempt(): a conversation now kept out carries none)
                self._apply_switches()
                return EncodeResult(False, None, str(e), None)
            if result.stored:
                try:
                    self._commit()
                except BaseException:  # not stored after all (the store reads its file again next call)
                    self._restore_last_turn(key, last)
                    raise
            return result

    def _restore_last_turn(self, key: tuple[str, str | None], last: str | None) -> None:
        if last is None:
            self.encoder.last_turn.pop(key, None)
        else:
            self.encoder.last_turn[key] = last

    @again_when_stale
    def encode_many(self, *, turns: Sequence[Turn | Mapping[str, Any]], project: str = "default", batch_size: int = IMPORT_BATCH,
                    progress: Callable[[int, int], None] | None = None) -> list[EncodeResult]:
        """Import a history at once: the same results as ``encode`` on each
        turn in order, but one embedder call per ``batch_size`` turns and one
        commit. Every turn is checked before anything is stored, and a failure
        part-way leaves the memory as it was before the call."""
        check_name(project, "project")
        items = check_turns([as_turn(t) for t in turns])
        roles = [check_role(t.role) for t in items]
        nows = [ensure_aware(t.now) for t in items]
        if batch_size <= 0:
            raise InvalidInput("batch_size must be positive")
        with self._lock, self._switch_lock:
            self._check_open()
            refused = [self.encoder.refused(t.session, project) for t in items]
            texts, before = self.encoder.index_texts(items, project)  # None: refused (memory off, incognito), never embedded
            todo = [i for i, x in enumerate(texts) if x is not None]
            row = dict(zip(todo, self._embed_many([texts[i] for i in todo], batch_size, progress)))
            self._check_open()  # a switch another process flipped while the embedder ran refuses its turns below
            last_turn, counter = dict(self.encoder.last_turn), self._id_counter

            def attempt() -> list[EncodeResult]:
                results: list[EncodeResult] = []
                try:
                    for i, t in enumerate(items):
                        why = refused[i]
                        if why is not None:  # refused when the call began (never embedded), even if let in since
                            results.append(EncodeResult(False, None, why, None))
                            continue
                        def vector(text: str, i: int = i) -> np.ndarray:
                            if text != texts[i]:  # the context was worked out the same way; if not, say so
                                raise RuntimeError(f"encode_many: turn {i} indexed as {text!r}, embedded as {texts[i]!r}")
                            return row[i]
                        results.append(self.encoder.encode(t.content, roles[i], t.session, project, nows[i], t.metadata, None, vector,
                                                           before[i]))
                    self._commit()
                except BaseException:
                    for r in results:
                        rec = self.store.get(r.id) if r.stored else None
                        if rec is not None:
                            self.hierarchy.remove(rec)  # its topic counted it: routing would search a topic of nothing
                            self.index.remove(rec)
                            self.store.delete(r.id)
                    self.encoder.last_turn, self._id_counter = last_turn, counter
                    end = getattr(self.store, "end_write", None)  # a shared SQLite file: its write lock is let go
                    if end is not None:
                        end()
                    raise
                return results
            try:
                return attempt()
            except IdTakenError:  # another process wrote one of these ids meanwhile: read what it wrote, again
                self._check_open()
                return attempt()

    # ------------------------------------------------------------------ consolidate
    @again_when_stale
    def consolidate(self, *, now: datetime | None = None, project: str | None = None,
                    progress: Callable[[int, int], None] | None = None) -> ConsolidationReport:
        """Turn unconsolidated user episodes into facts; supersede what changed.
        ``project``: only that project's waiting turns (a server's one user);
        ``progress(done, total)`` after each episode."""
        check_name(project, "project", optional=True)
        now = ensure_aware(now)
        with self._lock:
            self._check_open()
            if not self.config.consolidation:
                return ConsolidationReport(0, ())
            episodes = [e for e in self.consolidator.waiting(now) if project is None or e.project == project]
            decisions: list[Decision] = []
            try:
                self.consolidator.consolidate_all(episodes, now, progress, into=decisions)
                if self.config.summaries:
                    self.summaries.run(now, project, into=decisions)
                if self.config.reflection:
                    self.reflector.run(now, project, into=decisions)
                if self.config.decay:
                    self.apply_decay(now=now, _commit=False)
            except BaseException:  # a model failed part-way: what was written is logged and kept, not left unlogged
                if decisions:
                    self.store.append_log(decision_json(d) for d in decisions)
                    self._commit_with_owed()
                raise
            self.store.append_log(decision_json(d) for d in decisions)
            self._commit_with_owed()
            return ConsolidationReport(len(episodes), tuple(decisions))

    consolidate_now = consolidate

    # ------------------------------------------------------------------ recall
    def recall(
        self,
        *,
        query: str,
        top_k: int = 10,
        project: str = "default",
        now: datetime | None = None,
        kinds: Sequence[MemoryKind] | None = None,
        strengthen: bool | None = None,
    ) -> RecallResult:
        """Hybrid recall of what is currently believed; strengthens what it
        returns (``strengthen=False``: a look that changes nothing, as the CLI's search)."""
        check_name(project, "project")
        if strengthen is not None and not isinstance(strengthen, bool):  # "no" is a truthy string
            raise InvalidInput(f"strengthen must be true, false or None, got {strengthen!r}")
        now = ensure_aware(now)
        flt = RecordFilter(project=project, kinds=check_kinds(kinds), statuses=(ACTIVE,), created_before=now)
        return self._recall(query, top_k, flt, now, strengthen=self.config.strengthen if strengthen is None else strengthen)

    def recall_many(
        self,
        *,
        queries: Sequence[str],
        top_k: int = 10,
        project: str = "default",
        now: datetime | None = None,
        kinds: Sequence[MemoryKind] | None = None,
    ) -> list[RecallResult]:
        """``recall`` for each query in order (each strengthens what it
        returns before the next runs), with the queries embedded up front."""
        if isinstance(queries, str) or not isinstance(queries, Sequence):
            raise InvalidInput("queries must be a list of strings")
        check_query("?", top_k)  # the same limit with no query as with many
        for q in queries:
            check_query(q, top_k)
        check_name(project, "project")
        now = ensure_aware(now)
        flt = RecordFilter(project=project, kinds=check_kinds(kinds), statuses=(ACTIVE,), created_before=now)
        with self._lock:
            self._check_open()  # a closed system refuses before any query goes to the embedder
        if not queries:
            return []
        embed_many = getattr(self.embedder, "embed_queries", None)
        # memory off: nothing is recalled, so no query goes to the embedder (which may be a service elsewhere)
        needs_vector = (self.config.vector or self.config.mmr) and self.encoder.enabled
        if needs_vector and embed_many is not None:  # one row per query, or an error: never a query silently dropped
            vecs = list(check_shape(embed_many(list(queries)), len(queries), self.embedder.dim, self.embedder.name))
        elif needs_vector:
            vecs = [self.embedder.embed_query(q) for q in queries]
        else:
            vecs = [None] * len(queries)
        return [self._recall(q, top_k, flt, now, strengthen=self.config.strengthen, q_vec=v) for q, v in zip(queries, vecs)]

    def recall_at(self, *, query: str, at: datetime, top_k: int = 10, project: str = "default") -> RecallResult:
        """What was believed at ``at``: superseded facts count if valid then. Read-only."""
        check_name(project, "project")
        at = ensure_aware(at)
        # faded since is not false then: an archived fact valid at ``at`` was believed at ``at``
        flt = RecordFilter(project=project, statuses=(ACTIVE, ARCHIVED, SUPERSEDED), created_before=at, valid_at=at)
        return self._recall(query, top_k, flt, at, strengthen=False)

    @again_when_stale
    def _recall(self, query: str, top_k: int, flt: RecordFilter, now: datetime, *, strengthen: bool,
                q_vec: np.ndarray | None = None) -> RecallResult:
        check_query(query, top_k)
        with self._lock:
            self._check_open()
            if not self.encoder.enabled:  # memory off: nothing remembered is used either
                return RecallResult(query=query, hits=(), timings_ms={"memory_off": 1.0})
            ranked, timings = self.pipeline.run(query, top_k, flt, now, q_vec=q_vec)
            hits = []
            for r, s, members, lead in ranked:
                if strengthen:
                    r.recall_count += 1
                    # a recall dated before the last one (time passed in out of order) must not
                    # move the last use back: one more recall would leave the memory weaker
                    r.last_accessed = max(r.last_accessed, now)
                    if r.status == ARCHIVED and not _before(now, r.metadata.get("archived_at")):
                        r.status = ACTIVE  # recalled again: the faded memory is back in use (not by a look at before it faded)
                        r.metadata["revived_at"] = now.isoformat()
                    self.store.update(r)
                    if self.config.graph and r.kind is MemoryKind.FACT:
                        self.store.graph.reinforce(r.entities)
                hits.append(to_hit(r, s, members, lead))
            if strengthen and hits:
                self._commit()
            return RecallResult(query=query, hits=tuple(hits), timings_ms=timings)

    def close(self) -> None:
        with self._switch_lock:
            self._closing = True  # a closing switch from here on is refused, not said done and lost
        with self._lock:
            if self._closed:
                return
            self.stop_consolidation()
            self._save_owed_at_close()  # (under the lock: a waiting save of a switch finds the system closed)
            self.store.close()
            self._closed = True

    def __enter__(self) -> "MemorySystem":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _KeptOut(Exception):
    """A turn refused after it was embedded: a switch flipped meanwhile (the reason)."""


def _before(now: datetime, stamp: object) -> bool:
    """``now`` earlier than an ISO time stored in metadata (False when there is none)."""
    return isinstance(stamp, str) and now < datetime.fromisoformat(stamp)

