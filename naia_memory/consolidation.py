"""Consolidation: raw episodes become atomic facts, and a fact that changes
supersedes (or ends) the one it replaces, never silently overwrites it.

Each waiting user episode is split into statements (``cognition/facts.py``
and ``cognition/statements.py``, or an injected LLM extractor); each
candidate is compared with its nearest active facts (``_neighbours``) and
judged ADD / UPDATE / DELETE / NOOP by the contradiction filter (rules
offline, or an injected model, AIDA's four operations). Every decision is
returned for the audit log, including what was not a fact and why.
"""
from __future__ import annotations

import logging
from datetime import datetime
from typing import Callable, Iterator, Sequence

import numpy as np

from .cognition import contradiction
from .cognition.centring import Centre, centred_cosines, language
from .cognition.facts import FactCandidate, extract, extract_facts, said_text, speaker_in
from .cognition.tokenize import Tokenizer
from .config import EngineConfig
from .contract import Decision, DecisionOp, MemoryKind
from .llm.contradiction_filter import ContradictionFilter, FactView
from .llm.client import LLMError, clip
from .llm.extractor import RAW_KEPT, LLMFactExtractor, UnparseableAnswer
from .memory_index import MemoryIndex
from .recall.relative_time import to_json
from .recall.signals import label_tokens
from .recall.when import event_windows
from .records import ACTIVE, SUPERSEDED, MemoryRecord
from .stores.port import RecordFilter, StoragePort
from .subjects import named_person, person_of, related

log = logging.getLogger("naia_memory")


class Consolidator:
    def __init__(self, *, store: StoragePort, tokenizer: Tokenizer, config: EngineConfig, index: MemoryIndex,
                 contradiction_filter: ContradictionFilter, fact_extractor: LLMFactExtractor | None,
                 embed_one: Callable[[str], np.ndarray], new_id: Callable[[str, str, datetime, str], str],
                 place: Callable[[MemoryRecord, np.ndarray], None] | None = None,
                 unplace: Callable[[MemoryRecord, np.ndarray], None] | None = None,
                 background: Callable[[str], Centre] | None = None,
                 embed_many: Callable[[Sequence[str]], np.ndarray] | None = None):
        self.place = place  # the hierarchy gives a new fact its path before it is stored
        self.unplace = unplace  # ... and takes it back when the store refuses it
        self.background = background  # language -> what ordinary sentences share (cognition.centring.Centre)
        self.store = store
        self.tokenizer = tokenizer
        self.config = config
        self.index = index
        self.contradiction_filter = contradiction_filter
        self.fact_extractor = fact_extractor
        self.embed_one = embed_one
        # a batch's candidates in one embedder call (one round trip for a remote embedder)
        self.embed_many = embed_many or (lambda texts: np.stack([embed_one(t) for t in texts]))
        self.new_id = new_id
        self._ahead: _Lookahead | None = None  # set while consolidate_all runs
        self._refusal: LLMError | None = None  # the last turn the model refused in this run
        self._answered = False  # the model has answered some turn in this process: its settings work

    def waiting(self, now: datetime) -> list[MemoryRecord]:
        """Episodes said by ``now`` and not yet consolidated, oldest first."""
        eps = [r for r in (self.store.get(i) for i in self.index.pending)
               if r is not None and not r.consolidated and r.created_at <= now]
        return sorted(eps, key=lambda r: (r.created_at, r.id))

    def _extract(self, ep: MemoryRecord, now: datetime) -> tuple[list[FactCandidate], list[Decision]]:
        """Fact candidates, and the decisions logged for what did not become one."""
        speaker = speaker_in(ep.metadata)
        if self.fact_extractor is None:
            if self.config.fact_rules == "attributes":
                return extract_facts(ep.content, ep.role, self._sentences, speaker=speaker), []
            ex = extract(ep.content, ep.role, self._sentences, self.tokenizer, speaker)
            return list(ex.facts), [Decision(DecisionOp.SKIP, s, None, None, None, f"not a fact: {why}", now, (ep.id,))
                                    for s, why in ex.skipped]
        said = said_text(ep.content, speaker)  # the words, not who said them
        try:
            cands, raw = self.fact_extractor.extract(said, ep.role)
        except UnparseableAnswer as e:
            self._answered = True  # it answered, badly: the settings reach it
            log.warning("fact extractor answer for %s could not be parsed: %s", ep.id, e.raw)
            return [], [Decision(DecisionOp.UNDECIDED, said, None, None, None,
                                 f"extractor answer unparseable: {e.why}", now, (ep.id,), e.raw)]
        except LLMError as e:
            if not e.about_this_input:  # the server down, slow, or refusing every request: the run stops, all wait
                raise
            # this turn refused (too long for the model, say): the others go on, and it is tried again
            log.warning("fact extractor refused %s: %s", ep.id, e)
            self._refusal = e
            return [], [Decision(DecisionOp.UNDECIDED, said, None, None, None,
                                 f"model refused this turn: {e}", now, (ep.id,))]
        self._answered = True
        if not cands:  # as the rules log "not a fact", the model's "nothing here" is a decision with its answer
            return [], [Decision(DecisionOp.SKIP, said, None, None, None, "not a fact: the model found none",
                                 now, (ep.id,), clip(raw, RAW_KEPT))]
        return cands, []

    def _sentences(self, text: str) -> list[str]:
        split = getattr(self.tokenizer, "sentences", None)
        return split(text) if split else [text]

    def consolidate_all(self, episodes: list[MemoryRecord], now: datetime,
                        progress: Callable[[int, int], None] | None = None,
                        into: list[Decision] | None = None) -> list[Decision]:
        """Every waiting episode, in order, as ``consolidate_episode`` one by
        one would, but with the candidates' nearest facts found up front in
        one matrix product (``_Lookahead``) instead of one scan of the fact
        matrix per candidate. ``into``: each decision is appended there as it
        is made, so a caller whose judge fails part-way (a model server gone)
        still holds the decisions behind what was already written."""
        self._refusal = None
        plan = [(ep, *self._extract(ep, now)) if ep.role == "user" else (ep, [], []) for ep in episodes]
        if self._refusal is not None and not self._answered:
            # refused, and the server has answered no turn yet in this process: a setting it rejects (an unknown
            # model, a parameter), not the turns; counting it against them would give every one up in a few runs
            raise LLMError(f"the model server refused every turn of this run, so its settings are the likely cause "
                           f"(nothing was written): {self._refusal}", status=self._refusal.status) from self._refusal
        batch = [(ep, c) for ep, cands, _ in plan for c in cands]
        vecs = self.embed_many([c.content for _, c in batch]) if batch else []
        self._ahead = _Lookahead.start(self.store, [(ep.project, v) for (ep, _), v in zip(batch, vecs)],
                                       self.config.update_candidates, keys=[id(c) for _, c in batch])
        try:
            out: list[Decision] = [] if into is None else into
            for done, (ep, cands, logged) in enumerate(plan, start=1):
                self.consolidate_episode(ep, now, (cands, logged), into=out)
                if progress is not None:
                    progress(done, len(plan))
            return out
        finally:
            self._ahead = None

    def consolidate_episode(self, ep: MemoryRecord, now: datetime,
                            extracted: tuple[list[FactCandidate], list[Decision]] | None = None,
                            into: list[Decision] | None = None) -> list[Decision]:
        """``into``: where the decisions go as they are made (see ``consolidate_all``);
        an episode whose judge fails part-way is not marked done, so it is
        taken up again, and what it already wrote is then found as said."""
        if ep.role != "user":  # assistant turns never become facts
            ep.consolidated = True
            self.store.update(ep)
            self.index.pending.discard(ep.id)
            return []
        cands, logged = extracted if extracted is not None else self._extract(ep, now)
        sink = [] if into is None else into
        start = len(sink)
        sink.extend(logged)
        for c in cands:
            sink.append(self._integrate(c, ep, now))
        out = sink[start:]
        if any(d.op is DecisionOp.UNDECIDED for d in out):
            tries = ep.metadata["undecided_attempts"] = ep.metadata.get("undecided_attempts", 0) + 1
            if tries >= self.config.undecided_retries:  # asked again forever, its answer logged each time: no more
                ep.consolidated = True
                self.index.pending.discard(ep.id)
                d = Decision(DecisionOp.SKIP, ep.content, None, None, None,
                             f"given up after {tries} undecided answers: the turn stays a turn, no fact is drawn "
                             "from it (see the decisions before this one)", now, (ep.id,))
                sink.append(d)
                out.append(d)
        else:
            ep.consolidated = True  # else left for a retry once the model answers properly
            self.index.pending.discard(ep.id)
        self.store.update(ep)
        return out

    def _neighbours(self, cand: FactCandidate, tokens: list[str], vec: np.ndarray, project: str) -> list[MemoryRecord]:
        """The active facts a candidate is compared with: its nearest by
        meaning and by words, those filed under its attribute, and those that
        name the person it is about, newest first. AIDA compares with the
        three nearest; ``update_candidates`` (32) per lookup leaves room for
        the same slot said in other words, and keeps the cost O(k log n)
        instead of every fact of the subject."""
        flt = RecordFilter(project=project, kinds=(MemoryKind.FACT,), statuses=(ACTIVE,))
        k = self.config.update_candidates
        near = self._ahead.nearest(self.store, vec, k, flt) if self._ahead is not None else None
        ids = dict.fromkeys(i for i, _ in (near if near is not None else self.store.vector_top_k(vec, k, flt)))
        ids.update(dict.fromkeys(i for i, _ in self.store.keyword_top_k(tokens, k, flt)))
        if cand.about:
            ids.update(dict.fromkeys(i for i, _ in self.store.keyword_top_k(self.tokenizer.tokens(cand.about), k, flt)))
        if cand.attribute:
            ids.update(dict.fromkeys(sorted(self.index.with_attribute(project, cand.attribute))))
        facts = [f for f in (self.store.get(i) for i in ids) if f is not None and flt.matches(f)]
        return sorted(facts, key=lambda r: (r.created_at, r.id), reverse=True)

    def _integrate(self, cand: FactCandidate, ep: MemoryRecord, now: datetime) -> Decision:
        tokens = self.tokenizer.tokens(cand.content)
        vec = self._ahead.vector_for(cand) if self._ahead is not None else None
        if vec is None:  # not one of the batch's candidates: embedded and searched as usual
            vec = self.embed_one(cand.content)
        subject = ep.metadata.get("subject", "user")
        cand = named_person(cand, subject, ep.project, self.index.person, self.tokenizer)
        if cand.about:  # "우리 언니는 은행에 다녀" is the sister's job, not the user's
            subject = f"{subject}/{cand.about}"
        active = [f for f in self._neighbours(cand, tokens, vec, ep.project) if related(f, subject, cand)]
        distance = None
        mat = self.store.embeddings([f.id for f in active]) if active else None
        sims = mat @ vec if active else []
        if active:
            distance = round(float(1.0 - sims.max()), 6)
        negated = contradiction.is_negated(cand.content)
        for f in active:
            if _jaccard(tokens, self._content_tokens(f)) >= self.config.dedup_jaccard and contradiction.is_negated(f.content) == negated:
                self._add_provenance(f, ep, now)
                return Decision(DecisionOp.NOOP, cand.content, None, f.id, distance, "near-duplicate", now, (ep.id,))
        attr = contradiction.attribute(cand.attribute) if cand.attribute else None
        values = contradiction.value_tokens(cand.content, tokens, attr, self.tokenizer.tokens)
        centred = [None] * len(active)
        if active and self.background is not None:  # which fact it is about, judged with the common directions taken out too
            centred = [float(c) for c in centred_cosines(mat, vec, self.background(language(cand.content)))]
        existing = [FactView(f.id, f.content, f.attribute, frozenset(f.metadata.get("values", ())), float(s), c, person_of(f),
                             self._earlier(f))
                    for f, s, c in zip(active, sims, centred)]
        try:
            verdict = self.contradiction_filter.judge(cand.content, attr, values, existing, about=cand.about)
        except UnparseableAnswer as e:
            log.warning("contradiction filter answer could not be parsed: %s", e.raw)
            return Decision(DecisionOp.UNDECIDED, cand.content, None, None, distance, f"filter answer unparseable: {e.why}",
                            now, (ep.id,), e.raw)
        if verdict.op == "reaffirm":
            old = self.store.get(verdict.target_id)
            self._add_provenance(old, ep, now)
            return Decision(DecisionOp.NOOP, cand.content, None, old.id, distance, verdict.reason, now, (ep.id,))
        target = self.store.get(verdict.target_id) if verdict.op in ("delete", "supersede") else None
        after = self._line_after(target, ep.created_at) if target is not None else None
        earlier = after is not None
        if verdict.op == "delete" and not earlier:
            self.retire(target, now, successor=None, reason=verdict.reason, episode_id=ep.id)
            return Decision(DecisionOp.DELETE, cand.content, None, target.id, distance, verdict.reason, now, (ep.id,))
        # a statement said before the fact it would change (an older history imported after newer turns) changes
        # nothing that holds now: it is kept as an earlier value, ended by that fact
        replaced = target if verdict.op == "supersede" and not earlier else None
        fact = MemoryRecord(
            id=self.new_id("fact", cand.content, now, ep.project), kind=MemoryKind.FACT, content=cand.content, created_at=now, updated_at=now,
            last_accessed=now, project=ep.project, session=ep.session, role="user",
            tokens=tokens + self.label_tokens(contradiction.attribute(cand.attribute) if cand.attribute else None),
            entities=sorted(set(self.tokenizer.nouns(cand.content))), importance=ep.importance,
            # a turn the user asked to keep keeps what is drawn from it ("Remember this. My locker code is 4812.")
            memory_class="permanent" if ep.memory_class == "permanent" else cand.memory_class,
            valid_from=ep.created_at, provenance=[ep.id],
            attribute=cand.attribute or None, value=" ".join(sorted(values)) or None,
            metadata={"values": sorted(values), "extractor": getattr(self.fact_extractor, "name", "heuristic"),
                      "subject": subject, "source_ids": source_ids(ep)},
        )
        when = event_windows(cand.content, ep.created_at)  # resolved against when it was said, not now
        if when:
            fact.metadata["when"] = to_json(when)
        if verdict.op == "refine":
            fact.metadata["refines"] = verdict.target_id
        if replaced is not None:
            self.borrow_slot(fact, replaced)
        doubts = [i for i in verdict.doubts if (f := self.store.get(i)) is not None
                  and f.metadata.get("subject", "user") == subject] if verdict.op == "add" else []
        if doubts:  # a change of one of these (its own subject's)? the user settles it (review.py)
            fact.metadata["doubts"] = doubts
        if self.place is not None:
            self.place(fact, vec)
        try:
            self.store.put(fact, vec)
        except BaseException:
            if self.unplace is not None:
                self.unplace(fact, vec)
            raise
        if self._ahead is not None:
            self._ahead.added.append(fact.id)
        self.index.add(fact)
        self.store.graph.add_cooccurrence(fact.entities)
        if replaced is not None:
            fact.supersedes = replaced.id
            # a question the replaced fact had open ("AT&T" asked about Verizon) is this one's now
            inherited = [i for i in replaced.metadata.get("doubts", ()) if i not in (fact.id, replaced.id)]
            if inherited:
                fact.metadata["doubts"] = inherited
            self.store.update(fact)
            self.retire(replaced, now, successor=fact.id, reason=verdict.reason, episode_id=ep.id)
            return Decision(DecisionOp.UPDATE, cand.content, fact.id, replaced.id, distance, verdict.reason, now, (ep.id,))
        if earlier:
            first, start = after
            why = f"an earlier value: said before {first.id}, which replaced it ({verdict.reason})"
            self.retire(fact, now, successor=first.id, reason=why, episode_id=EARLIER_VALUE, ended_at=start)
            self._cut_earlier(first.id, fact, ep.created_at)
            return Decision(DecisionOp.ADD, cand.content, fact.id, target.id, distance, why, now, (ep.id,))
        return Decision(DecisionOp.ADD, cand.content, fact.id, verdict.target_id, distance, verdict.reason, now, (ep.id,),
                        doubts=tuple(doubts))

    def _cut_earlier(self, successor_id: str, fact: MemoryRecord, t: datetime) -> None:
        """An earlier value kept before ``fact`` that still held at ``t`` (an
        older log's turns come oldest first) ends where ``fact`` began."""
        for r, start in self._earlier_values(fact.project):
            if r.id != fact.id and r.superseded_by == successor_id and start < t and (r.valid_to is None or t < r.valid_to):
                r.valid_to, r.superseded_by = t, fact.id
                self.store.update(r)

    def _line_after(self, fact: MemoryRecord, t: datetime) -> tuple[MemoryRecord, datetime] | None:
        """The earliest value of ``fact``'s line (the facts it replaced, back
        through the judge's and the user's changes) that was said after ``t``,
        with when it began; None when the value holding at ``t`` is of this
        line already. A version a user's edit made starts when its first
        version was said, not when it was corrected."""
        found: tuple[MemoryRecord, datetime] | None = None
        seen: set[str] = set()
        cur: MemoryRecord | None = fact
        while cur is not None and cur.id not in seen:
            seen.add(cur.id)
            prev = self.store.get(cur.supersedes) if cur.supersedes else None
            edited = prev is not None and prev.superseded_by == cur.id and \
                prev.metadata.get("superseded_by_episode") == USER_EDIT_EPISODE
            if not edited:  # (an edit's version begins with the version it corrects: look at that one)
                start = cur.valid_from or cur.created_at
                if start <= t:
                    return found
                found = (cur, start)
            cur = prev
        if found is None:
            return None
        # earlier values kept before this one (an older log imported in one go) are of the line too, linked
        # only by their end: the first of them said after ``t`` ends this one
        for r, start in self._earlier_values(fact.project):
            if r.superseded_by in seen and t < start < found[1]:
                found = (r, start)
        return found

    def _earlier_values(self, project: str) -> Iterator[tuple[MemoryRecord, datetime]]:
        """The earlier values kept in ``project`` (an older log imported late), with when each began."""
        for r in self.store.records(RecordFilter(project=project, kinds=(MemoryKind.FACT,), statuses=(SUPERSEDED,))):
            if r.metadata.get("superseded_by_episode") == EARLIER_VALUE:
                yield r, r.valid_from or r.created_at

    def _earlier(self, fact: MemoryRecord, depth: int = 3) -> tuple[str, ...]:
        """What the facts this one replaced said (newest first, at most ``depth``):
        a chain of values is one slot, and the newest value may not name it."""
        out: list[str] = []
        seen = {fact.id}
        while fact.supersedes and len(out) < depth and fact.supersedes not in seen:
            seen.add(fact.supersedes)
            prev = self.store.get(fact.supersedes)
            if prev is None:
                break
            out.append(prev.content)
            fact = prev
        return tuple(out)

    def borrow_slot(self, fact: MemoryRecord, replaced: MemoryRecord) -> bool:
        """The slot a fact replaces is its slot: "congee is my favorite thing to
        eat now" replaces a fact filed under favorite_food without naming the
        attribute; filed under it too (with its label words), the next change
        finds it there (pick_slot, _neighbours) and a question naming the
        attribute finds the value that holds now. Marked as taken from
        ``replaced``, so a revert gives it back (``give_back_slot``). The
        caller keeps the index in step."""
        if fact.attribute or not contradiction.is_attribute(replaced.attribute):
            return False
        fact.attribute = replaced.attribute
        fact.tokens = [*fact.tokens, *self.label_tokens(contradiction.attribute(replaced.attribute))]
        fact.metadata["attribute_from"] = replaced.id
        return True

    def give_back_slot(self, fact: MemoryRecord, replaced_id: str) -> bool:
        """Undo ``borrow_slot`` when the slot came from ``replaced_id``. The caller keeps the index in step."""
        if fact.metadata.pop("attribute_from", None) != replaced_id or not fact.attribute:
            return False
        fact.tokens = self._content_tokens(fact)
        fact.attribute = None
        return True

    def label_tokens(self, attr: contradiction.Attribute | None) -> list[str]:
        return list(label_tokens(attr.name, self.tokenizer)) if attr is not None else []

    def _content_tokens(self, fact: MemoryRecord) -> list[str]:
        """A fact's own tokens, without the attribute labels appended to them for
        indexing (facts written before labels existed have none to strip)."""
        labels = list(label_tokens(fact.attribute, self.tokenizer)) if fact.attribute else []
        return fact.tokens[: -len(labels)] if labels and fact.tokens[-len(labels):] == labels else fact.tokens

    def _add_provenance(self, fact: MemoryRecord, ep: MemoryRecord, now: datetime) -> None:
        fact.provenance = sorted(set(fact.provenance) | {ep.id})
        fact.metadata["source_ids"] = sorted(set(fact.metadata.get("source_ids", [])) | set(source_ids(ep)))
        fact.updated_at = now
        self.store.update(fact)

    def retire(self, old: MemoryRecord, now: datetime, *, successor: str | None, reason: str, episode_id: str,
               ended_at: datetime | None = None) -> None:
        """Supersede, never destroy: the old fact keeps its content, gains an
        end: ``now`` (when it was decided), or ``ended_at`` (an earlier value's
        end), never before it began (a save dated before the value it ends)."""
        start = old.valid_from or old.created_at
        old.status = SUPERSEDED
        old.valid_to = max(now if ended_at is None else ended_at, start)
        old.metadata["superseded_at"] = now.isoformat()
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


# retire()'s episode id for a statement said before the value that replaced it (an older log imported late):
# history the judge kept in order, not one of its decisions to review or revert
EARLIER_VALUE = "earlier-value"
USER_EDIT_EPISODE = "user-edit"  # (review.USER_EDIT)


class _Lookahead:
    """The nearest facts of a batch of candidates, found at the batch's start
    with one matrix product per project (``vector_top_k_many``), and kept
    exact while the batch adds and retires facts: each candidate's list is
    ``2k`` long; at its turn, the facts retired since are dropped
    from it and the facts added since are scored against it directly. If
    retirements ate into the first ``k`` of a full list, that candidate is
    searched the usual way. A candidate is looked up by the object the
    batch listed, not by its place in line, so one skipped or repeated
    never hands the next one another candidate's neighbours."""

    def __init__(self, vectors: list[np.ndarray], rows: list[list[tuple[str, float]] | None], width: int,
                 keys: Sequence[int]) -> None:
        if not len(vectors) == len(rows) == len(keys):
            raise ValueError(f"one key per candidate: {len(keys)} keys for {len(vectors)} vectors, {len(rows)} lists")
        self.vectors, self.rows, self.width = vectors, rows, width
        self.added: list[str] = []
        self._at = {key: i for i, key in enumerate(keys)}
        self._current = -1

    @classmethod
    def start(cls, store: StoragePort, items: list[tuple[str, np.ndarray]], k: int,
              keys: Sequence[int]) -> "_Lookahead":
        width = 2 * k
        rows: list[list[tuple[str, float]] | None] = [None] * len(items)
        if items:
            many = store.vector_top_k_many
            for project in sorted({p for p, _ in items}):
                at = [i for i, (p, _) in enumerate(items) if p == project]
                flt = RecordFilter(project=project, kinds=(MemoryKind.FACT,), statuses=(ACTIVE,))
                for i, row in zip(at, many(np.stack([items[i][1] for i in at]), width, flt)):
                    rows[i] = row
        return cls([v for _, v in items], rows, width, keys)

    def vector_for(self, cand: object) -> np.ndarray | None:
        """The listed candidate's vector, made current for ``nearest``; None
        (and no current list) for a candidate the batch did not list."""
        self._current = self._at.get(id(cand), -1)
        return self.vectors[self._current] if self._current >= 0 else None

    def nearest(self, store: StoragePort, vec: np.ndarray, k: int, flt: RecordFilter) -> list[tuple[str, float]] | None:
        """The current candidate's ``k`` nearest facts that pass ``flt`` now;
        None when the list cannot say (the caller then searches)."""
        row = self.rows[self._current] if 0 <= self._current < len(self.rows) else None
        if row is None:
            return None
        kept = [(i, s) for i, s in row if (r := store.get(i)) is not None and flt.matches(r)]
        if len(kept) < k and len(row) >= self.width:
            return None
        new = [i for i in self.added if (r := store.get(i)) is not None and flt.matches(r)]
        if new:
            kept += zip(new, (store.embeddings(new) @ vec).tolist())
        return sorted(kept, key=lambda kv: (-kv[1], kv[0]))[:k]


def _jaccard(a: list[str], b: list[str]) -> float:
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa and sb else 0.0


def source_ids(r: MemoryRecord) -> list[str]:
    """Caller-side ids (e.g. a dataset's turn id) passed as metadata["source_id"]."""
    sid = r.metadata.get("source_id")
    return [str(sid)] if sid is not None else list(r.metadata.get("source_ids", []))
