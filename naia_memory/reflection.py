"""Reflection in the engine: at consolidation, themes that recur across the
user's sessions become ``reflection`` memories linked to their evidence.

Evidence is chosen in one place, ``evidence``, by the store itself
(``RecordFilter(evidence=True)``: no reflection, no summary, in every
backend's row selection), from the user's own facts and turns; recall, the
entity graph and summaries never feed it. A model, when one is injected,
writes the patterns from the same bundles, and each link it cites is checked
against them (``cognition.reflection.check_links``) and against the store.

A theme reflected before is renewed (the old reflection superseded, kept)
when its evidence changed, and left alone when it did not.
"""
from __future__ import annotations

import logging
import re
from datetime import datetime
from typing import Callable

import numpy as np

from .cognition.reflection import HOW_WORDS, Evidence, Pattern, check_links, find_patterns
from .cognition.facts import said_text, speaker_in
from .cognition.statements import read
from .cognition.tokenize import Tokenizer
from .config import EngineConfig
from .contract import Decision, DecisionOp, MemoryKind
from .hierarchy import path_of
from .llm.client import LLMError
from .llm.extractor import UnparseableAnswer
from .llm.reflector import LLMReflector
from .memory_index import MemoryIndex
from .records import ACTIVE, ARCHIVED, REFLECTION_PATTERN, SUPERSEDED, MemoryRecord, changed_grounds, ended_with
from .stores.port import RecordFilter, StoragePort

log = logging.getLogger("naia_memory")


class ReflectionError(RuntimeError):
    """A reflection or summary reached the evidence: a bug, never stored."""


def about(r: MemoryRecord) -> str:
    """Whose memory it is: the fact's subject ("user", "user/Jake"), or the
    turn's speaker when a conversation names them; themes are found per person."""
    return str(r.metadata.get("subject") or r.metadata.get("speaker") or "user")


class Reflector:
    def __init__(self, *, store: StoragePort, tokenizer: Tokenizer, config: EngineConfig, index: MemoryIndex,
                 new_id: Callable[[str, str, datetime, str], str], embed_one: Callable[[str], np.ndarray],
                 proposer: LLMReflector | None = None) -> None:
        self.store, self.tokenizer, self.config, self.index = store, tokenizer, config, index
        self.new_id, self.embed_one, self.proposer = new_id, embed_one, proposer
        self._readings: dict[str, tuple[str, ...]] = {}

    def evidence(self, project: str | None, now: datetime) -> list[MemoryRecord]:
        """The user's current facts and turns up to ``now``; the store leaves
        out every reflection and summary, and this checks it did."""
        flt = RecordFilter(project=project, kinds=(MemoryKind.FACT, MemoryKind.EPISODE), statuses=(ACTIVE,),
                           created_before=now, evidence=True)
        out = list(self.store.records(flt))
        leaked = [r.id for r in out if r.derived]
        if leaked:
            raise ReflectionError(f"the store returned derived memories as evidence: {leaked}")
        return [r for r in out if r.role == "user"]  # said on the user's side (its facts and turns)

    def run(self, now: datetime, project: str | None = None, into: list[Decision] | None = None) -> list[Decision]:
        """``into``: as ``TopicSummaries.run``'s: the decisions land there as they are made."""
        retired = self._retire_outdated(now, project)
        if into is not None:
            into.extend(retired)
        by_person: dict[tuple[str, str], list[MemoryRecord]] = {}
        for r in self.evidence(project, now):
            by_person.setdefault((r.project, about(r)), []).append(r)
        names = {p: set() for p, _ in by_person}  # every person's name is in their own memories: no theme
        for proj, who in by_person:
            names[proj].update(self.tokenizer.tokens(who.replace("/", " ")))
        said = {key: self._said(recs, names[key[0]]) for key, recs in by_person.items()}
        decisions: list[Decision] = retired if into is None else into
        for (proj, who), recs in sorted(by_person.items()):
            rest = [s for (p, w), ss in said.items() if p == proj and w != who for s in ss.values()]
            counts: dict[str, int] = {}
            for words in rest:
                for w in set(words):
                    counts[w] = counts.get(w, 0) + 1
            others = {w: c / len(rest) for w, c in counts.items()} if rest else None
            self._reflect(proj, who, recs, said[(proj, who)], others, now, into=decisions)
        return decisions

    def _retire_outdated(self, now: datetime, project: str | None) -> list[Decision]:
        """A reflection one of whose evidence was corrected or replaced since
        (superseded, or gone) no longer stands on what holds: it ends, as a
        summary with a changed source does, and the next run finds the theme
        again if it still recurs (it stayed current and answered recall after
        a correction took the theme below its minimum of sessions). Faded
        evidence is still what was said: it does not end a reflection."""
        out = []
        for r in list(self.store.records(RecordFilter(project=project, kinds=(MemoryKind.REFLECTION,),
                                                       statuses=(ACTIVE, ARCHIVED)))):  # a faded one too
            changed = changed_grounds(r, self.store.get)
            if not changed:
                continue
            ev = r.metadata.get("evidence", [])
            r.status, r.valid_to, r.updated_at = SUPERSEDED, ended_with(r, list(changed.values()), now), now
            r.metadata["superseded_reason"] = f"evidence changed: {', '.join(changed)}"
            self.store.update(r)
            out.append(Decision(DecisionOp.DELETE, r.content, None, r.id, None,
                                f"reflection retired: its evidence {', '.join(changed)} changed", now, tuple(ev)))
        return out

    def _said(self, recs: list[MemoryRecord], names: set[str]) -> dict[str, tuple[str, ...]]:
        """Each statement's content words, people's names (and their short forms) left out."""
        out: dict[str, tuple[str, ...]] = {}
        for r in recs:
            words = self._words(said_text(r.content, speaker_in(r.metadata)) if r.kind is MemoryKind.EPISODE else r.content)
            if words is not None:
                out[r.id] = tuple(w for w in words if w not in names and w not in HOW_WORDS
                                  and not (len(w) >= 3 and any(n.startswith(w) for n in names)))
        return out

    def _words(self, text: str) -> tuple[str, ...] | None:
        """What a statement is about (its content words, ``statements.read``);
        None for what states nothing (a question, thanks, a greeting)."""
        hit = self._readings.get(text)
        if hit is None:
            if len(self._readings) > 100_000:
                self._readings.clear()
            r = read(text, self.tokenizer)
            hit = self._readings[text] = tuple(sorted(r.content)) if r.is_fact else ()
        return hit or None

    def _shown(self, theme: str, items) -> str:
        """The word as the evidence says it, not its stem ("awesome", not "awesom")."""
        seen: dict[str, int] = {}
        for it in items:
            for w in re.findall(r"[\w'-]+", it.content):
                if w.lower() not in seen and self.tokenizer.tokens(w) == [theme]:
                    seen[w.lower()] = 0
                if w.lower() in seen:
                    seen[w.lower()] += 1
        return max(seen, key=lambda w: (seen[w], -len(w), w)) if seen else theme

    def _reflect(self, project: str, who: str, recs: list[MemoryRecord], said: dict[str, tuple[str, ...]],
                 others: dict[str, float] | None, now: datetime, *, into: list[Decision]) -> None:
        """Appends each decision to ``into`` as soon as what it wrote is in the
        store: one that fails part-way (the embedder on the second theme) has
        the first logged with it (until session 40 the first reflection was
        written by the next commit, unlogged)."""
        c = self.config
        # when it was said, not when it was consolidated: a fact made on day 5 of a turn said on day 1 is day 1's
        # (it counted as a session of its own, and dated the pattern to when consolidation ran)
        items = {r.id: Evidence(r.id, r.content, r.session or f"day:{(r.valid_from or r.created_at):%Y-%m-%d}",
                                (path_of(r) or (None, None, None))[2], r.valid_from or r.created_at, said[r.id], r.kind is MemoryKind.FACT,
                                r.provenance[0] if r.kind is MemoryKind.FACT and r.provenance else r.id)
                 for r in recs if r.id in said}
        patterns = find_patterns(list(items.values()), min_sessions=c.reflection_min_sessions,
                                 min_topics=c.reflection_min_topics, max_share=c.reflection_max_share,
                                 per_pattern=c.reflection_evidence, limit=c.reflection_patterns,
                                 who=None if who == "user" else who.split("/")[-1], shown=self._shown, others=others)
        existing = {r.metadata.get("theme"): r for r in self.store.records(
            RecordFilter(project=project, kinds=(MemoryKind.REFLECTION,), statuses=(ACTIVE,))) if about(r) == who}
        # a theme whose evidence has not changed since it was reflected is not asked about again
        patterns = [p for p in patterns if p.theme not in existing or set(_shown(existing[p.theme])) != set(p.evidence)]
        if not patterns:
            return
        if self.proposer is None:
            for p in patterns:
                d = self._keep(project, who, p.theme, p.text, list(p.evidence), p, existing, now, "pattern-finder")
                if d is not None:
                    into.append(d)
            return
        self._proposed(project, who, patterns, items, existing, now, into)

    def _proposed(self, project: str, who: str, patterns: list[Pattern], items: dict[str, Evidence],
                  existing: dict, now: datetime, out: list[Decision]) -> None:
        bundles = [[items[i] for i in p.evidence] for p in patterns]
        offered = {e.id: e for b in bundles for e in b}
        try:
            proposals = self.proposer.propose(bundles)
        except UnparseableAnswer as e:
            log.warning("reflection: model answer could not be parsed: %s", e.raw)
            out.append(Decision(DecisionOp.SKIP, "", None, None, None, f"reflection rejected: model answer unparseable ({e.why})",
                                now, tuple(offered), e.raw))
            return
        except LLMError as e:
            log.warning("reflection: model call failed: %s", e)
            out.append(Decision(DecisionOp.SKIP, "", None, None, None, f"reflection not made: model call failed ({e})", now, ()))
            return
        ev = RecordFilter(project=project, statuses=(ACTIVE,), created_before=now, evidence=True)
        for text, cited in proposals:
            problems = check_links(cited, offered, min_sessions=self.config.reflection_min_sessions)
            # and against the store, as it is now: still current, still evidence
            problems += [f"cites {i}, which is no longer evidence" for i in cited if i in offered
                         and ((r := self.store.get(i)) is None or not ev.matches(r))]
            if problems:
                out.append(Decision(DecisionOp.SKIP, text, None, None, None, "reflection rejected: " + "; ".join(problems),
                                    now, tuple(cited)))
                continue
            # the theme is the bundle most of its evidence came from
            theme = max(patterns, key=lambda p: (len(set(p.evidence) & set(cited)), -patterns.index(p))).theme
            pat = next(p for p in patterns if p.theme == theme)
            d = self._keep(project, who, theme, text, cited, pat, existing, now, self.proposer.name)
            if d is not None:
                out.append(d)

    def _keep(self, project: str, who: str, theme: str, text: str, evidence: list[str], p: Pattern, existing: dict,
              now: datetime, writer: str) -> Decision | None:
        old = existing.get(theme)
        if old is not None and set(old.provenance) == set(evidence) and set(_shown(old)) == set(p.evidence):
            return None  # nothing new about this theme
        recs = [self.store.get(i) for i in evidence]
        r = MemoryRecord(
            id=self.new_id("reflection", text, now, project), kind=MemoryKind.REFLECTION, content=text, created_at=now,
            updated_at=now, last_accessed=now, project=project, role="system", tokens=self.tokenizer.tokens(text),
            entities=[theme], importance=max(x.importance for x in recs if x is not None), memory_class="reflection",
            valid_from=now, provenance=list(evidence),
            metadata={"subtype": REFLECTION_PATTERN, "theme": theme, "evidence": list(evidence), "sessions": p.sessions,
                      "topics": p.topics, "first": p.first.isoformat(), "last": p.last.isoformat(), "writer": writer,
                      "subject": who,
                      # what the writer was shown: a model may write from memories it does not cite, so a forget
                      # of any of them takes the reflection (forgetting.derived_links), and an unchanged bundle is
                      # not asked about again
                      "offered": list(p.evidence)})
        self.store.put(r, self.embed_one(text))
        self.index.add(r)
        existing[theme] = r
        if old is None:
            return Decision(DecisionOp.ADD, text, r.id, None, None,
                            f"reflection on {theme!r}: {p.sessions} sessions ({writer})", now, tuple(evidence))
        old.status, old.superseded_by, old.updated_at = SUPERSEDED, r.id, now
        old.valid_to = max(now, old.valid_from or old.created_at)  # (a reflect dated before it began ends nothing earlier)
        old.metadata["superseded_reason"] = "renewed with new evidence"
        self.store.update(old)
        r.supersedes = old.id
        self.store.update(r)
        return Decision(DecisionOp.UPDATE, text, r.id, old.id, None,
                        f"reflection on {theme!r} renewed: {p.sessions} sessions ({writer})", now, tuple(evidence))


def _shown(r: MemoryRecord) -> list[str]:
    """The memories a reflection's writer was shown (before session 40 only what it cited was kept)."""
    return list(r.metadata.get("offered") or r.provenance)


__all__ = ["ReflectionError", "Reflector"]
