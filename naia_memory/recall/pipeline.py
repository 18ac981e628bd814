"""The recall pipeline: candidates -> fusion -> signals -> cognitive adjustment
-> one slot per source -> rerank -> diversify.

Each stage is a small pure function (``fusion``, ``signals``, ``adjust``,
``collapse``, ``cognition.mmr``) switched and sized by the engine's one
recipe object, ``EngineConfig``; this module only fetches what they need from
the store and hands the ranked list from one to the next.
"""
from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, timezone
from typing import Callable, Mapping

import numpy as np

from ..cognition.decay import retention, retention_of_classes
from ..cognition.graph import spreading_activation
from ..cognition.mmr import mmr_matrix
from ..cognition.rerank import Reranker
from ..cognition.statements import morphemes
from ..cognition.tokenize import Tokenizer
from ..config import EngineConfig
from ..contract import MemoryKind
from ..embedders.base import Embedder, check_shape
from ..records import ACTIVE, ARCHIVED, SUMMARY, SUPERSEDED, MemoryRecord, outgrown
from ..stores.port import RecordFilter, StoragePort
from .adjust import AdjustWeights, adjustment_many
from .collapse import collapse_groups, same_text
from .columns import Columns, speaker_of
from .fusion import DECIMALS, fuse
from .profile import is_profile_request, profile_score
from .present import NewerFirst, asks_about_now, asks_about_past
from .signals import named_attributes, named_speakers
from .relative_time import from_json, relative_windows
from .when import date_windows, matches_time


# a ranked result: the record, its score, the memories it stands for (best first),
# and how many of those matched the query better than the record itself (they
# come first among its sources: "this fact, because of that turn")
Ranked = tuple[MemoryRecord, float, tuple[MemoryRecord, ...], int]


def _stamp(r: MemoryRecord) -> datetime:
    return r.valid_from or r.created_at


def _after(head: list[Ranked], tail: list[Ranked], top_k: int) -> list[Ranked]:
    """A profile's facts, then similarity hits they do not already cover,
    scaled to rank below the last fact (scores keep falling down the list)."""
    covered = {r.id for r, *_ in head} | {p for r, *_ in head for p in r.provenance} | {m.id for _, _, ms, _ in head for m in ms}
    said = {same_text(r.content) for r, *_ in head}  # no sentence twice: a turn repeating a fact word for word
    rest = [h for h in tail if h[0].id not in covered and not (set(h[0].provenance) & covered)
            and same_text(h[0].content) not in said]
    if not head or not rest:
        return (head + rest)[:top_k]
    floor, top = head[-1][1], max(h[1] for h in rest)
    scale = min(1.0, 0.999 * floor / top) if top > 0 else 1.0
    return (head + [(r, s * scale, ms, n) for r, s, ms, n in rest])[:top_k]


def _rank(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    rounded = np.round(np.fromiter(scores.values(), dtype=np.float64, count=len(scores)), DECIMALS).tolist()
    return sorted(zip(scores, rounded), key=lambda kv: (-kv[1], kv[0]))


class RecallPipeline:
    def __init__(self, *, store: StoragePort, embedder: Embedder, tokenizer: Tokenizer, config: EngineConfig,
                 reranker: Reranker, entity_index: Callable[[str], set[str]],
                 route: Callable[[str, np.ndarray | None], frozenset[str] | None] | None = None):
        self.route = route  # the hierarchy's routing (None: always flat)
        self.store = store
        self.embedder = embedder
        self.tokenizer = tokenizer
        self.config = config
        self.reranker = reranker
        self.entity_index = entity_index
        self._newer: NewerFirst | None = None  # set per query by _signals when it asks about now
        self._as_said = False  # set per query by _signals when it asks how things were

    def weights(self) -> AdjustWeights:
        c = self.config
        return AdjustWeights(decay=c.decay_weight, use=c.strengthen_weight, faded=c.faded_weight,
                             assistant=c.assistant_weight, max_adjust=c.max_adjust, stale_factor=c.stale_episode_weight)

    def run(self, query: str, top_k: int, flt: RecordFilter, now: datetime,
            q_vec: np.ndarray | None = None) -> tuple[list[Ranked], dict[str, float]]:
        """``q_vec``: the query already embedded (a batch of queries)."""
        cfg = self.config
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        if q_vec is None and (cfg.vector or cfg.mmr):
            q_vec = self.embedder.embed_query(query)
            timings["embed_query_ms"] = (time.perf_counter() - t0) * 1e3
        if q_vec is not None:  # a broken answer is an error, not a ranking of NaNs
            q_vec = check_shape(np.asarray(q_vec)[None, :], 1, self.embedder.dim, self.embedder.name)[0]
        t1 = time.perf_counter()
        cand_flt = flt
        if cfg.recall_faded and flt.statuses == (ACTIVE,):
            cand_flt = replace(flt, statuses=(ACTIVE, ARCHIVED))  # faded, not gone: a strong cue still reaches it
        if cfg.routing and self.route is not None and flt.project is not None:
            topics = self.route(flt.project, q_vec)  # None: no domain is close enough, search flat
            timings["routed"] = 0.0 if topics is None else 1.0
            if topics is not None:
                timings["routed_topics"] = float(len(topics))
                cand_flt = replace(cand_flt, topics=topics)
        q_tokens = self.tokenizer.tokens(query)
        if cfg.profile and is_profile_request(q_tokens):
            head, timings = self._profile(top_k, flt, now, timings, t1)
            if len(head) >= top_k:
                return head, timings
            # ask for enough that what the facts already cover can be skipped
            tail = self._search(query, q_tokens, q_vec, max(top_k + len(head), cfg.candidate_k), flt, cand_flt, now)
            return _after(head, tail, top_k), timings
        final = self._search(query, q_tokens, q_vec, top_k, flt, cand_flt, now)
        timings["search_ms"] = (time.perf_counter() - t1) * 1e3
        return final, timings

    def _search(self, query: str, q_tokens: list[str], q_vec, top_k: int, flt: RecordFilter, cand_flt: RecordFilter,
                now: datetime) -> list[Ranked]:
        """Candidates -> fusion -> signals -> adjustment -> one slot per source -> rerank -> MMR."""
        cfg = self.config
        # 1. candidates
        runs: dict[str, list[tuple[str, float]]] = {}
        if cfg.vector:
            runs["vector"] = self.store.vector_top_k(q_vec, cfg.candidate_k, cand_flt)
        if cfg.bm25:
            runs["bm25"] = self.store.keyword_top_k(q_tokens, cfg.candidate_k, cand_flt)
        if cfg.graph:
            runs["graph"] = self._graph_run(query, cand_flt)
        # 2. fusion into relevance in [0, 1]
        rel = fuse(runs, {"vector": cfg.vector_weight, "bm25": cfg.bm25_weight, "graph": cfg.graph_weight},
                   method=cfg.fusion, rrf_k=cfg.rrf_k)
        ids = list(rel)
        rs = [self.store.get(i) for i in ids]
        if any(r.derived for r in rs):  # a summary or reflection whose grounds changed says what no longer holds
            gone = {r.id for r in rs if outgrown(r, self.store.get, flt.valid_at)}
            if gone:
                rel = {i: s for i, s in rel.items() if i not in gone}
                ids, rs = list(rel), [r for r in rs if r.id not in gone]
        recs = dict(zip(ids, rs))
        cols = self._columns(ids, rs)
        # 3. query-side signals (relevance, not cognition), over arrays of the candidates
        score = self._signals(query, q_tokens, rs, cols, np.fromiter(rel.values(), dtype=np.float64, count=len(ids)), now)
        rel = dict(zip(ids, score.tolist()))
        # 4. cognitive adjustment, bounded
        adjusted = self._adjust(ids, cols, score, now, at=flt.valid_at)
        # 5. one slot per source
        groups = self._one_slot_per_source(rel, adjusted, recs, flt, cand_flt)[: cfg.candidate_k]
        members = {h: m for h, _, m in groups}
        scored = [(h, s) for h, s, _ in groups]
        # 6. rerank (no-op unless a reranker is injected)
        if cfg.reranker:
            scored = self.reranker.rerank(query, [(i, recs[i].content, s) for i, s in scored])
        # 7. diversify on relevance
        if cfg.mmr and len(scored) > 1:
            emb = self.store.embeddings([i for i, _ in scored])
            # a hit's score is then its marginal relevance at selection (never rises down the list)
            final = mmr_matrix(scored, emb @ emb.T, top_k, cfg.mmr_lambda)
        else:
            final = scored[:top_k]
        out = []
        for i, s in final:
            ms = members.get(i, ())
            own = adjusted.get(i, float("-inf"))
            out.append((recs[i], s, tuple(recs[m] for m in ms), sum(1 for m in ms if adjusted.get(m, float("-inf")) > own)))
        return out

    def _columns(self, ids: list[str], rs: list[MemoryRecord]) -> Columns:
        """The candidates' fields as arrays: gathered from the store's record
        cache when it keeps them, else read from the records."""
        gather = getattr(self.store, "candidate_columns", None)
        return gather(ids) if gather is not None else Columns.of_records(rs)

    def _signals(self, query: str, q_tokens: list[str], rs: list[MemoryRecord], cols: Columns, score: np.ndarray,
                 now: datetime) -> np.ndarray:
        """Speaker, attribute and date the query names; memories that only ask.
        ``score`` is the candidates' relevance (row i = ``rs[i]`` = ``cols`` row i);
        each signal multiplies the rows it applies to."""
        cfg = self.config
        self._newer = None
        self._as_said = False

        def boost(keep: np.ndarray, factor: float) -> np.ndarray:
            return np.where(keep, score * factor, score)

        named = named_speakers(query, cols.speakers())
        if cfg.speaker and cfg.speaker_weight and named:
            score = boost(cols.spoken_by(named), 1.0 + cfg.speaker_weight)
        if cfg.attribute and cfg.attribute_weight:
            attrs = named_attributes(q_tokens, self.tokenizer)
            if attrs:
                score = boost(cols.filed_under(attrs), 1.0 + cfg.attribute_weight)
        asked = date_windows(query, now.tzinfo or timezone.utc) + relative_windows(query, now) \
            if cfg.time or cfg.present or cfg.as_said else []
        morphs = morphemes(self.tokenizer, query) if cfg.present or cfg.as_said else ()
        # a question about how things were (a past tense, a time that is over) is answered by what was said
        # then: a turn whose fact a later one replaced is neither discounted nor folded under it ("today" is not over)
        self._as_said = cfg.as_said and (any(end <= now for _, end in asked) or asks_about_past(query, morphs))
        if cfg.present and cfg.present_weight and not named and not asked \
                and asks_about_now(query, morphs):
            self._newer = NewerFirst.of_stamps(cols.stamp, cfg.present_weight)
            score = score * self._newer.factors(cols.stamp)
        if cfg.time and cfg.time_weight:
            if asked:  # a question that names a date: the rare path reads the records
                score = boost(np.array([matches_time(r.valid_from or r.created_at, from_json(r.metadata.get("when")),
                                                     asked, cfg.time_grace_days) for r in rs], dtype=bool),
                              1.0 + cfg.time_weight)
        if cfg.question and cfg.question_weight:
            score = boost(cols.asks, 1.0 - cfg.question_weight)
        return score

    def _adjust(self, ids: list[str], cols: Columns, rel: np.ndarray, now: datetime,
                at: datetime | None = None) -> dict[str, float]:
        """Strength, use and validity over all candidates in one numpy pass.
        ``at`` (what was believed then): a turn is stale only if its fact was
        replaced by then (the rare path reads those few records)."""
        cfg = self.config
        if not ids:
            return {}
        strength = retention_of_classes(cols.memory_class, cols.class_names, cols.importance, cols.uses, cols.last,
                                        now.timestamp(), cfg.decay_params)
        stale = np.zeros_like(cols.stale) if self._as_said else cols.stale
        if at is not None and stale.any():
            stale = stale.copy()
            for j in np.flatnonzero(stale).tolist():
                fact = self.store.get(str(self.store.get(ids[j]).metadata.get("stale_fact", "")))
                stale[j] = fact is None or not fact.is_valid_at(at)
        mult = adjustment_many(strength, cols.uses, cols.archived, stale, cols.assistant,
                               self.weights(), decay=cfg.decay, strengthen=cfg.strengthen)
        score = rel * mult
        keep = (strength >= cfg.min_strength).tolist()
        return {i: s for i, s, k in zip(ids, score.tolist(), keep) if k}

    def _one_slot_per_source(self, rel: dict[str, float], adjusted: dict[str, float], recs: dict[str, MemoryRecord],
                             flt: RecordFilter, cand_flt: RecordFilter | None = None) -> list[tuple[str, float, tuple[str, ...]]]:
        """A fact stands for its turns; a turn whose fact was superseded is
        answered by the fact that replaced it (what is true now), and stays
        listed among that fact's sources (what was said then). ``cand_flt``:
        what the search may return (faded memories too); a successor that
        has faded since is still what holds now."""
        if not self.config.collapse:
            return [(i, s, ()) for i, s in _rank(adjusted)]
        adjusted = dict(adjusted)
        prov = {i: list(r.provenance) for i, r in recs.items() if i in adjusted and r.kind is MemoryKind.FACT}
        if not self._as_said:
            for i in [i for i in adjusted if "stale_fact" in recs[i].metadata]:
                # routing narrows which memories become candidates, not what answers for them
                wide = replace(cand_flt or flt, topics=None)
                head = (self._current_successor(recs[i].metadata["stale_fact"], wide) if flt.valid_at is None
                        else self._successor_at(recs[i].metadata["stale_fact"], flt.valid_at, wide))
                if head is not None:
                    recs.setdefault(head.id, head)
                    inherited = rel[i]
                    if self._newer is not None:  # a question about now: the successor counts as of its own time
                        inherited *= self._newer.factor(_stamp(head)) / self._newer.factor(_stamp(recs[i]))
                        if head.kind is MemoryKind.EPISODE:  # "it ended" answers now only if nothing newer states a value
                            inherited *= 1.0 - self.config.present_weight
                    adjusted[head.id] = max(adjusted.get(head.id, 0.0), inherited)
                    prov.setdefault(head.id, list(head.provenance)).append(i)
        ranked = _rank(adjusted)
        return collapse_groups(ranked, prov, {i: recs[i].content for i, _ in ranked})

    def _profile(self, top_k: int, flt: RecordFilter, now: datetime, timings: dict[str, float],
                 t1: float) -> tuple[list[Ranked], dict[str, float]]:
        """What is known about the user: current facts first, then uncovered user turns."""
        cfg = self.config
        kinds = flt.kinds or (MemoryKind.FACT, MemoryKind.EPISODE)
        scored: dict[str, float] = {}
        recs: dict[str, MemoryRecord] = {}
        for r in self.store.records(replace(flt, kinds=tuple(k for k in kinds if k in (MemoryKind.FACT, MemoryKind.EPISODE)))):
            if r.kind is MemoryKind.EPISODE and (r.role != "user" or "stale_fact" in r.metadata) \
                    or outgrown(r, self.store.get, flt.valid_at):
                continue
            strength = retention(r.memory_class, r.importance, r.recall_count, r.last_accessed, now, cfg.decay_params) if cfg.decay else 1.0
            recs[r.id] = r
            scored[r.id] = profile_score(r.memory_class, r.importance, strength, is_fact=r.kind is MemoryKind.FACT)
        # a broad question prefers summaries: each stands first for the facts it
        # summarises (and their turns), which it folds in as its sources
        folds = {i: [*r.metadata.get("summarizes", ()), *r.provenance] for i, r in recs.items()
                 if r.subtype == SUMMARY} if cfg.summaries_first else {}
        for i, parts in folds.items():
            best = max((scored[p] for p in parts if p in scored and p not in folds), default=None)
            if best is not None:
                scored[i] = round(best, DECIMALS) + 2 * 10 ** -DECIMALS
        ranked = _rank(scored)
        if cfg.collapse:
            prov = {i: folds.get(i, recs[i].provenance) for i, _ in ranked if recs[i].kind is MemoryKind.FACT}
            groups = collapse_groups(ranked, prov, {i: recs[i].content for i, _ in ranked})
        else:
            groups = [(i, s, ()) for i, s in ranked]
        timings["search_ms"] = (time.perf_counter() - t1) * 1e3
        timings["profile"] = 1.0
        return [(recs[i], s, tuple(recs[m] for m in ms), 0) for i, s, ms in groups[:top_k]], timings

    def _successor_at(self, fact_id: str, at: datetime, flt: RecordFilter) -> MemoryRecord | None:
        """What answered at ``at`` for a fact replaced some time: the version
        of its supersede chain valid then; None when the fact itself still
        held at ``at`` (its turn was not stale then) or no version did."""
        r, seen = self.store.get(fact_id), set()
        if r is None or r.is_valid_at(at):
            return None
        while r is not None and not r.is_valid_at(at) and r.superseded_by and r.id not in seen:
            seen.add(r.id)
            r = self.store.get(r.superseded_by)
        return r if r is not None and r.id != fact_id and r.is_valid_at(at) and flt.matches(r) else None

    def _current_successor(self, fact_id: str, flt: RecordFilter, seen: set[str] | None = None) -> MemoryRecord | None:
        """What answers now for a retired fact: the active end of its supersede
        chain, or, when the chain ended in a deletion ("I quit my job"), the
        turn that deleted it; None if the filter allows neither. That turn
        may itself have said a value replaced since ("단식도 그만뒀어. 그냥
        아무거나 먹고 살래", then "채식 시작했어"): then what replaced it answers."""
        seen = set() if seen is None else seen
        r = self.store.get(fact_id)
        while r is not None and r.status == SUPERSEDED and r.superseded_by and r.id not in seen:
            seen.add(r.id)
            r = self.store.get(r.superseded_by)
        if r is not None and r.status == SUPERSEDED and not r.superseded_by:
            seen.add(r.id)
            r = self.store.get(r.metadata.get("superseded_by_episode") or "")
            later = r.metadata.get("stale_fact") if r is not None else None
            if later and later not in seen:
                onward = self._current_successor(later, flt, seen)
                if onward is not None:
                    return onward
        # faded (archived) is still current: not recalled for a while is not replaced
        return r if r is not None and r.status != SUPERSEDED and flt.matches(r) else None

    def _graph_run(self, query: str, flt: RecordFilter) -> list[tuple[str, float]]:
        graph = self.store.graph
        seeds = {e: 1.0 for e in self.tokenizer.nouns(query) if e in graph.adjacency}
        if not seeds:
            return []
        act = spreading_activation(graph.adjacency, seeds, self.config.graph_decay, self.config.graph_hops)
        scores: dict[str, float] = {}
        for ent, a in sorted(act.items()):  # fixed order: float sums must not depend on hash seeds
            for rid in sorted(self.entity_index(ent)):
                scores[rid] = scores.get(rid, 0.0) + a
        allowed = [(rid, s) for rid, s in scores.items() if flt.matches(self.store.get(rid))]
        return sorted(allowed, key=lambda kv: (-kv[1], kv[0]))[: self.config.candidate_k]


__all__ = ["Ranked", "RecallPipeline", "speaker_of"]
