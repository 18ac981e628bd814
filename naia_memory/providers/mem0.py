"""mem0 (``mem0ai``, in-process) behind the naia contract, fully offline.

- Telemetry off: ``MEM0_TELEMETRY=False`` is set before mem0 is imported
  (otherwise it reports to PostHog), and ``MEM0_DIR`` points at this run's
  folder.
- Same embedder as naia: mem0 reaches it through an OpenAI-compatible
  server on loopback (``EmbeddingServer``) with the real dimension in both
  the embedder and the vector store (faiss; mem0's default 1536 is wrong
  for 384-d models).
- ``add(..., infer=False)``: mem0 stores each turn as given. Its infer=True
  path (LLM fact extraction and ADD/UPDATE/DELETE) needs a real LLM; pass
  ``llm={"base_url": ..., "model": ..., "api_key": ...}`` to use one.
  Without it, mem0 still insists on an LLM config, so it gets an
  OpenAI-compatible URL on an unused loopback port that is never called;
  every result records ``mem0_infer``.
- Queries as queries: mem0 embeds searches and stored memories with one
  model, and E5-style models want "query: " on a search. Searches
  (``memory_action="search"``) go to the loopback server's ``<name>:query``
  model, everything else to the passage model, so mem0 gets the embedder the
  way naia and ``lite`` use it.
- Hybrid search: mem0 adds BM25 to its semantic score only on a vector
  store with ``keyword_search``; faiss has none, and mem0's Qdrant store
  fetches fastembed's BM25 files from the Hugging Face hub. So the faiss
  store gets one (``mem0_keyword.KeywordFAISS``, ``keyword_search=True``,
  the default): mem0 then runs its own hybrid ranking. Its entity boosts
  need spaCy's English model, not installed: off, as mem0 itself does
  without it (README, "How each peer is run").
- Time: mem0 keeps its own clock, so the turn's ``now`` is stored as metadata
  and recall drops memories created after its ``now``.
"""
from __future__ import annotations

import copy
import os
import threading
from datetime import datetime
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..contract import ConsolidationReport, EncodeResult, MemoryKind, RecallHit, RecallResult, Role
from ..embedders import Embedder
from ..embedders.serve import EmbeddingServer
from ..records import ensure_aware
from ..validate import check_content, check_kinds, check_metadata, check_name, check_query, check_role, unused_loopback_port
from .scratch import scratch_dir


_FACTORY_LOCK = threading.Lock()


class _QueryAware:
    """mem0's embedder, with searches sent to the query model."""

    def __init__(self, passages: Any, queries: Any):
        self._passages, self._queries = passages, queries

    def embed(self, text: Any, memory_action: str | None = None) -> Any:
        return (self._queries if memory_action == "search" else self._passages).embed(text, memory_action)

    def __getattr__(self, name: str) -> Any:  # embed_batch (always "add"), config, ...
        return getattr(self._passages, name)


class Mem0Provider:
    name = "mem0"

    def __init__(self, *, workdir: str | None = None, embedder: Embedder | Mapping[str, Any] | str | None = None,
                 llm: Mapping[str, Any] | None = None, path: str | None = None, oversample: int = 3,
                 keyword_search: bool = True):
        from .naia import build_embedder

        self.embedder = build_embedder(embedder)
        self.workdir = Path(workdir or path or scratch_dir("naia-mem0-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        os.environ["MEM0_TELEMETRY"] = "False"
        os.environ["MEM0_DIR"] = str(self.workdir / ".mem0")
        from mem0 import Memory  # imported only now, after telemetry is off

        self.infer = llm is not None
        self.oversample = oversample
        self._server = EmbeddingServer(self.embedder)
        llm_cfg = dict(llm) if llm else {"base_url": f"http://127.0.0.1:{unused_loopback_port()}/v1", "model": "unused", "api_key": "unused"}
        config = {
            "embedder": {"provider": "openai", "config": {"model": f"{self.embedder.name}", "api_key": "unused",
                                                          "openai_base_url": self._server.base_url, "embedding_dims": self.embedder.dim}},
            "vector_store": {"provider": "faiss", "config": {"collection_name": "naia_bench", "path": str(self.workdir / "faiss"),
                                                             "embedding_model_dims": self.embedder.dim, "distance_strategy": "cosine"}},
            "llm": {"provider": "openai", "config": {"model": llm_cfg["model"], "api_key": llm_cfg.get("api_key", "unused"),
                                                     "openai_base_url": llm_cfg["base_url"]}},
            "history_db_path": str(self.workdir / "history.db"),
        }
        if keyword_search:  # mem0's hybrid search, with a BM25 it can compute offline (mem0_keyword.py)
            from mem0.utils.factory import VectorStoreFactory

            with _FACTORY_LOCK:  # the class map is mem0's global: one provider at a time swaps it
                stock = dict(VectorStoreFactory.provider_to_class)
                VectorStoreFactory.provider_to_class["faiss"] = "naia_memory.providers.mem0_keyword.KeywordFAISS"
                try:
                    self.memory = Memory.from_config(config)
                finally:
                    VectorStoreFactory.provider_to_class.clear()
                    VectorStoreFactory.provider_to_class.update(stock)
        else:
            self.memory = Memory.from_config(config)
        self.keyword_search = keyword_search
        passages = self.memory.embedding_model
        queries = copy.copy(passages)
        queries.config = copy.copy(passages.config)
        queries.config.model = f"{self.embedder.name}:query"
        self.memory.embedding_model = _QueryAware(passages, queries)

    def encode(self, *, content: str, role: Role | str = Role.USER, session: str | None = None, project: str = "default",
               now: datetime | None = None, metadata: Mapping[str, Any] | None = None) -> EncodeResult:
        check_content(content)
        check_name(project, "project")
        check_name(session, "session", optional=True)
        metadata = check_metadata(metadata)  # the engine's checks: bad input fails the same way on every provider
        now = ensure_aware(now)
        role_s = check_role(role)
        md = {"naia_created_ts": now.timestamp(), "naia_role": role_s, "naia_session": session or ""}
        if metadata and metadata.get("source_id") is not None:
            md["naia_source_id"] = str(metadata["source_id"])
        out = self.memory.add([{"role": "user" if role_s == "user" else "assistant", "content": content}],
                              user_id=project, metadata=md, infer=self.infer)
        results = out.get("results", []) if isinstance(out, dict) else []
        if not results:
            return EncodeResult(False, None, "mem0 stored nothing" + (" (infer=True decided NOOP)" if self.infer else ""))
        return EncodeResult(True, str(results[0]["id"]), f"mem0 {results[0].get('event', 'ADD')} (infer={self.infer})")

    def recall(self, *, query: str, top_k: int = 10, project: str = "default", now: datetime | None = None,
               kinds: Sequence[MemoryKind] | None = None) -> RecallResult:
        check_query(query, top_k)
        check_name(project, "project")
        check_kinds(kinds)
        now_ts = ensure_aware(now).timestamp()
        res = self.memory.search(query, top_k=top_k * self.oversample, filters={"user_id": project}, threshold=0.0)
        hits = []
        for item in res.get("results", []):
            md = item.get("metadata") or {}
            if md.get("naia_created_ts", 0) > now_ts:
                continue
            ts = datetime.fromtimestamp(md.get("naia_created_ts", now_ts)).astimezone()
            src = md.get("naia_source_id")
            hits.append(RecallHit(id=str(item["id"]), kind=MemoryKind.FACT if self.infer else MemoryKind.EPISODE,
                                  content=item["memory"], score=float(item.get("score") or 0.0), created_at=ts, updated_at=ts,
                                  metadata={"role": md.get("naia_role"), "session": md.get("naia_session"), "project": project,
                                            "source_ids": (src,) if src else (), "mem0_infer": self.infer}))
            if len(hits) == top_k:
                break
        return RecallResult(query=query, hits=tuple(hits))

    def consolidate(self, *, now: datetime | None = None) -> ConsolidationReport:
        return ConsolidationReport(0, ())  # mem0 consolidates inside add() when infer=True

    def forget(self, *, memory_id: str | None = None, project: str | None = None) -> int:
        if (memory_id is None) == (project is None):
            raise ValueError("forget needs exactly one of memory_id= or project=")
        if memory_id is not None:
            self.memory.delete(memory_id)
            return 1
        n = len(self.memory.get_all(filters={"user_id": project}).get("results", []))
        self.memory.delete_all(user_id=project)
        return n

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        close = getattr(self.memory, "close", None)
        if close:
            close()
