"""What the user controls (issue 10; AIDA's audit controls): look at every
memory and where it came from, query the decision log, correct, and forget,
by id, by project, everything, or by description through a verifier model.

A mixin of ``MemorySystem``: it uses the engine's store, lock, index and
recall pipeline, and keeps these jobs out of the engine's own file.
"""
from __future__ import annotations

import functools
import logging
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from .audit import describe, query_log
from .cognition import contradiction
from .consolidation import source_ids
from .contract import InvalidInput, MemoryKind, RecallHit, UnknownMemoryError
from .forgetting import forget_closure, give_back_edges, unlink
from .hits import to_hit
from .recall.context import index_text
from .records import ACTIVE, PATH_KEY, SUMMARY, MemoryRecord, ensure_aware, grounds, predecessors
from .review import check_not_before
from .stores.port import RecordFilter, StaleViewError
from .validate import check_content, check_kinds, check_memory_id, check_name, check_query
from .stale_retry import again_when_stale, holding_writes

_FADING_MARKS = ("archived_at", "strength_at_archive", "revived_at")  # the old version's, not the correction's


log = logging.getLogger("naia_memory")


def locked(fn):
    """Run a read under the engine lock: on SQLite every path shares one
    connection, and a read racing a write in another thread raised and left
    phantom records (issue 11)."""
    @functools.wraps(fn)
    def under_lock(self, *args, **kwargs):
        with self._lock:
            self._check_open()
            return fn(self, *args, **kwargs)
    return under_lock


class VerifierRequired(RuntimeError):
    """A deletion by description was asked for without a verifier model."""


class OwnerControls:
    @locked
    def get(self, memory_id: str) -> RecallHit | None:
        r = self.store.get(check_memory_id(memory_id))
        return to_hit(r, 0.0) if r else None

    def _require(self, memory_id: str) -> MemoryRecord:
        r = self.store.get(check_memory_id(memory_id))
        if r is None:
            raise UnknownMemoryError(f"no memory with id {memory_id!r}")
        return r

    @locked
    def history(self, *, memory_id: str) -> list[RecallHit]:
        """Every version of a fact, oldest first, following supersede links."""
        r = self._require(memory_id)
        chain = [*reversed(predecessors(r, self.store.get)), r]
        seen = {x.id for x in chain}
        while r.superseded_by and (nxt := self.store.get(r.superseded_by)) is not None and nxt.id not in seen:
            r = nxt
            seen.add(r.id)
            chain.append(r)
        return [to_hit(x, 0.0) for x in chain]

    @locked
    def facts(self, *, project: str = "default", include_inactive: bool = False) -> list[RecallHit]:
        check_name(project, "project")
        statuses = None if include_inactive else (ACTIVE,)
        recs = self.store.records(RecordFilter(project=project, kinds=(MemoryKind.FACT,), statuses=statuses))
        return [to_hit(r, 0.0) for r in sorted(recs, key=lambda r: (r.created_at, r.id))]

    @again_when_stale
    def edit(self, *, memory_id: str, content: str, now: datetime | None = None) -> str:
        """A user's correction: a new version supersedes the old (auditable)."""
        check_content(content)
        now = ensure_aware(now)
        with self._lock:
            self._check_open()  # closed, or behind another process's writes to a shared file: not on a stale copy
            old = self._require(memory_id)
            if old.status != ACTIVE:
                raise InvalidInput(f"{memory_id} is {old.status}; edit the current version")
            check_not_before(now, old)
            if old.metadata.get("structured") or old.kind is MemoryKind.SKILL:
                # their fields (a value, an outcome's verdict and approach) are not read back from the text:
                # an edit kept the old value in the new record, and loads went on answering with it
                how = ("save the new value with StructuredMemory.save (the old one is kept as history)"
                       if old.metadata.get("structured") else "record the outcome again with ProceduralMemory.record")
                raise InvalidInput(f"{memory_id} is a {'structured fact' if old.metadata.get('structured') else 'skill outcome'}: "
                                   f"{how}, and forget this one if it was wrong")
            if old.derived:  # an edited text would pass as checked and keep standing for facts that say otherwise
                what = "summary" if old.subtype == SUMMARY else "reflection"
                raise InvalidInput(f"{memory_id} is a {what} the engine derived from {', '.join(grounds(old))}: edit or "
                                   f"forget those (the {what} ends and is made again from what holds), or forget it")
            attr = contradiction.attribute(old.attribute) if old.kind is MemoryKind.FACT and old.attribute else None
            labels = self.consolidator.label_tokens(attr)
            said = self.tokenizer.tokens(content)
            # a fact's values are the corrected text's, not the old one's (the judge and summaries read them)
            values = sorted(contradiction.value_tokens(content, said, attr, self.tokenizer.tokens)) \
                if old.kind is MemoryKind.FACT else None
            new = replace(old, id=self._new_id(old.id.split("_")[0], content, now, old.project), content=content, tokens=said + labels,
                          entities=sorted(set(self.tokenizer.nouns(content))), created_at=now, updated_at=now,
                          valid_from=now, valid_to=None, supersedes=old.id, superseded_by=None, recall_count=0,
                          last_accessed=now,  # a correction is fresh, not as faded as what it corrects
                          metadata={**{k: v for k, v in old.metadata.items() if k not in _FADING_MARKS},
                                    "edited_by_user": True})
            if values is not None:
                new.value = " ".join(values) or None
                new.metadata["values"] = values
            vec = self._embed_one(content)
            new.metadata.pop(PATH_KEY, None)
            new.metadata.pop("summarized_by", None)  # the old text was summarised, not this one
            self.hierarchy.place(new, vec)  # the corrected text may belong elsewhere
            try:
                self.store.put(new, vec)
            except BaseException:  # refused by the store: its place in the tree goes with it
                self.hierarchy.unplace(new, vec)
                raise
            self.index.add(new)
            self.consolidator.retire(old, now, successor=new.id, reason="edited by user", episode_id="user-edit")
            self.store.append_log([{"op": "EDIT", "target": old.id, "new": new.id, "at": now.isoformat()}])
            self._commit_with_owed()
            return new.id

    @again_when_stale
    def forget(self, *, memory_id: str | None = None, project: str | None = None, everything: bool = False) -> int:
        """Hard delete on the user's explicit request, with everything made
        from it (``forgetting.py``): facts with no other source, the turns a
        forgotten fact came from, graph edges and words only they put there,
        and the words of log entries naming them. The store is then rewritten
        so the words leave the disk now. Returns how many memories went."""
        if sum(x is not None and x is not False for x in (memory_id, project, everything or None)) != 1:
            raise InvalidInput("forget needs exactly one of memory_id=, project= or everything=True")
        if project is not None:
            check_name(project, "project")
        with self._lock:
            self._check_open()  # on a shared SQLite file this catches up with other processes' writes first
            every = list(self.store.records(RecordFilter(statuses=None)))
            if memory_id is not None:
                seeds = [self._require(memory_id).id]
            else:
                seeds = [r.id for r in every if project is None or r.project == project]
            return len(self._forget_ids(seeds, every))

    def _forget_ids(self, seeds: Sequence[str], every: list[MemoryRecord] | None = None) -> set[str]:
        with self._lock:
            if every is None:
                every = list(self.store.records(RecordFilter(statuses=None)))
            gone = forget_closure(every, seeds)
            forgotten = [r for r in every if r.id in gone]
            words = {r.content for r in forgotten}
            # a turn that answered a forgotten one carried its text as context (metadata, keywords, vector):
            # it keeps its own words only, re-embedded before anything is deleted (a failing embedder stops here)
            carried = [r for r in every if r.id not in gone and r.kind is MemoryKind.EPISODE
                       and isinstance(r.metadata.get("context"), str) and r.metadata["context"] in words]
            own = [index_text(r.content, None) for r in carried]
            fresh = list(self._embed_many(own)) if own else []  # one embedder call for all of them
            # the log first: it reads every entry, so a damaged one stops the forget before anything is deleted
            # (after the deletes, the next call committed a half-done forget: no FORGET entry, nothing erased)
            self.store.scrub_log(gone)
            for r in forgotten:
                self.index.remove(r)
                self.hierarchy.remove(r)
                self.store.delete(r.id)
            for r, text, vec in zip(carried, own, fresh):
                del r.metadata["context"]
                r.tokens = self.tokenizer.tokens(text)
                self.store.set_embedding(r.id, vec)
                self.store.update(r)
            # nor does the turn kept in memory for the next one's context bring the words back
            self.encoder.last_turn = {k: v for k, v in self.encoder.last_turn.items() if v not in words}
            sources = {r.id: source_ids(r) for r in every if r.kind is MemoryKind.EPISODE and r.id not in gone}
            for r in every:
                if r.id not in gone and unlink(r, gone, sources):
                    self.store.update(r)
            give_back_edges(self.store.graph, [r for r in forgotten if r.kind is MemoryKind.FACT],
                            lambda w: {i for i in self.index.entity(w) if (f := self.store.get(i)) is not None and f.kind is MemoryKind.FACT})
            self.store.append_log([{"op": "FORGET", "ids": sorted(gone), "at": ensure_aware(None).isoformat()}])
            self._commit_with_owed()
            self.store.erase_freed()
            self._forget_in_backups()
            return gone

    def _forget_in_backups(self) -> None:
        """Backups this store wrote are rewritten from it, so what was
        forgotten leaves them too; one encrypted under its own passphrase
        cannot be rewritten without it, nor one the disk refuses (a read-only
        mount, a folder now at its path): each is named in the log and a
        warning, and the forget, done already, is not reported as failed."""
        refreshed: list[str] = []
        sealed: list[str] = []
        unwritable: dict[str, str] = {}  # path -> why
        for b in getattr(self.store, "backups", lambda: [])():
            path = b.get("path", "")
            if not Path(path).exists():
                continue
            if b.get("sealed_separately"):
                sealed.append(path)
                continue
            try:
                self.store.backup_to(path)
            except Exception as e:  # a read-only mount, a folder or another file at that path: the forget is done
                unwritable[path] = str(getattr(e, "strerror", None) or e) or type(e).__name__
                continue
            refreshed.append(path)
        if sealed:
            log.warning("forget: these backups are encrypted under their own passphrase and still hold what was "
                        "forgotten; delete them or back up again: %s", ", ".join(sealed))
        if unwritable:
            log.warning("forget: these backups could not be rewritten and still hold what was forgotten; delete "
                        "them or back up again: %s", ", ".join(f"{p} ({why})" for p, why in unwritable.items()))
        if refreshed or sealed or unwritable:
            entry = {"op": "BACKUPS", "refreshed": refreshed, "stale": sealed + list(unwritable),
                     "at": ensure_aware(None).isoformat()}
            self._log_after_commit([{**entry, "unwritable": unwritable} if unwritable else entry])

    def _log_after_commit(self, entries: list[dict[str, Any]]) -> None:
        """A log entry about a call whose own writes are committed already
        (the backups a forget rewrote): on a shared file another process may
        have committed since, which refuses this write as made on an older
        view; the call is done and must not run again, so the entry is
        written under the write lock, on the file as it now is."""
        try:
            self.store.append_log(entries)
            self._commit_with_owed()
        except StaleViewError:
            holding_writes(self, lambda: self.store.append_log(entries))

    @locked
    def audit_log(self, *, op: str | Sequence[str] | None = None, since: datetime | None = None, until: datetime | None = None,
                  reason: str | None = None, min_distance: float | None = None, max_distance: float | None = None,
                  memory_id: str | None = None) -> list[dict[str, Any]]:
        """The decision log, oldest first; any condition given narrows it
        (``audit.query_log``): e.g. every UPDATE closer than 0.2, to tune a threshold."""
        return query_log(self.store.log(), op=op, since=since, until=until, reason=reason, min_distance=min_distance,
                         max_distance=max_distance, memory_id=memory_id)

    @locked
    def show(self, *, memory_id: str) -> dict[str, Any]:
        """One memory with the turns it came from and every decision about it."""
        r = self._require(memory_id)
        return describe(r, [self.store.get(p) for p in r.provenance], self.store.log())

    @locked
    def memories(self, *, project: str | None = "default", kinds: Sequence[MemoryKind] | None = None,
                 include_inactive: bool = False) -> list[RecallHit]:
        """Every memory, oldest first (``project=None``: every project)."""
        check_name(project, "project", optional=True)
        flt = RecordFilter(project=project, kinds=check_kinds(kinds), statuses=None if include_inactive else (ACTIVE,))
        return [to_hit(r, 0.0) for r in sorted(self.store.records(flt), key=lambda r: (r.created_at, r.id))]

    @again_when_stale
    def forget_about(self, *, request: str, project: str = "default", now: datetime | None = None,
                     candidates: int = 20) -> list[str]:
        """Structured deletion ("forget what I said about my ex"): the memories
        nearest the request are shown to the injected verifier model, and only
        those it names are forgotten (with what was made from them). Without a
        verifier this refuses: which memories a description covers is never
        guessed. Returns the ids forgotten."""
        check_query(request, candidates)
        if self.forget_verifier is None:
            raise VerifierRequired(
                "forget_about needs a verifier model to decide which memories the request covers; none is set, so "
                "nothing was deleted. Pass MemorySystem(..., forget_verifier=ForgetVerifier(client)), or forget by id: "
                "forget(memory_id=...).")
        now = ensure_aware(now)
        with self._lock:
            self._check_open()
            flt = RecordFilter(project=project, statuses=(ACTIVE,), created_before=now)
            ranked, _ = self.pipeline.run(request, candidates, flt, now)
            shown = list(dict.fromkeys(r.id for hit, _s, members, _n in ranked for r in (hit, *members)))
            chosen = self.forget_verifier.select(request, [(i, self.store.get(i).content) for i in shown])
            if not chosen:
                return []
            return sorted(self._forget_ids(chosen))

    @locked
    def neighbors(self, *, entity: str, limit: int = 10, project: str = "default") -> list[tuple[str, float]]:
        """The entities named with ``entity`` in the project's current facts,
        weighted by how many facts name both (heaviest first). The graph that
        recall spreads over is the store's; read per project, it would tell one
        project what another's facts say."""
        check_name(project, "project")
        if not isinstance(entity, str) or not isinstance(limit, int) or limit < 0:
            raise InvalidInput("neighbors needs an entity string and a limit >= 0")
        counts: dict[str, float] = {}
        for rid in sorted(self.index.entity(entity)):
            r = self.store.get(rid)
            if r is None or r.project != project or r.kind is not MemoryKind.FACT or r.status != ACTIVE:
                continue
            for e in set(r.entities) - {entity}:
                counts[e] = counts.get(e, 0.0) + 1.0
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
