"""Letta archival memory (passages insert + search) behind the naia contract.

Talks to a Letta server through ``letta-client``; the server runs in its own
virtual environment because its pins clash with ours (start and stop it with
``python -m naia_memory.providers.letta_server``). One agent per project;
each turn becomes a passage created at the turn's time, tagged with its role
and source id. Recall is Letta's passage search, cut at ``now``.

The agent needs an LLM config even to store passages; it gets an
OpenAI-compatible URL on an unused loopback port that is never called. The
embedding config is always explicit (Letta's default handle is a hosted
service) and points at the same embedder naia uses, served on loopback.
Letta's search returns no scores: hits are scored 1/rank. Letta embeds a
search with the same model as a passage; E5-style models want "query: " on
searches, so the provider sends its searches marked ``query: `` and the
loopback server embeds them as queries (``embedders.serve``).
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from ..contract import ConsolidationReport, EncodeResult, MemoryKind, RecallHit, RecallResult, Role
from ..embedders import Embedder
from ..embedders.serve import QUERY_MARK, EmbeddingServer
from ..records import ensure_aware
from ..validate import check_content, check_kinds, check_metadata, check_name, check_query, check_role, unused_loopback_port


class LettaProvider:
    name = "letta"

    def __init__(self, *, base_url: str = "http://127.0.0.1:8283", embedder: Embedder | Mapping[str, Any] | str | None = None,
                 path: str | None = None, run_id: str | None = None, timeout_s: float = 60.0):
        from letta_client import Letta

        from .naia import build_embedder

        if not base_url.startswith(("http://127.", "http://localhost", "http://[::1]")):
            raise ValueError("the letta provider only talks to a server on loopback; start one with python -m naia_memory.providers.letta_server")
        self.embedder = build_embedder(embedder)
        self.client = Letta(base_url=base_url, timeout=timeout_s)
        self._server = EmbeddingServer(self.embedder)
        self._llm_port = unused_loopback_port()
        self._agents: dict[str, str] = {}
        self._owner: dict[str, str] = {}  # passage id -> agent id
        self._run = run_id or f"{id(self):x}"

    def _agent(self, project: str) -> str:
        if project not in self._agents:
            agent = self.client.agents.create(
                name=f"naia-{self._run}-{project}",
                include_base_tools=False,
                llm_config={"model": "unused", "model_endpoint_type": "openai",
                            "model_endpoint": f"http://127.0.0.1:{self._llm_port}/v1", "context_window": 8192},
                embedding_config={"embedding_endpoint_type": "openai", "embedding_endpoint": self._server.base_url,
                                  "embedding_model": self.embedder.name, "embedding_dim": self.embedder.dim,
                                  "embedding_chunk_size": 8191, "batch_size": 32},
                memory_blocks=[],
            )
            self._agents[project] = agent.id
        return self._agents[project]

    def encode(self, *, content: str, role: Role | str = Role.USER, session: str | None = None, project: str = "default",
               now: datetime | None = None, metadata: Mapping[str, Any] | None = None) -> EncodeResult:
        check_content(content)
        check_name(project, "project")
        check_name(session, "session", optional=True)
        metadata = check_metadata(metadata)  # the engine's checks: bad input fails the same way on every provider
        now = ensure_aware(now)
        role_s = check_role(role)
        tags = [f"role:{role_s}"]
        if metadata and metadata.get("source_id") is not None:
            tags.append(f"src:{metadata['source_id']}")
        agent = self._agent(project)
        out = self.client.agents.passages.create(agent, text=content, created_at=now, tags=tags)
        first = out[0] if isinstance(out, list) and out else out
        pid = str(getattr(first, "id", "") or "")
        if not pid:
            raise RuntimeError(f"Letta answered a passage insert without an id: {out!r}")
        self._owner[pid] = agent
        return EncodeResult(True, pid, "letta archival passage")

    def recall(self, *, query: str, top_k: int = 10, project: str = "default", now: datetime | None = None,
               kinds: Sequence[MemoryKind] | None = None) -> RecallResult:
        check_query(query, top_k)
        check_name(project, "project")
        check_kinds(kinds)
        if project not in self._agents:
            return RecallResult(query=query, hits=())
        now = ensure_aware(now)
        # marked as a query: Letta embeds searches and passages with one model, the loopback server tells them apart
        res = self.client.agents.passages.search(self._agents[project], query=QUERY_MARK + query, top_k=top_k, end_datetime=now)
        hits = []
        for rank, r in enumerate(res.results, start=1):
            tags = r.tags or []
            src = tuple(t[4:] for t in tags if t.startswith("src:"))
            try:
                ts = datetime.fromisoformat(r.timestamp)
            except ValueError:
                ts = now
            ts = ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)
            if ts > now:
                continue
            hits.append(RecallHit(id=r.id, kind=MemoryKind.EPISODE, content=r.content, score=1.0 / rank, created_at=ts,
                                  updated_at=ts, metadata={"project": project, "source_ids": src,
                                                           "role": next((t[5:] for t in tags if t.startswith("role:")), None)}))
        return RecallResult(query=query, hits=tuple(hits))

    def consolidate(self, *, now: datetime | None = None) -> ConsolidationReport:
        return ConsolidationReport(0, ())  # archival passages are not consolidated

    def forget(self, *, memory_id: str | None = None, project: str | None = None) -> int:
        if (memory_id is None) == (project is None):
            raise ValueError("forget needs exactly one of memory_id= or project=")
        if project is not None:
            agent = self._agents.pop(project, None)
            if agent is None:
                return 0
            n = len(self.client.agents.passages.list(agent, limit=10_000))
            self.client.agents.delete(agent)
            self._owner = {p: a for p, a in self._owner.items() if a != agent}
            return n
        agent = self._owner.pop(memory_id, None)
        if agent is None:
            return 0
        self.client.agents.passages.delete(memory_id, agent_id=agent)
        return 1

    def close(self) -> None:
        for agent in list(self._agents.values()):
            try:
                self.client.agents.delete(agent)
            except Exception as e:  # the server may already be gone; say so
                import logging

                logging.getLogger("naia_memory").warning("could not delete Letta agent %s: %s", agent, e)
        self._agents.clear()
        if self._server is not None:
            self._server.close()
            self._server = None
