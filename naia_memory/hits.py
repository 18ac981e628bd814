"""A stored record as the ``RecallHit`` the contract returns."""
from __future__ import annotations

from types import MappingProxyType
from typing import Sequence

from .consolidation import source_ids
from .contract import RecallHit
from .records import SUMMARY, MemoryRecord


def to_hit(r: MemoryRecord, score: float, members: Sequence[MemoryRecord] = (), lead: int = 0) -> RecallHit:
    """``members``: what the hit stands for in a recall (a fact's folded turns,
    a superseded turn it now answers), listed in ``covers``; their ids join the
    hit's own in ``source_ids``, after them, except the first ``lead`` members,
    which matched the query better than the hit itself and so come first."""
    first = [sid for m in members[:lead] for sid in source_ids(m)]
    rest = [sid for m in members[lead:] for sid in source_ids(m)]
    if r.subtype == SUMMARY and members:
        # a summary stands for many turns; the ones this query reached are its
        # sources here (all of them stay in provenance and ``summarizes``)
        sources = list(dict.fromkeys([*first, *rest]))
    else:
        sources = list(dict.fromkeys([*first, *source_ids(r), *rest]))
    return RecallHit(
        id=r.id, kind=r.kind, content=r.content, score=float(score), created_at=r.created_at, updated_at=r.updated_at,
        provenance=tuple(r.provenance),
        metadata=MappingProxyType({"status": r.status, "role": r.role, "session": r.session, "project": r.project, "attribute": r.attribute,
                  "memory_class": r.memory_class, "recall_count": r.recall_count, "valid_from": r.valid_from,
                  "valid_to": r.valid_to, "supersedes": r.supersedes, "superseded_by": r.superseded_by,
                  "subject": r.metadata.get("subject", "user"), "source_ids": tuple(sources),
                  "covers": tuple(m.id for m in members), "when": tuple(tuple(w) for w in r.metadata.get("when", ())),
                  # a summary or reflection says so, with the memories it stands on
                  "subtype": r.subtype, "derived": r.derived,
                  "summarizes": tuple(r.metadata.get("summarizes", ())), "evidence": tuple(r.metadata.get("evidence", ()))}),
    )
