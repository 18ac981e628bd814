"""New ids for a store that gains a key (a plain SQLite file encrypted in place).

A plain store's memory ids are hashes of the text and the time; an encrypted
SQLite store keeps its ids readable (they key its indexes), and an id hashed
without a key lets one who holds the file confirm a guess of a memory's text.
So when a plain file is sealed, every memory is renamed to an id hashed under
the new key, and every reference to it (what it supersedes, its provenance, a
summary's facts, a log entry's target) follows.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from ..records import content_id

# an engine-made id inside a longer string of the engine's ("missing: fact_0123456789abcdef (...)" in a log entry)
_EMBEDDED = re.compile(r"\b[A-Za-z]+_[0-9a-f]{16}\b")
# the user's words, wherever a record keeps them (its text, tokens and entities, a fact's value, the turn it
# answered, and the names it is filed under, which are also the file's readable columns): left as said
_USER_TEXT = frozenset({"content", "tokens", "entities", "value", "context", "project", "session"})


def keyed_ids(ids: Iterable[str], key: bytes) -> dict[str, str]:
    """old id -> a new one of the same kind (``fact_...``), hashed from the old under ``key``."""
    out: dict[str, str] = {}
    for old in ids:
        kind = old.split("_", 1)[0] if "_" in old else "m"
        out[old] = f"{kind}_{content_id(old, key)}"
    if len(set(out.values())) != len(out):  # 64-bit hashes: never seen, but a merge would lose a memory
        raise ValueError("two memories would share a new id; nothing was renamed")
    return out


def _string(s: str, ids: Mapping[str, str], inside: bool) -> str:
    if s in ids:
        return ids[s]
    return _EMBEDDED.sub(lambda m: ids.get(m.group(0), m.group(0)), s) if inside and "_" in s else s


def renamed(value: Any, ids: Mapping[str, str], inside: bool = False) -> Any:
    """``value`` (a record's or a log entry's JSON) with every old id replaced
    where it is a value or a key; ``inside`` (a log entry, which the engine
    writes) inside its strings too. What a user said or named is left as said:
    an id-shaped word in their metadata is theirs."""
    if isinstance(value, str):
        return _string(value, ids, inside)
    if isinstance(value, list):
        return [renamed(v, ids, inside) for v in value]
    if isinstance(value, dict):
        return {_string(k, ids, False): (v if k in _USER_TEXT else renamed(v, ids, inside)) for k, v in value.items()}
    return value


__all__ = ["keyed_ids", "renamed"]
