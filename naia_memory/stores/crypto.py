"""Encryption at rest for the JSON store (issue 10): AES-256-GCM, a key from
the passphrase by scrypt, a random nonce per write, the header authenticated.

File layout (text, so the snapshot stays one atomic rename):

    NAIA-ENC1 {"kdf": "scrypt", "n": 32768, "r": 8, "p": 1, "salt": ..., "check": ...}
    <base64 of nonce + AES-GCM(snapshot JSON), header line as associated data>

``check`` seals a fixed text under the key, so a wrong passphrase is told
apart from damage before anything else is read. Journal lines are sealed the
same way, one per commit, with the header and their purpose as associated
data. scrypt's parameters (N=2^15, r=8, p=1) are the interactive-login
setting of RFC 7914 section 2 (about 32 MiB, tens of ms here).
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass, field

from .port import StoreError

MAGIC = b"NAIA-ENC1 "
_CHECK = b"naia-memory key check"
SCRYPT = {"n": 2 ** 15, "r": 8, "p": 1}


class WrongPassphrase(StoreError):
    """The passphrase does not open this store (or its header was damaged)."""


class Damaged(StoreError):
    """A sealed part failed authentication: modified or damaged, not loaded."""


def _aesgcm(key: bytes):
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError as e:  # pragma: no cover - the extra is installed in CI
        raise ImportError("an encrypted store needs cryptography: pip install 'naia-memory[crypto]'") from e
    return AESGCM(key)


def _derive(passphrase: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

    return Scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(passphrase.encode("utf-8"))


@dataclass
class Sealer:
    """One store's key and header; seals and opens its parts."""

    header: bytes  # the whole first line, newline excluded: associated data of every part
    _aead: object
    # a key for the store's memory ids: an id hashed from the text alone let anyone holding an
    # encrypted SQLite file (ids stay readable) confirm a guess of what a memory says
    id_key: bytes = field(default=b"", repr=False)

    @classmethod
    def new(cls, passphrase: str) -> "Sealer":
        if not passphrase:
            raise ValueError("the passphrase must not be empty")
        salt = os.urandom(16)
        key = _derive(passphrase, salt, **SCRYPT)
        aead = _aesgcm(key)
        params = {"kdf": "scrypt", **SCRYPT, "salt": base64.b64encode(salt).decode("ascii"), "cipher": "AES-256-GCM"}
        nonce = os.urandom(12)
        params["check"] = base64.b64encode(nonce + aead.encrypt(nonce, _CHECK, json.dumps(params, sort_keys=True).encode())).decode("ascii")
        header = MAGIC + json.dumps(params, sort_keys=True).encode("utf-8")
        return cls(header, aead, _id_key(key))

    @classmethod
    def from_header(cls, header: bytes, passphrase: str, path: str) -> "Sealer":
        try:
            params = json.loads(header[len(MAGIC):])
            salt = base64.b64decode(params["salt"])
            check = base64.b64decode(params["check"])
            n, r, p = int(params["n"]), int(params["r"]), int(params["p"])
            # bounded: a header edited to ask scrypt for gigabytes, or for a cost it refuses, is damage
            if not (2 <= n <= 2 ** 20 and n & (n - 1) == 0 and 1 <= r <= 32 and 1 <= p <= 16):
                raise ValueError(f"scrypt parameters n={n}, r={r}, p={p} out of bounds")
        except (ValueError, KeyError, TypeError) as e:
            raise Damaged(f"{path}: the encryption header is damaged ({e}); the file was left untouched") from e
        key = _derive(passphrase, salt, n, r, p)
        aead = _aesgcm(key)
        unchecked = {k: v for k, v in params.items() if k != "check"}
        try:
            ok = aead.decrypt(check[:12], check[12:], json.dumps(unchecked, sort_keys=True).encode()) == _CHECK
        except Exception:  # InvalidTag
            ok = False
        if not ok:
            raise WrongPassphrase(f"{path}: wrong passphrase (or a damaged header); the file was left untouched")
        return cls(header, aead, _id_key(key))

    def seal(self, data: bytes, purpose: bytes) -> bytes:
        """base64(nonce + ciphertext), no newline inside."""
        nonce = os.urandom(12)
        return base64.b64encode(nonce + self._aead.encrypt(nonce, data, self.header + b"|" + purpose))

    def open(self, blob: bytes, purpose: bytes, where: str) -> bytes:
        try:
            raw = base64.b64decode(blob, validate=True)
            return self._aead.decrypt(raw[:12], raw[12:], self.header + b"|" + purpose)
        except Exception as e:
            raise Damaged(f"{where}: failed authentication, so it was modified or damaged; not loaded") from e


def _id_key(key: bytes) -> bytes:
    return hashlib.blake2b(b"naia-memory ids", key=key, digest_size=32).digest()


def is_encrypted(raw: bytes) -> bool:
    return raw.startswith(MAGIC)


def split(raw: bytes) -> tuple[bytes, bytes]:
    """(header line, sealed body) of an encrypted snapshot."""
    head, _, body = raw.partition(b"\n")
    return head, body.strip()
