"""lite: the small-machine provider (the reference's LiteMemoryProvider idea).

One SQLite file (stdlib ``sqlite3``: no extensions), append-only facts,
brute-force cosine over an injected embedder. No gate, consolidation, graph,
decay or background work; projects are strictly separate; a store written
with another embedder is refused with a clear error.
"""
from __future__ import annotations

import json
import os
import sqlite3
from .scratch import scratch_dir
from datetime import datetime
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..validate import check_content, check_kinds, check_memory_id, check_metadata, check_name, check_query, check_role
from ..contract import ConsolidationReport, EncodeResult, InvalidInput, MemoryKind, RecallHit, RecallResult, Role
from ..embedders import Embedder
from ..records import content_id, ensure_aware
from ..stores.cache import check_embedder


class LiteMemoryProvider:
    name = "lite"

    def __init__(self, *, path: str | None = None, embedder: Embedder | Mapping[str, Any] | str | None = None):
        from .naia import build_embedder

        self.embedder = build_embedder(embedder)
        if path is None:
            path = str(Path(scratch_dir("naia-lite-")) / "lite.sqlite")
        self.path = str(Path(path).expanduser())
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        if not Path(self.path).exists():  # private to the user; SQLite gives -wal/-shm the same mode
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        self.db = sqlite3.connect(self.path)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA secure_delete=ON")  # a forgotten row's bytes are zeroed, not left in free pages
        self.db.executescript("""
            CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS facts (
                seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, project TEXT NOT NULL, role TEXT NOT NULL,
                session TEXT, content TEXT NOT NULL, created_at TEXT NOT NULL, metadata TEXT NOT NULL, embedding BLOB NOT NULL);
            CREATE INDEX IF NOT EXISTS facts_project ON facts(project, created_at);
        """)
        row = self.db.execute("SELECT value FROM meta WHERE key='embedder'").fetchone()
        if check_embedder(self.path, json.loads(row[0]) if row else None, self.embedder.name, self.embedder.dim):
            with self.db:
                self.db.execute("INSERT INTO meta VALUES ('embedder', ?)", (json.dumps({"name": self.embedder.name, "dim": self.embedder.dim}),))
        self._matrix: dict[str, tuple[list[tuple], np.ndarray]] = {}

    def encode(self, *, content: str, role: Role | str = Role.USER, session: str | None = None, project: str = "default",
               now: datetime | None = None, metadata: Mapping[str, Any] | None = None) -> EncodeResult:
        check_content(content)
        check_name(project, "project")
        check_name(session, "session", optional=True)
        metadata = check_metadata(metadata)  # the engine's checks, so bad input fails the same way on every provider
        now = ensure_aware(now)
        role_s = check_role(role)
        self._open()
        # the last row number, not the row count: a count falls after a forget and gave a stored row's id
        # again; every stored row's number was below it when its id was made (and it equals the count
        # in a store nothing was forgotten from, so those ids are as before)
        n = self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM facts").fetchone()[0]
        fid = f"lite_{content_id(f'{project}|{now.isoformat()}|{content}|{n}')}"
        vec = self.embedder.embed_passages([content])[0].astype("<f4")
        with self.db:
            self.db.execute("INSERT INTO facts(id, project, role, session, content, created_at, metadata, embedding) VALUES (?,?,?,?,?,?,?,?)",
                            (fid, project, role_s, session, content, now.isoformat(), json.dumps(metadata or {}), vec.tobytes()))
        self._matrix.pop(project, None)
        return EncodeResult(True, fid, "stored (append-only)")

    def _open(self) -> None:
        if self.db is None:  # closed: refused, as the engine refuses (its cache answered recall before)
            raise RuntimeError("this lite provider is closed")

    def _rows(self, project: str) -> tuple[list[tuple], np.ndarray]:
        if project not in self._matrix:
            rows = self.db.execute("SELECT id, role, session, content, created_at, metadata, embedding FROM facts WHERE project = ? ORDER BY seq",
                                   (project,)).fetchall()
            mat = np.stack([np.frombuffer(r[6], dtype="<f4") for r in rows]) if rows else np.zeros((0, self.embedder.dim), np.float32)
            self._matrix[project] = ([r[:6] for r in rows], mat)
        return self._matrix[project]

    def recall(self, *, query: str, top_k: int = 10, project: str = "default", now: datetime | None = None,
               kinds: Sequence[MemoryKind] | None = None) -> RecallResult:
        check_query(query, top_k)
        check_name(project, "project")
        kinds = check_kinds(kinds)
        now = ensure_aware(now)
        self._open()
        rows, mat = self._rows(project)
        if not rows or (kinds and MemoryKind.FACT not in kinds):
            return RecallResult(query=query, hits=())
        sims = mat @ self.embedder.embed_query(query)
        visible = [i for i, r in enumerate(rows) if datetime.fromisoformat(r[4]) <= now]
        order = sorted(visible, key=lambda i: (-sims[i], rows[i][0]))[:top_k]
        hits = []
        for i in order:
            fid, role, session, content, created, meta = rows[i]
            md = json.loads(meta)
            ts = datetime.fromisoformat(created)
            src = md.get("source_id")
            hits.append(RecallHit(id=fid, kind=MemoryKind.FACT, content=content, score=float(sims[i]), created_at=ts, updated_at=ts,
                                  metadata={"role": role, "session": session, "project": project,
                                            "source_ids": (str(src),) if src is not None else ()}))
        return RecallResult(query=query, hits=tuple(hits))

    def consolidate(self, *, now: datetime | None = None) -> ConsolidationReport:
        return ConsolidationReport(0, ())

    def forget(self, *, memory_id: str | None = None, project: str | None = None) -> int:
        if (memory_id is None) == (project is None):
            raise InvalidInput("forget needs exactly one of memory_id= or project=")
        if memory_id is not None:
            check_memory_id(memory_id)  # "" deleted nothing and said 0
        else:
            check_name(project, "project")
        self._open()
        with self.db:
            cur = (self.db.execute("DELETE FROM facts WHERE id = ?", (memory_id,)) if memory_id
                   else self.db.execute("DELETE FROM facts WHERE project = ?", (project,)))
        self._matrix.clear()
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()  # the WAL held the rows' pages
        return cur.rowcount

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None
