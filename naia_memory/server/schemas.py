"""The REST server's request and response bodies (mem0's shapes), and how a
stored memory reads in them."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..contract import RecallHit

MAX_MESSAGES = 100  # one add: a conversation's worth of turns


class Message(BaseModel):
    role: Literal["user", "assistant", "system", "tool"] = "user"
    content: str


class AddRequest(BaseModel):
    messages: list[Message] = Field(min_length=1, max_length=MAX_MESSAGES)
    user_id: str
    run_id: str | None = Field(None, description="the conversation the messages belong to (a session)")
    agent_id: str | None = Field(None, description="kept in each memory's metadata")
    metadata: dict[str, Any] | None = None
    infer: bool = Field(False, strict=True, description="also consolidate the user's waiting turns into facts now")


class SearchRequest(BaseModel):
    query: str
    user_id: str
    limit: int = Field(10, ge=1, le=100, strict=True)  # a JSON true is not 1


class UpdateRequest(BaseModel):
    text: str
    user_id: str


class ConsolidateRequest(BaseModel):
    user_id: str


class MemoryOut(BaseModel):
    id: str
    memory: str
    kind: str
    user_id: str
    status: str
    role: str | None
    run_id: str | None
    score: float | None = None
    created_at: datetime
    updated_at: datetime
    valid_from: datetime | None
    valid_to: datetime | None
    supersedes: str | None
    superseded_by: str | None
    provenance: list[str]
    source_ids: list[str]


class MemoryList(BaseModel):
    results: list[MemoryOut]


class AddEvent(BaseModel):
    id: str | None
    memory: str
    event: Literal["ADD", "NONE"]
    reason: str


class AddOut(BaseModel):
    results: list[AddEvent]
    consolidated: dict[str, int] | None = None
    consolidation_error: str | None = Field(None, description="with infer: why consolidating failed (the turns are stored)")


class UpdateOut(BaseModel):
    id: str
    previous_id: str
    memory: str


class DeleteOut(BaseModel):
    message: str
    deleted: int


class ConsolidateOut(BaseModel):
    turns: int
    decisions: dict[str, int]


class RevertRequest(BaseModel):
    user_id: str


class SettleRequest(BaseModel):
    user_id: str
    replaces: str | None = Field(description="the fact the statement changed (it ends), or null: none of them")


class DoubtFact(BaseModel):
    id: str
    fact: str


class DoubtOut(BaseModel):
    fact_id: str
    fact: str
    said_id: str | None
    said: str | None
    facts: list[DoubtFact]
    at: datetime


class DoubtList(BaseModel):
    results: list[DoubtOut]


class SettleOut(BaseModel):
    ended: str | None = Field(description="the fact that ended, or null")


class ChangeOut(BaseModel):
    op: Literal["UPDATE", "DELETE"]
    old_id: str
    old: str
    new_id: str | None
    new: str | None
    said_id: str | None
    said: str | None
    reason: str
    at: datetime


class ChangeList(BaseModel):
    results: list[ChangeOut]


class RevertOut(BaseModel):
    id: str = Field(description="the fact that is current again")


class IncognitoRequest(BaseModel):
    user_id: str
    run_id: str = Field(description="the conversation kept out of memory (or let back in)")
    on: bool = Field(True, strict=True, description="true: kept out from now on, across restarts; false: kept again")


class IncognitoOut(BaseModel):
    user_id: str
    run_ids: list[str] = Field(description="this user's conversations kept out of memory")


class MemorySwitch(BaseModel):
    on: bool = Field(strict=True, description="false: nothing is kept or recalled, for every user, until switched on")


class ErrorOut(BaseModel):
    detail: str


ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorOut, "description": "a value the memory refuses (empty or oversized text, a bad name...)"},
    401: {"model": ErrorOut, "description": "no valid bearer token"},
    403: {"model": ErrorOut, "description": "the token acts for another user (or, for the memory switch, for one user)"},
    404: {"model": ErrorOut, "description": "no such memory for this user"},
    413: {"model": ErrorOut, "description": "request body over the server's limit"},
    429: {"model": ErrorOut, "description": "rate limit; see Retry-After"},
    502: {"model": ErrorOut, "description": "the model or embedding server the memory was given failed"},
    503: {"model": ErrorOut, "description": "the store is unavailable (held by another process, damaged, a full disk)"},
}


class HealthOut(BaseModel):
    status: str
    memories: int


def memory_out(h: RecallHit, score: float | None = None) -> MemoryOut:
    md = h.metadata
    return MemoryOut(id=h.id, memory=h.content, kind=h.kind.value, user_id=md["project"], status=md["status"], role=md["role"],
                     run_id=md["session"], score=score, created_at=h.created_at, updated_at=h.updated_at,
                     valid_from=md["valid_from"], valid_to=md["valid_to"], supersedes=md["supersedes"],
                     superseded_by=md["superseded_by"], provenance=list(h.provenance), source_ids=list(md["source_ids"]))
