"""Argument checks every provider shares, so bad input fails the same way
everywhere, and fails at the door: a value the store cannot write (a
datetime in metadata, a lone surrogate) used to be accepted into memory and
then broke every later commit of the process (issue 11)."""
from __future__ import annotations

import json
import socket
from collections.abc import Mapping, Sequence
from typing import Any

from .contract import InvalidInput, MemoryKind, Role

MAX_CONTENT_CHARS = 100_000  # a turn, a query, an edit: about 25k words
MAX_NAME_CHARS = 256  # a project or a session
MAX_METADATA_BYTES = 64 * 1024


def _valid_text(name: str, value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidInput(f"{name} is not valid text: {e.reason} at position {e.start} (a lone surrogate?)") from None
    return value


def check_content(content: object, name: str = "content") -> str:
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput(f"{name} must be a non-empty string")
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidInput(f"{name} has {len(content):,} characters; the limit is {MAX_CONTENT_CHARS:,} (split it into turns)")
    return _valid_text(name, content)


def check_name(value: object, name: str, *, optional: bool = False) -> str | None:
    """A project or session: non-empty text of at most MAX_NAME_CHARS."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{name} must be a non-empty string{' or None' if optional else ''}, got {value!r}")
    if len(value) > MAX_NAME_CHARS:
        raise InvalidInput(f"{name} has {len(value)} characters; the limit is {MAX_NAME_CHARS}")
    return _valid_text(name, value)


# Keys the engine writes into a record's metadata and reads back with a fixed
# shape: a caller's value there (``source_ids: 5``) used to be stored and then
# break every later recall, listing and consolidation of the project.
ENGINE_KEYS = frozenset({
    "subtype",  # marks summaries and reflections: a turn that called itself one would leave the evidence of reflections
    "source_ids", "when", "summarizes", "summarized_by", "evidence", "refines", "stale_fact", "path", "cues",
    "importance", "superseded_by_episode", "superseded_reason", "archived_at", "revived_at", "strength_at_archive",
    "undecided_attempts", "edited_by_user",
    "reverted", "attribute_from",  # an update decision taken back (review.py), a slot taken from the fact replaced
    "doubts", "settled",  # the facts a statement may have changed, and the user's answer (review.py)
    "context",  # the turn a short answer was indexed with: a dict there stopped every forget of the store (a 500 for all)
    "structured",  # marks Koog-style facts, which the hierarchy leaves unplaced
})
TEXT_KEYS = ("source_id", "speaker", "subject")  # a caller's to set, read back as text


def check_memory_id(memory_id: object) -> str:
    """An id is text; a list or a dict reached the store's dict as a TypeError."""
    if not isinstance(memory_id, str) or not memory_id:
        raise InvalidInput(f"memory_id must be a non-empty string, got {memory_id!r}")
    return memory_id


def check_metadata(metadata: object) -> dict[str, Any] | None:
    """JSON-writable, string keys, at most MAX_METADATA_BYTES once written;
    none of the engine's own keys, and text where the engine reads text."""
    if metadata is None:
        return None
    if not isinstance(metadata, Mapping) or not all(isinstance(k, str) for k in metadata):
        raise InvalidInput("metadata must be a mapping with string keys")
    taken = sorted(ENGINE_KEYS.intersection(metadata))
    if taken:
        raise InvalidInput(f"metadata key{'s' if len(taken) > 1 else ''} {', '.join(map(repr, taken))} "
                           f"{'are' if len(taken) > 1 else 'is'} the engine's own (it writes and reads {'them' if len(taken) > 1 else 'it'})")
    for k in TEXT_KEYS:
        if k in metadata and metadata[k] is not None and not (isinstance(metadata[k], str) and metadata[k].strip()):
            raise InvalidInput(f"metadata key {k!r} must be non-empty text or None, got {metadata[k]!r}")
    try:
        raw = json.dumps(dict(metadata), ensure_ascii=False, allow_nan=False).encode("utf-8")
    except UnicodeEncodeError as e:  # a ValueError too: caught first
        raise InvalidInput(f"metadata is not valid text: {e.reason} (a lone surrogate?)") from None
    except (TypeError, ValueError) as e:
        raise InvalidInput(f"metadata must be JSON-writable (str, int, float, bool, None, lists and dicts of them): {e}") from None
    if len(raw) > MAX_METADATA_BYTES:
        raise InvalidInput(f"metadata is {len(raw):,} bytes written; the limit is {MAX_METADATA_BYTES:,}")
    return dict(metadata)


def check_turns(items: Sequence[Any]) -> Sequence[Any]:
    """Every turn of a batch checked before any is stored; the error names the turn."""
    for i, t in enumerate(items):
        try:
            check_content(t.content)
            check_name(t.session, "session", optional=True)
            check_metadata(t.metadata)
        except ValueError as e:
            raise InvalidInput(f"turn {i}: {e}") from None
    return items


def check_kinds(kinds: object) -> tuple[MemoryKind, ...] | None:
    """None, or a list of kinds (MemoryKind or their names); a bare string is
    refused rather than read letter by letter into no match."""
    if kinds is None:
        return None
    if isinstance(kinds, (str, MemoryKind)) or not isinstance(kinds, Sequence):
        raise InvalidInput(f"kinds must be a list of kinds, e.g. [MemoryKind.FACT], got {kinds!r}")
    if not kinds:  # no kind at all: refused (the profile path read it as every kind, a search as none)
        raise InvalidInput("kinds must name at least one kind, or be None for every kind")
    try:
        return tuple(MemoryKind(k) for k in kinds)
    except ValueError:
        raise InvalidInput(f"unknown kind in {list(kinds)!r}; known: {[k.value for k in MemoryKind]}") from None


def check_limit(limit: object) -> None:
    """At most this many (a positive whole number), or None for all."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0):
        raise InvalidInput(f"limit must be a positive whole number or None, got {limit!r}")


def check_query(query: object, top_k: object) -> None:
    check_content(query, "query")
    if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k <= 0:
        raise InvalidInput(f"top_k must be a positive int, got {top_k!r}")


def role_name(role: Role | str) -> str:
    return role.value if isinstance(role, Role) else str(role)


_ROLES = frozenset(r.value for r in Role)


def check_role(role: Role | str) -> str:
    """A role's name, lower-cased; an unknown one is refused."""
    r = role_name(role).lower()
    if r not in _ROLES:
        raise InvalidInput(f"unknown role {role!r}; use one of {sorted(_ROLES)}")
    return r


def unused_loopback_port() -> int:
    """A port nothing listens on: the address given to peers' mandatory but unused LLM configs."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
