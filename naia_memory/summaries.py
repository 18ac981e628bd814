"""Verified topic summaries in the engine: at consolidation, each hierarchy
topic that holds ``summary_min`` facts not yet summarised gets one summary,
checked against those facts (``cognition.summaries.verify``; with a model,
its own checking pass too) and kept only if nothing is missing, altered or
contradicted; a rejection is logged with its reasons.

A kept summary is a semantic memory (kind fact, ``subtype``
``consolidation_summary``) whose ``summarizes`` list links it to each source
fact (the SUMMARIZES edge, kept in the record so every store holds it) and
whose provenance is its sources' turns, so a hit on it still names the
turns that said it. Sources are never deleted. When a source changes
(superseded, forgotten), the summary no longer stands for what is true:
it is retired at the next run and its topic summarised again.
"""
from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime
from typing import Callable

import numpy as np

from .cognition.hierarchy import top_words
from .cognition.summaries import Source, extractive_summary, verify
from .cognition.tokenize import Tokenizer
from .config import EngineConfig
from .consolidation import source_ids
from .contract import Decision, DecisionOp, MemoryKind
from .hierarchy import Hierarchy, path_of
from .llm.client import LLMError
from .llm.extractor import UnparseableAnswer
from .llm.summarizer import LLMSummarizer
from .memory_index import MemoryIndex
from .records import ACTIVE, ARCHIVED, PATH_KEY, SUMMARY, SUPERSEDED, MemoryRecord, changed_grounds, ended_with, predecessors
from .stores.port import RecordFilter, StoragePort

log = logging.getLogger("naia_memory")

SUMMARIZED_BY = "summarized_by"
_STALE_DEPTH = 8  # predecessors looked at for values a summary must not bring back


class TopicSummaries:
    def __init__(self, *, store: StoragePort, tokenizer: Tokenizer, config: EngineConfig, index: MemoryIndex,
                 hierarchy: Hierarchy, new_id: Callable[[str, str, datetime, str], str],
                 embed_one: Callable[[str], np.ndarray], writer: LLMSummarizer | None = None) -> None:
        self.store, self.tokenizer, self.config, self.index = store, tokenizer, config, index
        self.hierarchy, self.new_id, self.embed_one, self.writer = hierarchy, new_id, embed_one, writer
        self._rejected: set[tuple[str, ...]] = set()  # source sets already refused: not asked again this process

    def run(self, now: datetime, project: str | None = None, into: list[Decision] | None = None) -> list[Decision]:
        """``into``: each decision is appended there as it is made, so a summariser
        that fails part-way leaves the caller the decisions behind what it wrote."""
        decisions = [] if into is None else into
        decisions.extend(self._retire_outdated(now, project))
        flt = RecordFilter(project=project, kinds=(MemoryKind.FACT,), statuses=(ACTIVE,), created_before=now, evidence=True)
        by_topic: dict[tuple[str, tuple[str, str, str]], list[MemoryRecord]] = {}
        for f in self.store.records(flt):
            path = path_of(f)
            if path is not None and not f.metadata.get(SUMMARIZED_BY):
                by_topic.setdefault((f.project, path), []).append(f)
        c = self.config
        for (proj, path), facts in sorted(by_topic.items()):
            facts.sort(key=lambda f: ((f.valid_from or f.created_at), f.id))
            for b in range(0, len(facts), c.summary_max):
                chunk = facts[b:b + c.summary_max]
                if len(chunk) >= c.summary_min:
                    d = self._summarize(proj, path, chunk, now)
                    if d is not None:
                        decisions.append(d)
        return decisions

    @staticmethod
    def _label(facts: list[MemoryRecord], k: int = 3) -> str:
        """The summarised facts' most frequent words, as a topic's label is
        made, but from these facts alone: the topic's label counts every
        member, and a word of a turn forgotten later stayed in the summary
        (on disk, and in the title a model was given)."""
        return top_words(Counter(e for f in facts for e in f.entities), k)

    def _stale(self, f: MemoryRecord) -> tuple[str, ...]:
        """Values the fact's predecessors held (what it replaced)."""
        return tuple(dict.fromkeys(v for p in predecessors(f, self.store.get, _STALE_DEPTH)
                                   for v in (p.metadata.get("values") or ([p.value] if p.value else []))))

    def _summarize(self, project: str, path: tuple[str, str, str], facts: list[MemoryRecord],
                   now: datetime) -> Decision | None:
        ids = tuple(f.id for f in facts)
        if ids in self._rejected:
            return None
        sources = [Source(f.id, f.content, tuple(f.metadata.get("values") or ([f.value] if f.value else [])), self._stale(f))
                   for f in facts]
        label = self._label(facts)
        words = self.tokenizer.tokens
        try:
            if self.writer is None:
                text, how = extractive_summary(sources), "extractive, checked mechanically"
                problems = verify(text, sources, words)
            else:
                text, how = self.writer.write(label, sources), f"written by {self.writer.name}, checked mechanically and by a second pass"
                problems = verify(text, sources, words) + self.writer.check(text, sources)
        except UnparseableAnswer as e:
            self._rejected.add(ids)
            log.warning("summary of topic %s: model answer could not be parsed: %s", path[2], e.raw)
            return Decision(DecisionOp.SKIP, "", None, None, None, f"summary rejected: model answer unparseable ({e.why})",
                            now, ids, e.raw)
        except LLMError as e:  # the next consolidation asks again
            log.warning("summary of topic %s: model call failed: %s", path[2], e)
            return Decision(DecisionOp.SKIP, "", None, None, None, f"summary not written: model call failed ({e})", now, ids)
        if problems:
            self._rejected.add(ids)
            return Decision(DecisionOp.SKIP, text, None, None, None, "summary rejected: " + "; ".join(problems), now, ids)
        vec = self.embed_one(text)
        episodes = list(dict.fromkeys(p for f in facts for p in f.provenance))
        summary = MemoryRecord(
            id=self.new_id("summary", text, now, project), kind=MemoryKind.FACT, content=text, created_at=now,
            updated_at=now, last_accessed=now, project=project, role="system", tokens=words(text),
            entities=sorted({e for f in facts for e in f.entities}), importance=max(f.importance for f in facts),
            memory_class="observation", valid_from=min((f.valid_from or f.created_at) for f in facts), provenance=episodes,
            metadata={"subtype": SUMMARY, "summarizes": list(ids), "topic": path[2], "label": label, "verified": how,
                      "subject": "user", "source_ids": list(dict.fromkeys(s for f in facts for s in source_ids(f))),
                      PATH_KEY: list(path)})
        self.store.put(summary, vec)
        self.hierarchy.adopt(summary, vec)
        self.index.add(summary)
        for f in facts:
            f.metadata[SUMMARIZED_BY] = summary.id
            self.store.update(f)
        return Decision(DecisionOp.ADD, text, summary.id, None, None,
                        f"summary of topic {path[2]} ({len(facts)} facts; {how})", now, ids)

    def _retire_outdated(self, now: datetime, project: str | None) -> list[Decision]:
        """Summaries with a source that is no longer current stand for what was
        true: ended (kept, like a superseded fact), their sources free again."""
        out = []
        # a faded summary too: it stood for its sources, and left alone they stay marked summarised for good
        for s in list(self.store.records(RecordFilter(project=project, kinds=(MemoryKind.FACT,), statuses=(ACTIVE, ARCHIVED)))):
            if s.subtype != SUMMARY:
                continue
            changed = changed_grounds(s, self.store.get)  # faded is still what holds: it ends nothing
            if not changed:
                continue
            srcs = {i: self.store.get(i) for i in s.metadata.get("summarizes", [])}
            s.status, s.valid_to, s.updated_at = SUPERSEDED, ended_with(s, list(changed.values()), now), now
            s.metadata["superseded_reason"] = f"source changed: {', '.join(changed)}"
            self.store.update(s)
            for r in srcs.values():
                if r is not None and r.metadata.get(SUMMARIZED_BY) == s.id:
                    del r.metadata[SUMMARIZED_BY]
                    self.store.update(r)
            out.append(Decision(DecisionOp.DELETE, s.content, None, s.id, None,
                                f"summary retired: its source(s) {', '.join(changed)} changed", now, tuple(srcs)))
        return out


__all__ = ["SUMMARIZED_BY", "TopicSummaries"]
