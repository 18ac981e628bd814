"""HGVM's parts as the engine exposes them: the hierarchy's trees (placed,
listed), topic summaries and reflection run on demand.

A mixin of ``MemorySystem`` (like ``OwnerControls``); the work is done by
``hierarchy.py``, ``summaries.py`` and ``reflection.py``, which the engine
composes in ``__init__``.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, Callable

from .contract import ConsolidationReport, Decision, InvalidInput, decision_json
from .ownership import locked
from .records import ensure_aware
from .stores.port import RecordFilter
from .validate import check_name
from .stale_retry import again_when_stale


class HgvmControls:
    def _place_unplaced(self, commit: bool = True) -> None:
        """Trees from the stored paths; memories stored before the hierarchy
        was switched on are placed now and saved. With the hierarchy off the
        trees are only listed (``topics``), so they are rebuilt then, not on
        every catch-up with another process's writes. ``commit=False``: the
        caller's own commit saves the places (a re-index is one commit)."""
        if not self.hierarchy.on:
            self.hierarchy.stale = True
            return
        placed = self.hierarchy.rebuild(self.store.records(RecordFilter(statuses=None)))
        for r in placed:
            self.store.update(r)
        if placed and commit:
            self._commit()

    @locked
    def topics(self, *, project: str = "default") -> list[dict[str, Any]]:
        """The project's hierarchy: domains, categories and topics, with their
        parents, how many memories each holds and their most frequent words."""
        check_name(project, "project")
        if self.hierarchy.stale:
            self.hierarchy.rebuild(self.store.records(RecordFilter(statuses=None)))
        return self.hierarchy.topics(project)

    @again_when_stale
    def summarize(self, *, now: datetime | None = None, project: str | None = None) -> ConsolidationReport:
        """Summarise every topic holding enough unsummarised facts now (what
        consolidation does with ``summaries`` on); needs the hierarchy."""
        check_name(project, "project", optional=True)
        if not self.hierarchy.on:
            raise InvalidInput("summaries are written per hierarchy topic: switch on `summaries` (or `hierarchy`) in EngineConfig")
        return self._derive(self.summaries.run, now, project)

    @again_when_stale
    def reflect(self, *, now: datetime | None = None, project: str | None = None) -> ConsolidationReport:
        """Reflect on what recurs across sessions now (what consolidation does with ``reflection`` on)."""
        check_name(project, "project", optional=True)
        return self._derive(self.reflector.run, now, project)

    def _derive(self, step: Callable[..., list[Decision]], now: datetime | None,
                project: str | None) -> ConsolidationReport:
        now = ensure_aware(now)
        with self._lock:
            self._check_open()
            decisions: list[Decision] = []
            try:
                step(now, project, into=decisions)
            finally:  # failed part-way (a model, the embedder): what was written is logged with it, as consolidate does
                if decisions:
                    self.store.append_log(decision_json(d) for d in decisions)
                    self._commit_with_owed()
            if not decisions:
                self._commit_with_owed()
            return ConsolidationReport(0, tuple(decisions))


__all__ = ["HgvmControls"]
