"""The JSON snapshot's format: one document (the store's header, then its
records with their vectors, the entity graph, the decision log, and last a
sha256 of everything before it), written a record at a time and read a
block at a time, so a store of 100k memories (~270 MB) is never whole in
memory either way. Vectors are base64 of little-endian float32 (2 KiB for
384-d), not 384 decimal strings.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from .json_members import CHUNK, members
from .port import SCHEMA_VERSION, StoreError

FORMAT = "naia-memory"
# the checksum the writer puts last: sha256 of everything before it (``chunks``)
_CHECKSUM_TAIL = re.compile(rb',"checksum":"([0-9a-f]*)"\}\Z')


def encode_vector(v: np.ndarray) -> str:
    return base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(s: str, dim: int) -> np.ndarray:
    v = np.frombuffer(base64.b64decode(s), dtype="<f4")
    if v.shape != (dim,):
        raise StoreError(f"stored vector has {v.shape[0]} values, expected {dim}")
    return v.astype(np.float32)


def chunks(head: dict[str, Any], rows: Iterable[dict[str, Any]], graph: Any, log: list[Any]) -> Iterator[bytes]:
    """The snapshot's bytes, one record at a time: the same text as
    ``json.dumps`` of the whole document (keys: the header, records, graph,
    log), so it is never one string in memory. The last key is the sha256 of
    everything before it, so a flipped byte anywhere is caught on load."""
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    h = hashlib.sha256()

    def out(text: str) -> bytes:
        b = text.encode("utf-8")
        h.update(b)
        return b

    yield out(dumps(head)[:-1] + ',"records":[')
    for n, row in enumerate(rows):
        yield out(("," if n else "") + dumps(row))
    yield out('],"graph":' + dumps(graph) + ',"log":' + dumps(log))
    h.update(b"}")  # the digest is of the document as it was before the checksum field took its "}"
    yield f',"checksum":"{h.hexdigest()}"}}'.encode("utf-8")


def scan(path: Path, data: bytes | None) -> tuple[int, bool, int]:
    """One pass over the snapshot before it is parsed: (its size, whether it
    ends with the checksum the writer puts last, how many records it holds at
    most). A checksum that does not match is refused here, before anything is
    read into the store. ``data``: the decrypted text of an encrypted store
    (else the file is read a piece at a time)."""
    if data is not None:
        size = len(data)
        tail = bytes(data[max(0, size - 200):])
    else:
        size = path.stat().st_size
        with open(path, "rb") as f:
            f.seek(max(0, size - 200))
            tail = f.read()
    sealed = _CHECKSUM_TAIL.search(tail)
    hashed = size - (len(sealed.group(0)) if sealed else 0)
    h = hashlib.sha256()
    records = 0
    view = memoryview(data) if data is not None else None
    with (open(path, "rb") if view is None else nullcontext()) as f:
        done = 0
        while done < hashed:
            block = view[done: min(hashed, done + CHUNK)] if view is not None else f.read(min(CHUNK, hashed - done))
            if not block:
                break
            h.update(block)
            records += bytes(block).count(b'"embedding":') + 1  # +1: one split between two blocks
            done += len(block)
    if sealed is not None:
        h.update(b"}")  # the digest is of the document as it was before the checksum field took its "}"
        if h.hexdigest() != sealed.group(1).decode("ascii"):
            raise StoreError(f"{path} is damaged: its checksum does not match its content; the file was left untouched "
                             "(restore a backup)")
    return size, sealed is not None, records


def read(path: Path, text: Iterable[str], sealed: bool, records: int, *, start: Callable[[int, int], None],
         take: Callable[[dict[str, Any], int | None], None]) -> dict[str, Any]:
    """Member by member (``json_members``): ``take`` gets each record as it is
    parsed, after ``start(rows, dim)`` (``records``: at least how many there
    are, from ``scan``), so the parsed document is never whole in memory and
    the text (``utf8_pieces``) is read a piece at a time. Records written
    before the header they need (a hand-edited file) wait until it has been
    read. Returns the other members (the header, graph, log)."""
    head: dict[str, Any] = {}
    seen: set[str] = set()
    waiting: list[dict[str, Any] | None] | None = None
    for key, value in members(text, frozenset({"records"})):
        if key in seen:  # json.loads keeps the last; here the records may already have been read with the first
            raise StoreError(f"{path} is damaged: {key!r} appears twice; the file was left untouched")
        seen.add(key)
        if key == "checksum":
            if not sealed:  # the writer puts it last; anywhere else, the file was changed after it was sealed
                raise StoreError(f"{path} is damaged: its checksum does not match its content; the file was left "
                                 "untouched (restore a backup)")
        elif key != "records":
            head[key] = value
            if key in ("format", "schema_version"):
                _check_header(path, head, final=False)
        elif not isinstance(value, Iterator):
            raise StoreError(f"{path} is damaged: 'records' and 'log' must be lists; the file was left untouched")
        elif head.get("format") == FORMAT and (dim := _dim(head)) is not None:
            start(records, dim)
            for item in value:
                take(item, dim)
        else:
            waiting = list(value)
    _check_header(path, head, final=True)
    if waiting is not None or "records" not in seen:
        dim = _dim(head)
        start(len(waiting or ()), dim or 0)
        for n, item in enumerate(waiting or ()):
            waiting[n] = None  # type: ignore[index]  # freed once it is in the cache
            take(item, dim)  # type: ignore[arg-type]
    if not isinstance(head.get("log", []), list):
        raise StoreError(f"{path} is damaged: 'records' and 'log' must be lists; the file was left untouched")
    return head


def _dim(head: dict[str, Any]) -> int | None:
    embedder = head.get("embedder")
    return embedder.get("dim") if isinstance(embedder, dict) else None


def _check_header(path: Path, head: dict[str, Any], final: bool) -> None:
    if (final or "format" in head) and head.get("format") != FORMAT:
        raise StoreError(f"{path} is not a naia-memory store (format={head.get('format')!r})")
    if head.get("schema_version", 0) > SCHEMA_VERSION:
        raise StoreError(f"{path} has schema {head['schema_version']}, newer than this library ({SCHEMA_VERSION})")


__all__ = ["FORMAT", "chunks", "decode_vector", "encode_vector", "read", "scan"]
