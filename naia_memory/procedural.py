"""Procedural memory (issue 10; the reference README's "procedural memory:
success/failure counts and corrective recall"): what an agent tried for a
skill, in which context, and whether it worked. After a failure, asking
about the skill brings back what went wrong last time and what has worked
since, so the agent does not repeat the mistake.

Outcomes are memories of kind SKILL in the same store (recalled, forgotten,
audited like the rest); they fade slowly (class "skill").
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from .contract import InvalidInput, MemoryKind, RecallHit
from .hits import to_hit
from .records import ACTIVE, MemoryRecord, ensure_aware
from .stores.port import RecordFilter
from .validate import check_content, check_name
from .stale_retry import again_when_stale

if TYPE_CHECKING:
    from .engine import MemorySystem


@dataclass(frozen=True)
class SkillReport:
    """One skill (in one context, or all): the counts, the last failure and
    what went wrong, what worked after it, and the approach that worked most."""

    skill: str
    context: str | None
    attempts: int
    successes: int
    failures: int
    last_failure: RecallHit | None
    worked_since: tuple[RecallHit, ...]  # successes after the last failure, newest first
    best_approach: str | None

    @property
    def success_rate(self) -> float | None:
        return self.successes / self.attempts if self.attempts else None


@dataclass
class ProceduralMemory:
    system: "MemorySystem"
    project: str = "default"

    def __post_init__(self) -> None:
        check_name(self.project, "project")

    @again_when_stale
    def record(self, skill: str, *, success: bool, context: str = "", approach: str = "", detail: str = "",
               now: datetime | None = None) -> str:
        """Store one outcome; returns its id."""
        check_content(skill, "skill")
        for name, text in (("context", context), ("approach", approach), ("detail", detail)):
            if not isinstance(text, str):
                raise InvalidInput(f"{name} must be text (or empty), got {text!r}")
        now = ensure_aware(now)
        verdict = "worked" if success else "failed"
        parts = [f"{skill} {verdict}"] + [p for p in (f"in {context}" if context else "", f"with {approach}" if approach else "") if p]
        content = check_content(" ".join(parts) + (f": {detail}" if detail else ""), "the outcome")  # length, text
        sys = self.system
        with sys._lock:
            sys._check_open()
            rec = MemoryRecord(
                id=sys._new_id("skill", content, now, self.project), kind=MemoryKind.SKILL, content=content, created_at=now,
                updated_at=now, last_accessed=now, project=self.project, role="assistant",
                tokens=sys.tokenizer.tokens(content), entities=sorted(set(sys.tokenizer.nouns(content))),
                importance=0.5 if success else 0.8, memory_class="skill", valid_from=now,
                metadata={"skill": skill, "success": bool(success), "context": context, "approach": approach, "detail": detail},
            )
            sys.store.put(rec, sys._embed_one(content))
            sys.index.add(rec)
            sys.store.append_log([{"op": "OUTCOME", "ids": [rec.id], "skill": skill, "success": bool(success), "at": now.isoformat()}])
            sys._commit()
            return rec.id

    def outcomes(self, skill: str, context: str | None = None) -> list[MemoryRecord]:
        flt = RecordFilter(project=self.project, kinds=(MemoryKind.SKILL,), statuses=(ACTIVE,))
        with self.system._lock:
            self.system._check_open()  # closed: refused; a shared file: another process's forget first
            if not self.system.encoder.enabled:  # memory off: nothing remembered is used (a record is kept)
                return []
            every = list(self.system.store.records(flt))
        recs = [r for r in every if r.metadata.get("skill") == skill
                and (context is None or r.metadata.get("context") == context)]
        return sorted(recs, key=lambda r: (r.created_at, r.id))

    def report(self, skill: str, context: str | None = None) -> SkillReport:
        """Corrective recall for ``skill``: read-only (nothing is strengthened)."""
        recs = self.outcomes(skill, context)
        wins = [r for r in recs if r.metadata.get("success")]
        fails = [r for r in recs if not r.metadata.get("success")]
        last_fail = fails[-1] if fails else None
        since = [r for r in wins if last_fail is None or r.created_at > last_fail.created_at]
        tally: dict[str, list[int]] = {}
        for r in recs:
            a = r.metadata.get("approach") or ""
            if a:
                t = tally.setdefault(a, [0, 0])
                t[0 if r.metadata.get("success") else 1] += 1
        # most successes, then fewest failures, then name
        best = min(tally.items(), key=lambda kv: (-kv[1][0], kv[1][1], kv[0]))[0] if any(w for w, _ in tally.values()) else None
        return SkillReport(skill, context, len(recs), len(wins), len(fails), to_hit(last_fail, 0.0) if last_fail else None,
                           tuple(to_hit(r, 0.0) for r in reversed(since)), best)
