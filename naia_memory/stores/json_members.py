"""Read a JSON object's top-level members one at a time, from text that
arrives in pieces, and the elements of a large array member one at a time.

``json.loads`` of a 100k-memory store needs the file's bytes, their decoded
text (twice the bytes when it holds Korean: Python keeps such a string at two
bytes a character) and every record parsed as a dict before the first is
used. Reading the file a piece at a time and member by member, each record
can be taken into the store's cache and dropped before the next is parsed,
and only a piece of the text is ever in memory. The standard library's
decoder does the parsing (``raw_decode`` from an index); this module only
walks between values, so any JSON a person writes by hand (other key order,
indentation, spaces) reads the same as with ``json.loads``.
"""
from __future__ import annotations

import codecs
import json
import re
from typing import Any, BinaryIO, Iterable, Iterator

_WS = re.compile(r"[ \t\n\r]*")
_DECODE = json.JSONDecoder().raw_decode
_AFTER_A_VALUE = frozenset(" \t\n\r,]}:")  # what may follow a whole value ("1." of "1.5" is followed by "5")


class TextError(json.JSONDecodeError):
    """Not JSON, at a position counted from the start of the whole text (the
    reader forgets what it has read, so the decoder's own position is not)."""

    def __init__(self, msg: str, text: str, at: int, base: int) -> None:
        super().__init__(msg, text, at)
        self.pos = base + at
        self.args = (f"{msg} at char {self.pos}",)

    def __str__(self) -> str:
        return self.args[0]


CHUNK = 1 << 22  # bytes read at a time (4 MiB)


def utf8_pieces(source: BinaryIO | bytes | memoryview, size: int = CHUNK) -> Iterator[str]:
    """The text of a UTF-8 file or buffer, a piece at a time (a character
    split between two pieces is completed first; invalid UTF-8 raises
    ``UnicodeDecodeError``, a ``ValueError``)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    if isinstance(source, (bytes, bytearray, memoryview)):
        view = memoryview(source)
        for at in range(0, len(view), size):
            yield decoder.decode(view[at: at + size])
    else:
        while block := source.read(size):
            yield decoder.decode(block)
    yield decoder.decode(b"", final=True)


class _Cursor:
    """A position in text that arrives in pieces; what is behind it is dropped."""

    def __init__(self, pieces: Iterable[str]) -> None:
        self.pieces = iter(pieces)
        self.text = ""
        self.at = 0
        self.base = 0  # characters forgotten before ``text``
        self.done = False

    def fail(self, msg: str, at: int | None = None) -> TextError:
        return TextError(msg, self.text, self.at if at is None else at, self.base)

    def more(self, want: int = 0) -> bool:
        """Read on (at least ``want`` more characters when there are); False at the end."""
        if self.done:
            return False
        got = []
        n = 0
        while True:
            piece = next(self.pieces, None)
            if piece is None:
                self.done = True
                break
            got.append(piece)
            n += len(piece)
            if n >= want and n:
                break
        self.text += "".join(got)
        return bool(got) or not self.done

    def skip(self) -> str:
        """Past whitespace; the next character ('' at the end). Between values
        is where what has been read is forgotten (inside one, positions hold)."""
        if self.at >= 1 << 16 and 2 * self.at >= len(self.text):  # at most half is copied: linear in all
            self.text, self.base, self.at = self.text[self.at:], self.base + self.at, 0
        while True:
            self.at = _WS.match(self.text, self.at).end()  # type: ignore[union-attr]
            if self.at < len(self.text) or not self.more():
                return self.text[self.at: self.at + 1]

    def take(self, char: str) -> None:
        if self.skip() != char:
            found = self.text[self.at: self.at + 1] or "the end of the text"
            raise self.fail(f"expected {char!r}, found {found!r}")
        self.at += 1

    def value(self) -> Any:
        """The value that starts here. One that reaches the end of what has
        been read may be cut ("12" of "123", or half a record): read on, as
        much again as is held, so a long value costs linear time, not quadratic."""
        self.skip()  # the last place the text is cut: ``at`` holds from here
        while True:
            try:
                value, end = _DECODE(self.text, self.at)
            except json.JSONDecodeError as e:
                if self.more(len(self.text) - self.at):
                    continue
                raise self.fail(e.msg, e.pos) from None
            # whole only if what follows may follow a value: "1." of "1.5" parses as 1
            if (end < len(self.text) and self.text[end] in _AFTER_A_VALUE) or not self.more(len(self.text) - self.at):
                self.at = end
                return value

    def elements(self) -> Iterator[Any]:
        """The array that starts here, one element at a time."""
        self.take("[")
        if self.skip() == "]":
            self.at += 1
            return
        while True:
            yield self.value()
            if self.skip() == "]":
                self.at += 1
                return
            self.take(",")


def members(text: str | Iterable[str], stream: frozenset[str] = frozenset()) -> Iterator[tuple[str, Any]]:
    """(key, value) of the object ``text`` holds (a string, or its pieces in
    order: ``utf8_pieces``), in the order written. The value of a key in
    ``stream`` that is an array comes as an iterator over its elements; what
    the caller leaves of it is skipped (parsed and dropped) before the next
    member. Raises ``TextError`` (a ``json.JSONDecodeError``, so a
    ``ValueError``) where the text is not one JSON object."""
    cur = _Cursor([text] if isinstance(text, str) else text)
    cur.take("{")
    if cur.skip() == "}":
        cur.at += 1
    else:
        while True:
            if cur.skip() != '"':
                raise cur.fail("expected a key")
            key = cur.value()
            cur.take(":")
            if key in stream and cur.skip() == "[":
                items = cur.elements()
                yield key, items
                for _ in items:  # the rest of the array, if the caller stopped early
                    pass
            else:
                yield key, cur.value()
            if cur.skip() == "}":
                cur.at += 1
                break
            cur.take(",")
    if cur.skip():
        raise cur.fail("extra data after the object")


__all__ = ["TextError", "members", "utf8_pieces"]
