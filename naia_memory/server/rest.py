"""A REST server over one ``MemorySystem``, in the shape of mem0's REST API.

    POST   /memories                 add messages for a user (each one a turn)
    GET    /memories?user_id=        list a user's memories
    GET    /memories/{id}?user_id=   one memory
    PUT    /memories/{id}            correct it (the old version stays as history)
    GET    /memories/{id}/history    every version, oldest first
    GET    /changes?user_id=         the facts recently ended by what the user said, newest first
    POST   /memories/{id}/revert     take one of those back (the old fact is current again)
    GET    /doubts?user_id=          statements that read as a change of a fact the rules could not name
    POST   /memories/{id}/settle     the user's answer: which fact it changed, or none
    DELETE /memories/{id}?user_id=   forget it (and what was made from it)
    DELETE /memories?user_id=        forget everything of a user
    POST   /search                   recall for a user
    POST   /consolidate              turn a user's waiting turns into facts
    GET    /incognito?user_id=       the user's conversations kept out of memory
    PUT    /incognito                keep a conversation (run_id) out of memory, or let it back in
    GET    /memory-switch            is memory on
    PUT    /memory-switch            memory off (nothing kept or recalled) or on, for the whole store
    GET    /health                   liveness, no auth

Both switches are saved in the store: they hold across a restart of the
server. The memory switch acts for every user, so a token bound to one user
may not flip it (403).

A user is a project of the store: every request names its ``user_id`` and
can reach only that project's memories; another user's id answers 404, as
an id that does not exist (no request learns that it does). A bearer token
is required unless auth is explicitly switched off, which is refused for
any address but loopback; a token may be bound to one user (it then acts for
no other) or act for any. Bodies are capped in bytes and each client is rate
limited (``limits.py``). The engine's lock makes one store safe across the
server's worker threads; run one server process per store (a second process
on a JSON store is refused by its lock).
"""
from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import time
from collections import Counter
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Mapping

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..contract import InvalidInput, RecallHit, UnknownMemoryError
from ..embedders.base import EmbedderError
from ..llm.client import LLMError
from ..stores.port import StoreError
from ..validate import check_name
from .limits import RateLimiter, check_rate
from .schemas import (
    ERRORS,
    AddEvent,
    AddOut,
    AddRequest,
    ChangeList,
    ChangeOut,
    ConsolidateOut,
    ConsolidateRequest,
    DeleteOut,
    DoubtList,
    IncognitoOut,
    IncognitoRequest,
    MemorySwitch,
    DoubtOut,
    HealthOut,
    MemoryList,
    MemoryOut,
    RevertOut,
    RevertRequest,
    SearchRequest,
    SettleOut,
    SettleRequest,
    UpdateOut,
    UpdateRequest,
    memory_out,
)

@dataclass(frozen=True)
class ServerSettings:
    """``tokens`` maps a bearer token to the user it acts for (None: any user)."""

    tokens: Mapping[str, str | None] = field(default_factory=dict)
    auth: bool = True
    host: str = "127.0.0.1"
    max_body_bytes: int = 1 << 20
    rate: float = 50.0  # requests a second per client, on average
    burst: int = 100

    def check(self) -> None:
        if self.auth and not self.tokens:
            raise ValueError("the server needs at least one bearer token (or auth switched off, on loopback only)")
        if not self.auth and not is_loopback(self.host):
            raise ValueError(f"auth can be switched off only on a loopback address, not {self.host!r}")
        for token, user in self.tokens.items():
            if len(token) < 16:
                raise ValueError("a bearer token must have at least 16 characters")
            check_name(user, "token user", optional=True)
        if self.max_body_bytes < 1024:
            raise ValueError("max_body_bytes must be at least 1024")
        check_rate(self.rate, self.burst)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# ---------------------------------------------------------------- errors
class _BodyLimit:
    """Refuses a body over the cap before the app sees any of it: by its
    declared length, or, with none declared, by reading at most ``limit``
    bytes of it here (the app then gets the buffered body)."""

    def __init__(self, app, limit: int) -> None:
        self.app, self.limit = app, limit

    async def _refuse(self, scope, receive, send) -> None:
        response = JSONResponse({"detail": f"request body over {self.limit} bytes"}, status_code=413)
        await response(scope, receive, send)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            return await self._refuse(scope, receive, send)
        if declared is not None:
            return await self.app(scope, receive, send)
        chunks, seen = [], 0
        while True:
            msg = await receive()
            if msg["type"] != "http.request":  # the client went away
                return
            chunks.append(msg.get("body", b""))
            seen += len(chunks[-1])
            if seen > self.limit:
                return await self._refuse(scope, receive, send)
            if not msg.get("more_body", False):
                break
        body, sent = b"".join(chunks), False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await self.app(scope, replay, send)


def _error_handlers(app: FastAPI) -> None:
    @app.exception_handler(InvalidInput)
    async def bad_value(_request: Request, e: InvalidInput):  # the engine's boundary checks; any other ValueError is a bug: 500
        return JSONResponse({"detail": str(e)}, status_code=400)

    @app.exception_handler(RequestValidationError)
    async def unreadable(_request: Request, e: RequestValidationError):
        # FastAPI's own answer echoes the input back, and JSON cannot write a NaN or an Infinity the client sent,
        # so the client's mistake came back as a 500; the input is left out of what is echoed
        errors = [{k: v for k, v in err.items() if k not in ("input", "ctx")} for err in e.errors()]
        return JSONResponse({"detail": jsonable_encoder(errors)}, status_code=422)

    @app.exception_handler(UnknownMemoryError)
    async def unknown_id(_request: Request, e: UnknownMemoryError):
        return JSONResponse({"detail": e.args[0] if e.args else "not found"}, status_code=404)

    @app.exception_handler(LLMError)
    async def model_failed(_request: Request, e: LLMError):  # the model server the user named: down, slow, refusing
        return JSONResponse({"detail": f"the model server failed: {e}"}, status_code=502)

    @app.exception_handler(EmbedderError)
    async def embedder_failed(_request: Request, e: EmbedderError):  # the embedding server the user named, or its model
        return JSONResponse({"detail": f"the embedding model failed: {e}"}, status_code=502)

    @app.exception_handler(StoreError)
    async def store_unavailable(_request: Request, e: StoreError):  # damaged, locked by another process, closed
        return JSONResponse({"detail": f"the store is unavailable: {e}"}, status_code=503, headers={"Retry-After": "5"})

    @app.exception_handler(OSError)
    async def store_unwritable(_request: Request, e: OSError):  # a full disk, a file taken away: the call wrote nothing
        return JSONResponse({"detail": f"the store could not be written: {e.strerror or e}"}, status_code=503,
                            headers={"Retry-After": "5"})


# ---------------------------------------------------------------- app
@dataclass(frozen=True)
class Caller:
    user: str | None  # the user a bound token acts for; None: any


def create_app(memory, settings: ServerSettings, *, clock=time.monotonic) -> FastAPI:
    """The app over ``memory`` (a ``MemorySystem``); ``clock`` drives the rate limit."""
    settings.check()
    limiter = RateLimiter(settings.rate, settings.burst)
    bearer = HTTPBearer(auto_error=False, description="a token given to the server (--token-env)")
    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        getattr(memory, "warm_up", lambda: None)()  # before the first request: it does not wait for the analyser to load
        yield

    app = FastAPI(title="naia-memory", version="0.1.0", lifespan=lifespan,
                  description="Long-term memory for AI agents, on the user's machine. Every call names its user_id; "
                              "a user reaches only their own memories.", responses=ERRORS)
    app.add_middleware(_BodyLimit, limit=settings.max_body_bytes)
    _error_handlers(app)

    def caller(request: Request, creds: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Caller:
        if settings.auth:
            token = creds.credentials if creds is not None and creds.scheme.lower() == "bearer" else ""
            bound: str | None = None
            found = False
            for known, user in settings.tokens.items():  # every token compared, in constant time
                if hmac.compare_digest(known.encode(), token.encode()) and token:
                    found, bound = True, user
            if not found:
                raise HTTPException(401, "a valid bearer token is required", headers={"WWW-Authenticate": "Bearer"})
            client = "token:" + hashlib.sha256(token.encode()).hexdigest()[:16]
        else:
            bound, client = None, "addr:" + (request.client.host if request.client else "?")
        wait = limiter.take(client, clock())
        if wait > 0:
            raise HTTPException(429, "too many requests", headers={"Retry-After": str(max(1, math.ceil(wait)))})
        return Caller(bound)

    def acting(who: Caller, user_id: str) -> str:
        check_name(user_id, "user_id")
        if who.user is not None and who.user != user_id:
            raise HTTPException(403, "this token acts for another user")
        return user_id

    def owned(memory_id: str, user: str) -> RecallHit:
        hit = memory.get(memory_id) if isinstance(memory_id, str) and memory_id else None
        if hit is None or hit.metadata["project"] != user:  # another user's memory reads as missing
            raise HTTPException(404, f"no memory with id {memory_id!r} for this user")
        return hit

    @app.get("/health", response_model=HealthOut, tags=["server"])
    def health() -> HealthOut:
        return HealthOut(status="ok", memories=len(memory.store))

    @app.post("/memories", response_model=AddOut, tags=["memories"])
    def add(body: AddRequest, who: Caller = Depends(caller)) -> AddOut:
        user = acting(who, body.user_id)
        extra = dict(body.metadata or {})
        if body.agent_id is not None:
            extra["agent_id"] = check_name(body.agent_id, "agent_id")
        turns = [{"content": m.content, "role": m.role, "session": body.run_id, "metadata": extra or None} for m in body.messages]
        results = memory.encode_many(turns=turns, project=user)
        events = [AddEvent(id=r.id, memory=m.content, event="ADD" if r.stored else "NONE", reason=r.reason)
                  for m, r in zip(body.messages, results)]
        done, failed = None, None
        if body.infer:  # the turns are stored either way: a failed consolidation must not read as a failed add
            try:                                    # (a client retrying it stored every turn twice)
                done = _consolidate(memory, user).decisions
            except (LLMError, EmbedderError, StoreError, OSError) as e:  # a model, or the store's commit (a full disk)
                why = e.strerror if isinstance(e, OSError) and e.strerror else e
                failed = f"the turns are stored; consolidating them failed and is tried again next time: {why}"
        return AddOut(results=events, consolidated=done, consolidation_error=failed)

    @app.get("/memories", response_model=MemoryList, tags=["memories"])
    def list_memories(user_id: str = Query(...), include_inactive: bool = Query(False),
                      who: Caller = Depends(caller)) -> MemoryList:
        user = acting(who, user_id)
        return MemoryList(results=[memory_out(h) for h in memory.memories(project=user, include_inactive=include_inactive)])

    @app.get("/memories/{memory_id}", response_model=MemoryOut, tags=["memories"])
    def get_memory(memory_id: str, user_id: str = Query(...), who: Caller = Depends(caller)) -> MemoryOut:
        return memory_out(owned(memory_id, acting(who, user_id)))

    @app.put("/memories/{memory_id}", response_model=UpdateOut, tags=["memories"])
    def update(memory_id: str, body: UpdateRequest, who: Caller = Depends(caller)) -> UpdateOut:
        owned(memory_id, acting(who, body.user_id))
        new_id = memory.edit(memory_id=memory_id, content=body.text)
        return UpdateOut(id=new_id, previous_id=memory_id, memory=body.text)

    @app.get("/memories/{memory_id}/history", response_model=MemoryList, tags=["memories"])
    def history(memory_id: str, user_id: str = Query(...), who: Caller = Depends(caller)) -> MemoryList:
        user = acting(who, user_id)
        owned(memory_id, user)
        return MemoryList(results=[memory_out(h) for h in memory.history(memory_id=memory_id) if h.metadata["project"] == user])

    @app.get("/changes", response_model=ChangeList, tags=["memories"])
    def changes(user_id: str = Query(...), limit: int = Query(50, ge=1, le=1000),
                who: Caller = Depends(caller)) -> ChangeList:
        user = acting(who, user_id)
        return ChangeList(results=[ChangeOut(**c.to_json()) for c in memory.changes(project=user, limit=limit)])

    @app.post("/memories/{memory_id}/revert", response_model=RevertOut, tags=["memories"])
    def revert(memory_id: str, body: RevertRequest, who: Caller = Depends(caller)) -> RevertOut:
        owned(memory_id, acting(who, body.user_id))
        return RevertOut(id=memory.revert(memory_id=memory_id))

    @app.get("/doubts", response_model=DoubtList, tags=["memories"])
    def doubts(user_id: str = Query(...), limit: int = Query(50, ge=1, le=1000),
               who: Caller = Depends(caller)) -> DoubtList:
        user = acting(who, user_id)
        return DoubtList(results=[DoubtOut(**d.to_json()) for d in memory.doubts(project=user, limit=limit)])

    @app.post("/memories/{memory_id}/settle", response_model=SettleOut, tags=["memories"])
    def settle(memory_id: str, body: SettleRequest, who: Caller = Depends(caller)) -> SettleOut:
        user = acting(who, body.user_id)
        owned(memory_id, user)
        if body.replaces is not None:
            owned(body.replaces, user)
        return SettleOut(ended=memory.settle(memory_id=memory_id, replaces=body.replaces))

    @app.delete("/memories/{memory_id}", response_model=DeleteOut, tags=["memories"])
    def delete(memory_id: str, user_id: str = Query(...), who: Caller = Depends(caller)) -> DeleteOut:
        owned(memory_id, acting(who, user_id))
        n = memory.forget(memory_id=memory_id)
        return DeleteOut(message=f"forgot {memory_id} and what was made from it", deleted=n)

    @app.delete("/memories", response_model=DeleteOut, tags=["memories"])
    def delete_all(user_id: str = Query(...), who: Caller = Depends(caller)) -> DeleteOut:
        user = acting(who, user_id)
        n = memory.forget(project=user)
        return DeleteOut(message=f"forgot every memory of {user}", deleted=n)

    @app.post("/search", response_model=MemoryList, tags=["memories"])
    def search(body: SearchRequest, who: Caller = Depends(caller)) -> MemoryList:
        user = acting(who, body.user_id)
        res = memory.recall(query=body.query, top_k=body.limit, project=user)
        return MemoryList(results=[memory_out(h, score=h.score) for h in res.hits])

    @app.post("/consolidate", response_model=ConsolidateOut, tags=["memories"])
    def consolidate(body: ConsolidateRequest, who: Caller = Depends(caller)) -> ConsolidateOut:
        return _consolidate(memory, acting(who, body.user_id))

    @app.get("/incognito", response_model=IncognitoOut, tags=["switches"])
    def incognito(user_id: str = Query(...), who: Caller = Depends(caller)) -> IncognitoOut:
        user = acting(who, user_id)
        return IncognitoOut(user_id=user, run_ids=memory.incognito_sessions(project=user))

    @app.put("/incognito", response_model=IncognitoOut, tags=["switches"])
    def set_incognito(body: IncognitoRequest, who: Caller = Depends(caller)) -> IncognitoOut:
        user = acting(who, body.user_id)
        memory.set_incognito(session=body.run_id, on=body.on, project=user)
        return IncognitoOut(user_id=user, run_ids=memory.incognito_sessions(project=user))

    @app.get("/memory-switch", response_model=MemorySwitch, tags=["switches"])
    def memory_switch(who: Caller = Depends(caller)) -> MemorySwitch:
        return MemorySwitch(on=memory.enabled)

    @app.put("/memory-switch", response_model=MemorySwitch, tags=["switches"])
    def flip_memory(body: MemorySwitch, who: Caller = Depends(caller)) -> MemorySwitch:
        if who.user is not None:
            raise HTTPException(403, "this token acts for one user; memory on/off is the whole store's")
        if body.on:
            memory.enable()
        else:
            memory.disable()
        return MemorySwitch(on=memory.enabled)

    return app


def _consolidate(memory, user: str) -> ConsolidateOut:
    rep = memory.consolidate(project=user)
    return ConsolidateOut(turns=rep.episodes_processed, decisions=dict(Counter(d.op.value for d in rep.decisions)))


def serve(memory, settings: ServerSettings, port: int = 8765) -> None:
    """Run the server in this process until interrupted (the CLI's ``serve rest``)."""
    import uvicorn

    uvicorn.run(create_app(memory, settings), host=settings.host, port=port, log_level="info", workers=1)


__all__ = ["ServerSettings", "create_app", "serve", "is_loopback"]
