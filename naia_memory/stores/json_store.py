"""LocalStore: the memory in one JSON file the user can open, back up and
delete, plus a journal of the commits since that file was last written.
Search runs in memory (numpy cosine, an inverted BM25 index).

A commit appends the changed records and edges to ``<file>.journal``
(one fsync'd line, O(change)); when the journal outgrows the snapshot, and
on close, the snapshot is rewritten with everything and the journal dropped
(amortised O(1) per change, since a rewrite of S bytes follows at least S
bytes of journal). So after ``close()`` the JSON file alone is the whole,
human-readable memory. Snapshots are atomic: written to a temporary file in
the same folder, fsync'd, then renamed over the old one (the file's format:
``json_snapshot``; reading it back: ``json_loading``). One process writes a
store at a time (``<file>.lock``).
"""
from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np

from ..cognition.bm25 import BM25Index
from ..cognition.graph import EntityGraph
from ..records import MemoryRecord
from .cache import RecordCache, check_embedder
from .cached_reads import CachedReads
from .journal import Batch, Journal
from . import json_snapshot
from .json_snapshot import FORMAT, encode_vector
from .json_loading import SnapshotLoading
from .atomic_files import atomic_write_chunks, atomic_write_text, private_copy  # noqa: F401 (atomic_write_text: kept importable here)
from .lock import FileLock
from .ann import resolve_hnsw_from
from .crypto import MAGIC, Sealer
from .port import SCHEMA_VERSION, StoreError, kind_tag, scrub_entry

DEFAULT_PATH = Path("~/.naia/memory/naia-memory.json")
MIN_COMPACT_BYTES = 1 << 20  # below this a journal is never worth folding in early


def default_path() -> Path:
    return DEFAULT_PATH.expanduser()


class LocalStore(SnapshotLoading, CachedReads):
    """JSON-file store. ``path=None`` keeps everything in memory (experiments)."""

    def __init__(self, path: str | os.PathLike | None = ..., *, autosave: bool = True, vector_index: str = "auto",
                 hnsw_from: int | None = None, passphrase: str | None = None, wait: float = 0.0):
        """``vector_index``: "exact" cosine over the matrix, "hnsw" from
        ``hnsw_from`` rows on (needs faiss), or "auto": exact below
        ``ann.AUTO_HNSW_FROM`` rows, HNSW above it when faiss is installed.
        ``passphrase``: the file and its journal are encrypted (``crypto.py``);
        a new store is created encrypted, an existing one must match.
        ``wait``: seconds to wait while another process holds the store
        (one writer at a time), instead of failing at once."""
        if path is ...:
            path = default_path()
        # the real file: opened through a symlink it must take the same lock (and a rewrite
        # must replace the file, not the link), or two writers hold one store
        self.path = str(Path(path).expanduser().resolve()) if path is not None else None
        self.autosave = autosave
        self._meta: dict[str, Any] = {"format": FORMAT, "schema_version": SCHEMA_VERSION, "embedder": None}
        self._empty(resolve_hnsw_from(vector_index, hnsw_from))
        self._rewrite = True  # the next commit writes a whole snapshot (new store, new embedder)
        self._snapshot_bytes = 0
        self._lock: FileLock | None = None
        self._journal: Journal | None = None
        self._closed = False
        self._sealer: Sealer | None = None
        # a commit failed: what this process holds is not what the file holds, and the next call reads the
        # file again (the engine rebuilds its maps) instead of writing the failed call's changes later
        self._lost = False
        self._reread = False
        if passphrase is not None and path is None:
            raise ValueError("passphrase= encrypts a file; an in-memory store (path=None) has none")
        if self.path is not None:
            self._lock = FileLock(self.path)
            self._lock.acquire(wait)
            try:
                snapshot = Path(self.path)
                if snapshot.exists():
                    self._load(snapshot, passphrase)
                elif passphrase is not None:
                    self._sealer = Sealer.new(passphrase)
                self._journal = self._journal_for(self._sealer)
                if not snapshot.exists() and self._journal.size:
                    raise StoreError(f"{self._journal.path} has changes but {snapshot} is missing; "
                                     "restore the JSON file from a backup (the journal alone holds only recent changes)")
                self._replay(self._journal.read())
                if self._stale_lines:  # what a crash left of a journal the snapshot already holds goes now
                    self._rewrite = True
                    self.compact()
                self._remove_stale_temps()
            except BaseException:
                self._lock.release()
                raise

    def _journal_for(self, sealer: Sealer | None) -> Journal:
        """The journal beside the snapshot, its lines sealed under ``sealer``'s key."""
        codec = None
        if sealer is not None:
            codec = (lambda b: sealer.seal(b, b"journal"),
                     lambda b: sealer.open(b, b"journal", f"{self.path}.journal"))
        return Journal(f"{self.path}.journal", codec)

    def rekey(self, passphrase: str | None) -> dict[str, str]:
        """Seal the store under another passphrase (a new salt and key), or
        under one for the first time; ``None`` writes it in the clear. The
        journal is first folded into the snapshot under the key it was
        written with; then the snapshot is written once more under the new
        key, in one atomic rename: a crash leaves the store whole under the
        old key or the new one, never a mix. The file's old blocks are not
        overwritten (see "Forgetting erases"). Backups are left as they were
        made and from now on count as sealed apart from the store: a forget
        names them as stale instead of copying the store over them (it would
        have put a copy made under the old key under the new one, or in the
        clear). No id changes (the snapshot seals them with the rest): returns
        an empty map, as ``SqliteStore.rekey`` does when it renames nothing."""
        self._check_open()
        if self.path is None or self._journal is None:
            raise ValueError("this store lives in memory only; there is no file to encrypt")
        if passphrase is None and self._sealer is None:
            return {}  # already in the clear
        new = Sealer.new(passphrase) if passphrase is not None else None  # an empty passphrase is refused here
        self._rewrite = True
        self.compact()  # the journal's lines were sealed under the old key: folded in and gone first
        old, old_backups = self._sealer, self._meta.get("backups")
        if old_backups:
            self._meta["backups"] = [{**b, "sealed_separately": True} for b in old_backups]
        self._sealer, self._journal = new, self._journal_for(new)
        try:
            self._rewrite = True
            self.compact()
        except BaseException:
            if not self._file_sealed_by(new):  # the rename did not happen: the file is still under the old key
                self._sealer, self._journal = old, self._journal_for(old)
                if old_backups:
                    self._meta["backups"] = old_backups
            raise  # (after the rename, an interrupt leaves the new key in force, as on disk)
        return {}

    def _file_sealed_by(self, sealer: Sealer | None) -> bool:
        """Whether the snapshot on disk is the one ``sealer`` writes: its header, or plain text."""
        with open(self.path, "rb") as f:
            head = f.readline().rstrip(b"\n")
        return head == sealer.header if sealer is not None else not head.startswith(MAGIC)

    @property
    def journal_path(self) -> str | None:
        return str(self._journal.path) if self._journal is not None else None

    # ---- persistence -------------------------------------------------
    def _snapshot(self) -> str:
        """The whole snapshot as one string (an encrypted store seals it whole; backups)."""
        return b"".join(self._snapshot_chunks()).decode("utf-8")

    def _snapshot_chunks(self) -> Iterator[bytes]:
        """The snapshot's bytes, one record at a time (``json_snapshot.chunks``)."""
        head = {k: v for k, v in self._meta.items() if k != "checksum"}
        head["saved_at"] = datetime.now(timezone.utc).isoformat()
        head["journal_seq"] = self._seq
        c = self._cache
        # in the order the records came in, not the rows' (a removal moves rows): the order a reopen reads
        rows = ({**r.to_json(), "embedding": encode_vector(c.vectors[c.row[r.id]])} for r in c.iter())
        return json_snapshot.chunks(head, rows, self.graph.to_json(), self._log)

    def _pending_ops(self) -> list[dict[str, Any]]:
        ops: list[dict[str, Any]] = []
        c = self._cache
        for rid, vec_changed in self._changed.items():
            rec = c.records.get(rid)
            if rec is None:
                ops.append({"op": "delete", "id": rid})
                continue
            d = rec.to_json()
            if vec_changed:
                d["embedding"] = encode_vector(c.vectors[c.row[rid]])
            ops.append({"op": "put", "record": d})
        edges = self.graph.take_changes()
        if edges:
            ops.append({"op": "edges", "rows": edges})
        if self._log_written < len(self._log):
            ops.append({"op": "log", "entries": self._log[self._log_written:]})
        return ops

    def _has_changes(self) -> bool:
        return bool(self._changed or self.graph.changed or self._log_written < len(self._log))

    def commit(self) -> None:
        """Durable on return. Appends to the journal, or rewrites the snapshot
        when the journal has outgrown it."""
        self._check_open()
        if self.path is None or self._journal is None:
            return
        if self._lost:  # the changes since the failed commit belong to the call that failed: not written later
            self._read_again()
        if self._rewrite or self._journal.size > max(self._snapshot_bytes, MIN_COMPACT_BYTES):
            self.compact()
            return
        if not self._has_changes():
            return
        ops = self._pending_ops()
        try:
            self._journal.append(Batch(self._seq + 1, ops))
        except BaseException:  # nothing of it is on disk
            if self.autosave:  # the call that made it failed, and so do its changes: read the file again
                self._lost = True
            else:  # the caller commits: what this commit carried stays owed to the next one, edges included
                self.graph.changed.update((a, b) for op in ops if op["op"] == "edges" for a, b, *_ in op["rows"])
            raise
        self._seq += 1
        self._changed.clear()
        self._log_written = len(self._log)

    def compact(self) -> None:
        """Rewrite the snapshot with everything and drop the journal."""
        self._check_open()
        if self.path is None or self._journal is None:
            return
        if self._lost:
            self._read_again()
        if not self._rewrite and not self._journal.size and not self._has_changes():
            return
        self._seq += 1
        try:
            if self._sealer is None:
                self._snapshot_bytes = atomic_write_chunks(Path(self.path), self._snapshot_chunks())
            else:  # sealed whole (one authenticated message), so built in memory
                text = self._sealed(self._snapshot())
                atomic_write_chunks(Path(self.path), [text.encode("utf-8")])  # one writer for both: one place to watch
                self._snapshot_bytes = len(text)
        except BaseException:
            # the snapshot may or may not carry the new number: a journal line after it would leave a gap, or
            # be read as stale. The next commit writes the whole snapshot again instead, from what the file
            # holds (the rename may have happened: then that is what this process held)
            self._rewrite = True
            self._lost = self._lost or self.autosave
            raise
        self._journal.clear()
        self._changed.clear()
        self.graph.changed.clear()
        self._log_written = len(self._log)
        self._rewrite = False

    def _sealed(self, text: str) -> str:
        """The snapshot as written: itself, or encrypted under the store's key."""
        if self._sealer is None:
            return text
        return (self._sealer.header + b"\n" + self._sealer.seal(text.encode("utf-8"), b"snapshot") + b"\n").decode("ascii")

    def _check_open(self) -> None:
        """A closed store has given up its lock: another process may own the
        file now, so writing from this copy would lose what that one wrote."""
        if self._closed:
            raise StoreError(f"{self.path or 'this in-memory store'} is closed")

    def changed_elsewhere(self) -> bool:
        """The engine asks this before each call (as of a shared SQLite file):
        true after a commit failed, or after the file was read again since."""
        return self._lost or self._reread

    def refresh(self) -> None:
        """Read the file again after a failed commit (the engine then rebuilds
        its maps from what this holds): what this process held that the file
        does not, the failed call's changes, is dropped, so a failed call
        leaves the memory as it was instead of owing its changes to the next
        commit (until session 37 they were written by it)."""
        self._check_open()
        if self._lost and self.path is not None:
            self._read_again()
        self._lost = self._reread = False  # (a store in memory only has no file to read: it stays as it is)

    def discard(self) -> bool:
        """Drop what this process holds that is not committed: the file is
        read again before the next call (a re-index that failed part-way).
        False for a store in memory only: there is nothing to read again."""
        if self.path is None:
            return False
        self._lost = True
        return True

    def _read_again(self) -> None:
        """A store whose first snapshot was never written keeps its embedder;
        a snapshot rewrite still owed (a forget's erasure that failed) stays owed."""
        meta, rewrite = dict(self._meta), self._rewrite
        self._empty(self._cache.hnsw_from)
        snapshot = Path(self.path)
        if snapshot.exists():
            self._load(snapshot, None, self._sealer)
        else:  # a new store: its embedder stays bound, the first commit writes the snapshot
            self._meta = meta
            dim = (meta.get("embedder") or {}).get("dim")
            if dim:
                self._cache.reset_vectors(0, int(dim))
            self._rewrite = True
        self._journal = self._journal_for(self._sealer)
        self._replay(self._journal.read())
        if self._stale_lines or rewrite:  # a rewrite renamed its snapshot and failed after, or never ran
            self._rewrite = True
        self._remove_stale_temps()
        self._lost, self._reread = False, True

    def _empty(self, hnsw_from: int | None) -> None:
        """The records, words, graph and log this process holds, before anything is read."""
        self.graph = EntityGraph()
        self._cache = RecordCache(hnsw_from=hnsw_from)
        self._bm25 = BM25Index()
        self._log: list[dict[str, Any]] = []
        self._log_written = 0
        self._changed: dict[str, bool] = {}  # record id -> its vector changed too
        self._seq = 0

    def close(self) -> None:
        """Folds the journal into the JSON file, so the file alone is the memory."""
        if self._closed:
            return
        try:
            self.compact()
        finally:
            self._closed = True
            if self._lock is not None:
                self._lock.release()

    # ---- metadata -----------------------------------------------------
    def meta(self) -> dict[str, Any]:
        return dict(self._meta)

    def bind_embedder(self, name: str, dim: int) -> None:
        if check_embedder(self.path or "<memory>", self._meta.get("embedder"), name, dim):
            self._meta["embedder"] = {"name": name, "dim": int(dim)}
            self._cache.reset_vectors(0, dim)
            self._rewrite = True

    def note_backup(self, dest: str, sealed_separately: bool) -> None:
        """Remember a backup this store wrote, so a forget can reach it too."""
        kept = [b for b in self._meta.get("backups", []) if b.get("path") != dest]
        self._meta["backups"] = kept + [{"path": dest, "sealed_separately": bool(sealed_separately)}]
        self._rewrite = True

    def backups(self) -> list[dict[str, Any]]:
        return [dict(b) for b in self._meta.get("backups", [])]

    def rebind_embedder(self, name: str, dim: int) -> None:
        """For re-indexing: forget the old vectors' embedder and shape."""
        self._meta["embedder"] = {"name": name, "dim": int(dim)}
        self._cache.reset_vectors(len(self._cache), dim)
        self._rewrite = True

    # ---- records --------------------------------------------------------
    def put(self, record: MemoryRecord, embedding: np.ndarray) -> None:
        self._cache.add(record, embedding)
        self._bm25.add(record.id, record.tokens, kind_tag(record.kind))
        self._changed[record.id] = True

    def update(self, record: MemoryRecord) -> None:
        if record.id not in self._cache.records:
            raise StoreError(f"no record {record.id}")
        if tuple(record.tokens) != self._bm25.doc_tokens.get(record.id):
            self._bm25.add(record.id, record.tokens, kind_tag(record.kind))
        self._cache.replace(record)
        self._changed[record.id] = self._changed.get(record.id, False)

    def set_embedding(self, record_id: str, embedding: np.ndarray) -> None:
        self._cache.set_vector(record_id, embedding)
        self._changed[record_id] = True

    def delete(self, record_id: str) -> None:
        if record_id not in self._cache.records:
            return
        self._cache.remove(record_id)
        self._bm25.remove(record_id)
        self._changed[record_id] = False

    def backup_to(self, dest: str, passphrase: str | None = None) -> None:
        """A copy of the store at ``dest`` (0600). With ``passphrase`` the
        copy is encrypted under it (its own salt), whether or not this store
        is; without, the copy is as this store is (encrypted stays encrypted)."""
        if self.path is None:
            raise ValueError("this store lives in memory only; nothing to back up")
        self._check_open()
        self.commit()
        self.compact()
        if passphrase is None:
            private_copy(self.path, dest)
            return
        sealer = Sealer.new(passphrase)
        body = sealer.header + b"\n" + sealer.seal(self._snapshot().encode("utf-8"), b"snapshot") + b"\n"
        tmp = f"{dest}.partial"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(fd, 0o600)  # a .partial left by a copy killed mid-write keeps its own mode through O_CREAT
            with os.fdopen(fd, "wb") as f:
                f.write(body)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, dest)
        except BaseException:  # a full copy under the backup's passphrase, that no forget would ever rewrite
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    # ---- audit log --------------------------------------------------------
    def append_log(self, entries: Iterable[dict[str, Any]]) -> None:
        self._log.extend(entries)

    def log(self) -> list[dict[str, Any]]:
        return list(self._log)

    def scrub_log(self, forgotten: set[str]) -> int:
        n = 0
        for i, e in enumerate(self._log):
            clean = scrub_entry(e, forgotten)
            if clean is not None:
                self._log[i] = clean
                n += 1
        if n:
            self._rewrite = True  # entries already on disk changed: only a rewrite takes the words out
        return n

    def erase_freed(self) -> None:
        """A forget rewrites the file now (the journal and the old snapshot
        held the words), and removes any temp copy a crash left."""
        self._rewrite = True
        self.compact()
        self._remove_stale_temps()

    def _remove_stale_temps(self) -> None:
        """``.name.*.tmp`` files are half-written snapshots from a crash; under
        the lock no other writer can own one."""
        if self.path is None:
            return
        p = Path(self.path)
        for tmp in p.parent.glob(f".{p.name}.*.tmp"):
            try:
                tmp.unlink()
            except FileNotFoundError:  # pragma: no cover - raced with nothing under the lock
                pass
