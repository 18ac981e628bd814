"""An MCP server over one ``MemorySystem`` (the ``mcp`` SDK, 2.x).

Tools: ``remember`` (store a turn), ``recall`` (what is relevant to a
query), ``forget`` (one memory, with what was made from it), ``list``
(the memories, newest last), ``consolidate`` (waiting turns into facts),
``changes`` (the facts recently ended by what the user said),
``revert`` (take one of those back), ``doubts`` (statements that read as
a change the rules could not tie to a fact), ``settle`` (the user's answer),
``incognito`` (keep a conversation out of memory) and ``memory_switch``
(memory off or on); both switches hold across restarts.
One server serves one project: an agent reaches that project only, and an
id from another project is reported as unknown. Errors come back as tool
errors carrying the engine's message (a too-long text, an unknown id).
"""
from __future__ import annotations

import functools
from typing import Annotated, Any, Callable, Literal

from pydantic import BeforeValidator, Field

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from ..contract import InvalidInput, MemoryKind, RecallHit, Role, UnknownMemoryError
from ..embedders.base import EmbedderError
from ..llm.client import LLMError
from ..stores.port import StoreError
from ..validate import check_name

INSTRUCTIONS = ("Long-term memory of the user, kept on their machine. Call recall before answering about the user "
                "or earlier conversations; call remember with what the user said that is worth keeping; call "
                "consolidate when the conversation is idle, then doubts, and ask the user about any it lists "
                "(settle with the answer); forget only on the user's request. When the user asks not to keep a "
                "conversation, call incognito with its session; when they ask you to stop remembering, memory_switch "
                "with on=false.")


def _hit(h: RecallHit, score: bool = False) -> dict[str, Any]:
    # "turns": the ids of the turns it was drawn from (a fact's provenance; remember returns those ids);
    # "sources": the caller's own ids for them, which only the library and REST can set
    out = {"id": h.id, "memory": h.content, "kind": h.kind.value, "created_at": h.created_at.isoformat(),
           "status": h.metadata["status"], "turns": list(h.provenance), "sources": list(h.metadata["source_ids"])}
    if score:
        out["score"] = round(h.score, 4)
    return out


def _told(fn: Callable) -> Callable:
    """The engine's own errors (a value refused at the door, an unknown id,
    a store another process holds, a model or embedding server that failed,
    a full disk) reach the agent with their message;
    anything else, another ValueError included, is a crash the SDK reports
    without details."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except UnknownMemoryError as e:
            raise ToolError(e.args[0] if e.args else "not found") from None
        except (InvalidInput, StoreError) as e:
            raise ToolError(str(e)) from None
        except LLMError as e:  # the model server the user named: down, slow, refusing
            raise ToolError(f"the model server failed: {e}") from None
        except EmbedderError as e:
            raise ToolError(f"the embedding model failed: {e}") from None
        except OSError as e:  # a full disk, a file taken away: the call wrote nothing
            raise ToolError(f"the store could not be written: {e.strerror or e}") from None
    return call


def _no_bool(v: Any) -> Any:
    if isinstance(v, bool):  # a JSON true is not the number 1
        raise ValueError("a whole number is expected, not true/false")
    return v


def _lower(v: Any) -> Any:
    return v.strip().lower() if isinstance(v, str) else v  # "User" is the user, as the engine reads it


# the limits the engine enforces, stated in the tools' schemas; "3" and 3.0 still read as 3 (some hosts send
# every argument as a string), a boolean does not
Count = Annotated[int, BeforeValidator(_no_bool), Field(ge=1)]
RoleName = Annotated[Literal[tuple(r.value for r in Role)], BeforeValidator(_lower)]  # type: ignore[valid-type]
KindName = Literal[tuple(k.value for k in MemoryKind)]  # type: ignore[valid-type]


def build_mcp(memory, project: str = "default") -> MCPServer:
    check_name(project, "project")
    server = MCPServer(name="naia-memory", instructions=INSTRUCTIONS, version="0.1.0")

    def _own(memory_id: str) -> None:
        hit = memory.get(memory_id)
        if hit is None or hit.metadata["project"] != project:
            raise UnknownMemoryError(f"no memory with id {memory_id!r}")

    @server.tool(description="Store one turn of the conversation if it is worth keeping (the importance gate decides).")
    @_told
    def remember(content: str, role: RoleName = "user", session: str | None = None) -> dict[str, Any]:
        r = memory.encode(content=content, role=role, session=session, project=project)
        return {"stored": r.stored, "id": r.id, "reason": r.reason}

    @server.tool(description="The memories most relevant to a query, best first, each with the ids of the turns it "
                             "came from ('turns').")
    @_told
    def recall(query: str, top_k: Count = 5) -> list[dict[str, Any]]:
        return [_hit(h, score=True) for h in memory.recall(query=query, top_k=top_k, project=project).hits]

    @server.tool(description="Erase one memory by id, and what was made from it (the user's request only).")
    @_told
    def forget(memory_id: str) -> dict[str, Any]:
        _own(memory_id)
        return {"deleted": memory.forget(memory_id=memory_id)}

    @server.tool(name="list", description="The current memories, oldest first; kind 'fact' or 'episode' narrows them.")
    @_told
    def list_memories(kind: KindName | None = None, limit: Count = 50) -> list[dict[str, Any]]:
        return [_hit(h) for h in memory.memories(project=project, kinds=[kind] if kind is not None else None)][-limit:]

    @server.tool(description="Turn the conversation's waiting turns into facts now (updates what changed).")
    @_told
    def consolidate() -> dict[str, Any]:
        rep = memory.consolidate(project=project)
        ops: dict[str, int] = {}
        for d in rep.decisions:
            ops[d.op.value] = ops.get(d.op.value, 0) + 1
        return {"turns": rep.episodes_processed, "decisions": ops}

    @server.tool(description="The facts the memory recently ended because of something the user said, newest first: "
                             "what it was ('old'), what replaced it ('new', null when it just ended) and what was "
                             "said ('said'). Ask the user when one looks wrong.")
    @_told
    def changes(limit: Count = 20) -> list[dict[str, Any]]:
        return [c.to_json() for c in memory.changes(project=project, limit=limit)]

    @server.tool(description="Take back one of those changes when the user says the old fact still holds: the old "
                             "fact is current again; what was said stays as a fact of its own.")
    @_told
    def revert(memory_id: str) -> dict[str, Any]:
        _own(memory_id)
        return {"current": memory.revert(memory_id=memory_id)}

    @server.tool(description="Statements the user made that read as a change of something the memory could not "
                             "tie to a fact ('fact'), with the current facts it may have changed ('facts'). Ask the "
                             "user, then call settle.")
    @_told
    def doubts(limit: Count = 20) -> list[dict[str, Any]]:
        return [d.to_json() for d in memory.doubts(project=project, limit=limit)]

    @server.tool(description="The user's answer to a doubt: 'replaces' is the id of the fact the statement changed "
                             "(it ends, replaced by the statement), or null when it changed none of them.")
    @_told
    def settle(memory_id: str, replaces: str | None) -> dict[str, Any]:
        _own(memory_id)
        if replaces is not None:
            _own(replaces)
        return {"ended": memory.settle(memory_id=memory_id, replaces=replaces)}

    @server.tool(description="Keep a conversation (its session) out of memory, from now on and across restarts: "
                             "nothing said in it is stored. on=false lets it back in. Returns the sessions kept out.")
    @_told
    def incognito(session: str, on: bool = True) -> dict[str, Any]:
        memory.set_incognito(session=session, on=on, project=project)
        return {"incognito": memory.incognito_sessions(project=project)}

    @server.tool(description="Memory off (on=false: nothing is stored or recalled, across restarts, until switched "
                             "on) or back on, when the user asks. It is the whole store's switch.")
    @_told
    def memory_switch(on: bool) -> dict[str, Any]:
        if on:
            memory.enable()
        else:
            memory.disable()
        return {"on": memory.enabled}

    return server


def serve_stdio(memory, project: str = "default") -> None:
    """Run over stdin/stdout until the client closes it (the CLI's ``serve mcp``)."""
    getattr(memory, "warm_up", lambda: None)()  # the agent's first tool call does not wait for the analyser to load
    build_mcp(memory, project).run(transport="stdio")


__all__ = ["build_mcp", "serve_stdio"]
