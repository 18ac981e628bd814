"""Review and undo the engine's own update decisions, and ask the user where
the rules could not decide.

The offline judge takes about one kept statement in ten for a change, on statements it was not
written for (README, "Facts and updates on natural speech"): "we got a new
store manager" can end "I work at the Costco on 5th". Nothing is lost (the
old fact is kept as superseded history), but until now the only way back was
an ``edit`` that wrote the old text again as a new version. ``changes`` lists
the decisions still in force, with what was said, so a user or an agent can
ask "did you really leave Costco?"; ``revert`` takes one back: the old fact is
current again, as if never ended, and the statement's own fact stays (it was
said, it just did not replace anything). ``doubts`` lists the statements
that read as a change the rules could not tie to a fact ("ported my number
to Mint" after "I'm on Verizon": knowing both are carriers is not in them),
with the facts they may be about; ``settle`` takes the user's answer. A
mixin of ``MemorySystem``.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .contract import InvalidInput, MemoryKind, UnknownMemoryError
from .forgetting import FORGOTTEN_TURN
from .records import ACTIVE, ARCHIVED, SUPERSEDED, MemoryRecord, ensure_aware
from .stores.port import RecordFilter
from .validate import check_limit, check_memory_id, check_name
from .stale_retry import again_when_stale
from .consolidation import EARLIER_VALUE, USER_EDIT_EPISODE

# retire()'s episode ids that are not the judge's: a user's correction and a Koog-style save
USER_EDIT = USER_EDIT_EPISODE
USER_SETTLED = "user-settled"  # a change the user confirmed (``settle``)
_NOT_THE_JUDGE = (USER_EDIT, "structured-save", USER_SETTLED, EARLIER_VALUE)


@dataclass(frozen=True)
class FactChange:
    """One update decision in force: ``old`` ended at ``at`` because of ``said``
    (the turn the new fact came from); ``new`` replaced it (None: it ended)."""
    op: str  # "UPDATE" or "DELETE", as in the decision log
    old_id: str
    old: str
    new_id: str | None
    new: str | None
    said_id: str | None  # None when the turn was forgotten since
    said: str | None
    reason: str
    at: datetime

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "old_id": self.old_id, "old": self.old, "new_id": self.new_id, "new": self.new,
                "said_id": self.said_id, "said": self.said, "reason": self.reason, "at": self.at.isoformat()}


@dataclass(frozen=True)
class Doubt:
    """A statement that reads as a change ("ported my number to Mint") of a
    fact the rules could not name: ``facts`` are the current ones it may be
    about, nearest first, as (id, text). The user's answer goes to ``settle``."""
    fact_id: str
    fact: str
    said_id: str | None
    said: str | None
    facts: tuple[tuple[str, str], ...]
    at: datetime

    def to_json(self) -> dict[str, Any]:
        return {"fact_id": self.fact_id, "fact": self.fact, "said_id": self.said_id, "said": self.said,
                "facts": [{"id": i, "fact": t} for i, t in self.facts], "at": self.at.isoformat()}


def settled(r: MemoryRecord) -> bool:
    """A fact ended by the user's answer to a doubt (``settle``)."""
    return r.kind is MemoryKind.FACT and r.status == SUPERSEDED and r.metadata.get("superseded_by_episode") == USER_SETTLED


def _decided(r: MemoryRecord) -> datetime:
    """When the decision that ended ``r`` was made (its ``valid_to`` is when
    what ended it was said; facts ended before session 40 have only that)."""
    at = r.metadata.get("superseded_at")
    return datetime.fromisoformat(at) if isinstance(at, str) else (r.valid_to or r.updated_at)


def judged(r: MemoryRecord) -> bool:
    """A fact the update judge ended (not a user's edit, a structured save, or
    a summary or reflection renewed from its grounds)."""
    return (r.kind is MemoryKind.FACT and r.status == SUPERSEDED and not r.derived and not r.metadata.get("structured")
            and "superseded_reason" in r.metadata
            and r.metadata.get("superseded_by_episode") not in (None, *_NOT_THE_JUDGE))


class UpdateReview:
    def changes(self, *, project: str = "default", since: datetime | None = None,
                limit: int | None = 50) -> list[FactChange]:
        """The update decisions still in force in ``project``, newest first
        (``since``: ended at or after it; ``limit``: at most that many, None
        for all). A decision reverted, or whose old fact was forgotten, is
        not listed."""
        check_name(project, "project")
        check_limit(limit)
        lo = ensure_aware(since) if since is not None else None
        with self._lock:
            self._check_open()
            ended = [r for r in self.store.records(RecordFilter(project=project, kinds=(MemoryKind.FACT,),
                                                                statuses=(SUPERSEDED,)))
                     if judged(r) and (lo is None or _decided(r) >= lo)]
            ended.sort(key=lambda r: (_decided(r), r.id), reverse=True)
            out = []
            for r in ended[:limit]:
                new = self.store.get(r.superseded_by) if r.superseded_by else None
                if new is not None:  # the replacement as it reads now: the last version the user's edits made of it
                    new = self._versions(new)[-1]
                said = str(r.metadata["superseded_by_episode"])
                out.append(FactChange("UPDATE" if r.superseded_by else "DELETE", r.id, r.content,
                                      new.id if new is not None else r.superseded_by, new.content if new is not None else None,
                                      *self._said(None if said == FORGOTTEN_TURN else said),
                                      str(r.metadata["superseded_reason"]), _decided(r)))
            return out

    def doubts(self, *, project: str = "default", limit: int | None = 50) -> list[Doubt]:
        """Statements the update rules read as a change but could not tie to a
        fact, newest first, each with the current facts it may be about (a
        fact the user has edited since is offered as its edited version): what
        an agent should ask the user ("does 'ported my number to Mint' mean
        you left Verizon?"). Settled ones, and ones whose facts have all ended
        or been forgotten since, are not listed."""
        check_name(project, "project")
        check_limit(limit)
        with self._lock:
            self._check_open()
            out = []
            for r in self.store.records(RecordFilter(project=project, kinds=(MemoryKind.FACT,), statuses=(ACTIVE, ARCHIVED))):
                facts = self._open_question(r)
                if facts:
                    out.append(Doubt(r.id, r.content, *self._said(r.provenance[0] if r.provenance else None),
                                     tuple((f.id, f.content) for f in facts), r.created_at))
            out.sort(key=lambda d: (d.at, d.fact_id), reverse=True)
            return out[:limit]

    def _said(self, episode_id: str | None) -> tuple[str | None, str | None]:
        """The turn's id and words, (None, None) when it is gone (forgotten)."""
        ep = self.store.get(episode_id) if episode_id else None
        return (ep.id, ep.content) if ep is not None else (None, None)

    def _open_question(self, r: MemoryRecord) -> list[MemoryRecord]:
        """The current facts ``r`` may have changed (each as the user's edits left it), none when settled."""
        if r.status == SUPERSEDED or not r.metadata.get("doubts"):
            return []
        out: dict[str, MemoryRecord] = {}
        for i in r.metadata["doubts"]:
            f = self.store.get(i)
            if f is not None:
                f = self._versions(f)[-1]
                if f.status != SUPERSEDED and f.id != r.id and f.project == r.project:
                    out.setdefault(f.id, f)
        return list(out.values())

    @again_when_stale
    def settle(self, *, memory_id: str, replaces: str | None, now: datetime | None = None) -> str | None:
        """The user's answer to a doubt about the fact ``memory_id``:
        ``replaces`` names the fact it changed (one of those ``doubts``
        listed; it ends, replaced by this one, as the judge would have done),
        or None: it changed none of them. Either way the doubt is closed and
        logged (SETTLE); a question the ended fact itself had open passes to
        this one. Returns the id of the fact that ended, or None."""
        now = ensure_aware(now)
        with self._lock:
            self._check_open()
            fact = self.store.get(check_memory_id(memory_id))
            if fact is None:
                raise UnknownMemoryError(f"no memory with id {memory_id!r}")
            offered = self._open_question(fact)
            if not offered:
                raise InvalidInput(f"{memory_id} has no open question (doubts() lists those)")
            old = None
            if replaces is not None:
                old = next((f for f in offered if f.id == check_memory_id(replaces)
                            and f.metadata.get("subject", "user") == fact.metadata.get("subject", "user")), None)
                if old is None:
                    raise InvalidInput(f"{replaces} is not one of the current facts {memory_id} may have changed: "
                                       f"{[f.id for f in offered]}")
            check_not_before(now, fact, *([old] if old is not None else []))
            asked = list(fact.metadata.pop("doubts"))
            fact.metadata["settled"] = {"at": now.isoformat(), "replaces": replaces, "asked": asked}
            if old is not None:
                first = self._first_version(fact)  # an edited statement: its history starts where it was said
                first.supersedes = old.id
                self.index.remove(fact)
                self.consolidator.borrow_slot(fact, old)  # its slot, as the judge files it
                self.index.add(fact)
                inherited = [i for i in old.metadata.get("doubts", ()) if i not in (fact.id, old.id)]
                if inherited:  # "AT&T" asked about Verizon, "Mint" replaced AT&T: Mint is asked about Verizon now
                    fact.metadata["doubts"] = inherited
                if first is not fact:
                    self.store.update(first)
                self.consolidator.retire(old, now, successor=first.id, reason="confirmed by the user",
                                         episode_id=USER_SETTLED)
            self.store.update(fact)
            self.store.append_log([{"op": "SETTLE", "fact_id": fact.id, "target_id": replaces, "at": now.isoformat()}])
            self._commit_with_owed()
            return replaces

    def _first_version(self, fact: MemoryRecord) -> MemoryRecord:
        """The version the user's edits started from."""
        seen = {fact.id}
        while fact.supersedes and (prev := self.store.get(fact.supersedes)) is not None and prev.id not in seen \
                and prev.superseded_by == fact.id and prev.metadata.get("superseded_by_episode") == USER_EDIT:
            seen.add(prev.id)
            fact = prev
        return fact

    @again_when_stale
    def revert(self, *, memory_id: str, now: datetime | None = None) -> str:
        """Take back the judge's decision that ended a fact: ``memory_id`` is
        the fact it ended, or the fact that replaced it (or a version the
        user's edits made of that one). The old fact is
        current again (its end, successor and reason cleared; the turns it
        came from no longer read as stale), the replacing fact stays as a
        fact of its own, and a REVERT entry is logged. Returns the old
        fact's id. The user's answer to a doubt (``settle``) is taken back
        the same way; a user's edit is not (edit again), nor a fact that is
        current, nor the older change of a chain until the newer is."""
        now = ensure_aware(now)
        with self._lock:
            self._check_open()
            r = self.store.get(check_memory_id(memory_id))
            if r is None:
                raise UnknownMemoryError(f"no memory with id {memory_id!r}")
            old = r
            # the replacing fact named, or a version the user's edits made of it (the decision names the first)
            named = self._first_version(r)
            if named.supersedes and (r.status != SUPERSEDED or r.metadata.get("superseded_by_episode") == USER_EDIT):
                old = self.store.get(named.supersedes)
                if old is None or old.superseded_by != named.id:
                    raise InvalidInput(f"{memory_id} no longer replaces {named.supersedes}: nothing to revert")
            if old.status != SUPERSEDED:
                raise InvalidInput(f"{memory_id} is {old.status}: no update decision ended it")
            if not (judged(old) or settled(old)):  # a settled change too: the user may change their mind
                why = "a user's edit (edit it again)" if old.metadata.get("superseded_by_episode") == USER_EDIT \
                    else "not the update judge's decision nor the user's answer to a doubt"
                raise InvalidInput(f"{old.id} was ended by {why}")
            successor_id = old.superseded_by
            successor = self.store.get(successor_id) if successor_id else None
            versions = self._versions(successor) if successor is not None and successor.supersedes == old.id else []
            if versions and versions[-1].status == SUPERSEDED and versions[-1].superseded_by:
                # A -> B -> C: C took the slot through B; both A and C current would be two values of one slot
                raise InvalidInput(f"{versions[-1].id} was replaced in turn by {versions[-1].superseded_by}: "
                                   "take that change back first (changes() lists it, newest first)")
            reason = str(old.metadata["superseded_reason"])
            if versions:
                self._unlink_successor(versions, old.id)
            self._reinstate(old, now)
            self.store.append_log([{"op": "REVERT", "target_id": old.id, "fact_id": successor_id,
                                    "reason": reason, "at": now.isoformat()}])
            self._commit_with_owed()
            return old.id

    def _versions(self, fact: MemoryRecord) -> list[MemoryRecord]:
        """The fact and the versions the user's edits made of it, oldest first."""
        out, seen = [fact], {fact.id}
        while (out[-1].status == SUPERSEDED and out[-1].metadata.get("superseded_by_episode") == USER_EDIT
               and (nxt := self.store.get(out[-1].superseded_by or "")) is not None and nxt.id not in seen):
            out.append(nxt)
            seen.add(nxt.id)
        return out

    def _unlink_successor(self, versions: list[MemoryRecord], old_id: str) -> None:
        """The replacing fact no longer replaces anything; a slot it took from
        the old fact (it named none itself) is given back, with the label words
        that filed it, by it and by the versions the user's edits made of it."""
        versions[0].supersedes = None
        for v in versions:
            self.index.remove(v)
            self.consolidator.give_back_slot(v, old_id)
            self.index.add(v)
            self.store.update(v)

    def _reinstate(self, old: MemoryRecord, now: datetime) -> None:
        reverted = list(old.metadata.get("reverted") or ())
        reverted.append({"at": now.isoformat(), "successor": old.superseded_by,
                         "reason": old.metadata.pop("superseded_reason"),
                         "said": old.metadata.pop("superseded_by_episode")})
        old.metadata.pop("superseded_at", None)
        old.status, old.valid_to, old.superseded_by, old.updated_at = ACTIVE, None, None, now
        old.metadata["reverted"] = reverted
        self.store.update(old)
        # the turns it came from read as current again, unless another fact drawn from them is still ended
        still_ended = {p: f.id for f in self.store.records(RecordFilter(project=old.project, kinds=(MemoryKind.FACT,),
                                                                        statuses=(SUPERSEDED,)))
                       for p in f.provenance}
        for ep_id in old.provenance:
            ep = self.store.get(ep_id)
            if ep is not None and ep.kind is MemoryKind.EPISODE and ep.metadata.get("stale_fact") == old.id:
                if ep_id in still_ended:
                    ep.metadata["stale_fact"] = still_ended[ep_id]
                else:
                    del ep.metadata["stale_fact"]
                self.store.update(ep)


def check_not_before(now: datetime, *facts: MemoryRecord) -> None:
    """A correction or an answer dated before what it ends began would end it before its start."""
    for f in facts:
        start = f.valid_from or f.created_at
        if now < start:
            raise InvalidInput(f"now ({now.isoformat()}) is before {f.id} began ({start.isoformat()})")

