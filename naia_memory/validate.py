"""Argument checks every provider shares, so bad input fails the same way everywhere."""
from __future__ import annotations

import socket

from .contract import Role


def check_content(content: object) -> str:
    if not isinstance(content, str) or not content.strip():
        raise ValueError("content must be a non-empty string")
    return content


def check_query(query: object, top_k: object) -> None:
    if not isinstance(query, str) or not query.strip():
        raise ValueError("query must be a non-empty string")
    if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k <= 0:
        raise ValueError(f"top_k must be a positive int, got {top_k!r}")


def role_name(role: Role | str) -> str:
    return role.value if isinstance(role, Role) else str(role)


def unused_loopback_port() -> int:
    """A port nothing listens on: the address given to peers' mandatory but unused LLM configs."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
