"""How ``LocalStore`` reads itself back: the snapshot, record by record into
the cache as it is parsed, then the journal's commits newer than it.

A damaged or foreign file is refused with the reason and left untouched; an
encrypted one needs its passphrase, a plain one refuses one.
"""
from __future__ import annotations

import binascii
import json
from pathlib import Path
from typing import Any, Iterable

from ..cognition.bm25 import BM25Index
from ..cognition.graph import EntityGraph
from ..records import MemoryRecord
from . import json_snapshot
from .cache import RecordCache
from .crypto import MAGIC, Sealer, is_encrypted, split
from .journal import Batch
from .json_members import utf8_pieces
from .json_snapshot import decode_vector
from .port import StoreError, kind_tag


class SnapshotLoading:
    """Mixed into ``LocalStore``, whose state it fills."""

    _cache: RecordCache
    _bm25: BM25Index
    _sealer: Sealer | None
    _meta: dict[str, Any]
    _seq: int
    _snapshot_bytes: int
    _log: list[dict[str, Any]]
    _log_written: int
    _rewrite: bool
    _changed: dict[str, bool]
    graph: EntityGraph
    journal_path: str | None

    def _load(self, path: Path, passphrase: str | None, sealer: Sealer | None = None) -> None:
        """``sealer``: the key this process already holds (a re-read), instead of deriving it again."""
        with open(path, "rb") as f:
            encrypted = is_encrypted(f.read(len(MAGIC)))
        data: bytes | None = None
        if encrypted:
            head, body = split(path.read_bytes())
            if sealer is not None and head == sealer.header:
                self._sealer = sealer
            elif passphrase is None:
                raise StoreError(f"{path} is encrypted; open it with passphrase=")
            else:
                self._sealer = Sealer.from_header(head, passphrase, str(path))
            data = self._sealer.open(body, b"snapshot", str(path))
        elif passphrase is not None:
            raise StoreError(f"{path} is not encrypted; open it without a passphrase (an encrypted copy: "
                             "MemorySystem.backup(path=..., passphrase=...))")
        size, sealed, records = json_snapshot.scan(path, data)
        try:
            if data is not None:
                self._load_text(path, utf8_pieces(data), size, sealed, records)
            else:
                with open(path, "rb") as f:
                    self._load_text(path, utf8_pieces(f), size, sealed, records)
        except StoreError:
            raise
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise StoreError(f"{path} is not valid JSON ({e}); the file was left untouched") from e
        except (KeyError, TypeError, ValueError, AttributeError, binascii.Error) as e:  # a damaged file without a checksum
            raise StoreError(f"{path} is damaged ({type(e).__name__}: {e}); the file was left untouched") from e

    def _load_text(self, path: Path, text: Iterable[str], size: int, sealed: bool, records: int) -> None:
        """Each record goes into the cache as it is parsed (``json_snapshot.read``)."""
        head = json_snapshot.read(path, text, sealed, records, start=self._cache.reset_vectors,
                                  take=lambda item, dim: self._take(path, item, dim))
        self._meta = {k: v for k, v in head.items() if k not in ("graph", "log", "journal_seq", "saved_at")}
        self._seq = int(head.get("journal_seq", 0))
        self._snapshot_bytes = size
        self.graph = EntityGraph.from_json(head.get("graph", []))
        self._log = list(head.get("log", []))
        self._log_written = len(self._log)
        self._rewrite = False

    def _take(self, path: Path, item: Any, dim: int | None) -> None:
        vec = item.pop("embedding", None)
        rec = MemoryRecord.from_json(item)
        if vec is None or dim is None:
            raise StoreError(f"{path}: record {rec.id} has no embedding or the store has no embedder entry")
        try:
            v = decode_vector(vec, dim)
        except StoreError as e:
            raise StoreError(f"{path} is damaged: record {rec.id}: {e}; the file was left untouched") from None
        self._cache.add(rec, v)
        self._bm25.add(rec.id, rec.tokens, kind_tag(rec.kind))

    def _replay(self, batches: Iterable[Batch]) -> None:
        """Apply the journal's commits newer than the snapshot. Lines the
        snapshot already holds (a crash between its rename and the journal's
        removal) are counted in ``_stale_lines``: the opener drops them, for
        they may hold the words a forget erased."""
        self._stale_lines = 0
        applied = False
        for batch in batches:
            if batch.seq <= self._seq and not applied:
                self._stale_lines += 1  # already in the snapshot (crash between rename and truncate)
                continue
            if batch.seq != self._seq + 1:  # a line removed or moved: a commit would vanish without a word
                raise StoreError(f"{self.journal_path} is damaged: commit {self._seq + 1} is missing or out of order "
                                 f"(found {batch.seq}); the file was left untouched")
            applied = True
            for op in batch.ops:
                self._apply(op)
            self._seq = batch.seq
        self.graph.changed.clear()
        self._log_written = len(self._log)
        self._changed.clear()

    def _apply(self, op: dict[str, Any]) -> None:
        kind = op.get("op")
        if kind == "meta":
            self._meta = dict(op["meta"])
            dim = (self._meta.get("embedder") or {}).get("dim") or 0
            if self._cache.dim != dim:
                self._cache.reset_vectors(len(self._cache), dim)
        elif kind == "put":
            item = dict(op["record"])
            vec = item.pop("embedding", None)
            rec = MemoryRecord.from_json(item)
            dim = (self._meta.get("embedder") or {}).get("dim")
            if rec.id in self._cache.records:
                self._cache.replace(rec)
                if vec is not None:
                    self._cache.set_vector(rec.id, decode_vector(vec, dim))
            else:
                if vec is None:
                    raise StoreError(f"{self.journal_path}: new record {rec.id} has no embedding")
                self._cache.add(rec, decode_vector(vec, dim))
            self._bm25.add(rec.id, rec.tokens, kind_tag(rec.kind))
        elif kind == "delete":
            if op["id"] in self._cache.records:
                self._cache.remove(op["id"])
                self._bm25.remove(op["id"])
        elif kind == "edges":
            self.graph.set_weights(op["rows"])
        elif kind == "log":
            self._log.extend(op["entries"])
        else:
            raise StoreError(f"{self.journal_path}: unknown operation {kind!r}")
