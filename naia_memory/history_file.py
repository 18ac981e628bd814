"""A conversation history as a file of turns (JSON Lines), for ``naia-memory ingest``.

One JSON object a line, the keys of a ``Turn``: ``content`` (required),
``role``, ``session``, ``now`` (ISO 8601; a time without a zone is UTC) and
``metadata``. Blank lines are skipped. The whole file is read and checked
before anything is stored, and an error names the line, so a history with
one bad line stores nothing rather than a prefix of itself.
"""
from __future__ import annotations

import json
from datetime import datetime
from typing import Iterable

from .contract import InvalidInput, Turn, as_turn
from .validate import check_content, check_metadata, check_name, check_role


def read_turns(lines: Iterable[str | bytes]) -> list[Turn]:
    """The turns of a JSON Lines history, in order; ``InvalidInput`` names
    the first line that is not a turn (1-based, as an editor shows it).
    Lines may be bytes (a file opened in binary): each is decoded as UTF-8
    on its own, so a bad byte is named by its line, and a BOM opening the
    file (an editor on Windows) is skipped."""
    out: list[Turn] = []
    for number, line in enumerate(lines, 1):
        try:
            if isinstance(line, bytes):
                line = line.decode("utf-8-sig" if number == 1 else "utf-8")
            elif number == 1:
                line = line.removeprefix("\ufeff")
            if not line.strip():
                continue
            out.append(_turn(line))
        except (ValueError, TypeError) as e:  # json's and UTF-8's errors are ValueErrors; a Turn's refusals InvalidInput
            raise InvalidInput(f"line {number}: {e}") from None
        except RecursionError:  # json.loads on a line nested thousands deep
            raise InvalidInput(f"line {number}: nested too deeply") from None
    return out


def _turn(line: str) -> Turn:
    obj = json.loads(line)
    if not isinstance(obj, dict):
        raise InvalidInput(f"a turn is a JSON object, got {type(obj).__name__}")
    now = obj.get("now")
    if now is not None:
        if not isinstance(now, str):
            raise InvalidInput(f"'now' is an ISO 8601 time, got {now!r}")
        obj = {**obj, "now": datetime.fromisoformat(now)}  # (a bad time raises ValueError: named with its line)
    turn = as_turn(obj)
    check_content(turn.content)
    check_role(turn.role)
    check_name(turn.session, "session", optional=True)
    check_metadata(turn.metadata)
    return turn


__all__ = ["read_turns"]
