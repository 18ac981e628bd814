"""AI Hub 141 "한국어 멀티세션 대화": loader for the real download.

Reads straight from the zips as downloaded (entries start with "/"), from an
extracted folder, or from one JSON file. The data is licensed by NIA/AI Hub
and is never copied into this repository; see ``../shared/data/aihub141``.
"""
from __future__ import annotations

import json
import re
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

KST = timezone(timedelta(hours=9))
USER_SPEAKER = "speaker1"


class DatasetError(ValueError):
    """A file does not follow the schema; the message names the file and key."""


@dataclass(frozen=True)
class Turn:
    speaker: str
    utterance: str
    summary: str
    timestamp: datetime


@dataclass(frozen=True)
class Session:
    nth: int
    session_id: str
    turns: tuple[Turn, ...]
    prev_user_facts: tuple[str, ...]
    new_user_facts: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    conversation_id: str
    source: str
    sessions: tuple[Session, ...]
    topic: str | None = None
    user_persona: tuple[str, ...] = field(default_factory=tuple)


def _require(d: Any, key: str, where: str) -> Any:
    if not isinstance(d, dict) or key not in d:
        raise DatasetError(f"{where}: missing required key {key!r}")
    return d[key]


def _timestamp(turn: dict, where: str) -> datetime:
    date, time = turn.get("date") or "", turn.get("time") or "00:00:00"
    try:
        return datetime.fromisoformat(f"{date}T{time}").replace(tzinfo=KST)
    except ValueError:
        raise DatasetError(f"{where}: bad date/time {date!r} {time!r}") from None


def parse_conversation(doc: dict, source: str) -> Conversation | None:
    """One file -> Conversation; ``None`` when it has fewer than 2 sessions (the protocol skips them)."""
    ms = _require(doc, "multisessionInfo", source)
    persona = _require(doc, "personaInfo", source)
    cl = _require(persona, "clInfo", f"{source}: personaInfo")
    _require(persona, "cpInfo", f"{source}: personaInfo")
    raw_sessions = _require(doc, "sessionInfo", source)
    if not isinstance(raw_sessions, list):
        raise DatasetError(f"{source}: sessionInfo must be a list")
    if len(raw_sessions) < 2:
        return None
    sessions = []
    for idx, s in enumerate(raw_sessions):
        where = f"{source}: sessionInfo[{idx}]"
        nth_raw = str(s.get("nthSession") or "").strip()
        nth = int(nth_raw) if nth_raw.isdigit() else idx + 1
        dialog = _require(s, "dialog", where)
        turns = []
        for j, t in enumerate(dialog):
            tw = f"{where}.dialog[{j}]"
            utt = _require(t, "utterance", tw)
            if not isinstance(utt, str):
                raise DatasetError(f"{tw}: utterance must be a string")
            turns.append(Turn(str(_require(t, "speaker", tw)), utt, str(t.get("summary") or ""), _timestamp(t, tw)))
        prev = (s.get("prevAggregatedpersonaSummary") or {}).get(USER_SPEAKER) or []
        new = (s.get("sessionPersonaSummary") or {}).get(USER_SPEAKER) or []
        sessions.append(Session(nth, str(s.get("sessionID") or f"{idx + 1}"), tuple(turns), tuple(prev), tuple(new)))
    topic = (doc.get("topicInfo") or {}).get("topicType")
    return Conversation(str(_require(ms, "multisessionID", source)), source, tuple(sessions), topic,
                        tuple(cl.get("personaFeatures") or ()))


_LEVEL = re.compile(r"session(\d)")


def _zip_members(path: Path) -> Iterator[tuple[str, bytes]]:
    with zipfile.ZipFile(path) as zf:
        for info in sorted(zf.infolist(), key=lambda i: i.filename):
            if info.filename.endswith(".json"):
                yield f"{path.name}:{info.filename.lstrip('/')}", zf.read(info)


def _sources(path: Path, level: int | None, split: str | None,
             skipped: dict[str, list[str]] | None = None) -> Iterator[tuple[str, bytes]]:
    if path.is_file() and path.suffix == ".zip":
        yield from _zip_members(path)
    elif path.is_file():
        yield str(path), path.read_bytes()
    elif path.is_dir():
        zips = sorted(path.rglob("*.zip"))
        wanted = {"validation": "VL_", "training": "TL_"}.get((split or "").lower())
        for z in zips:
            m = _LEVEL.search(z.name)
            if level is not None and (not m or int(m.group(1)) != level):
                if skipped is not None:
                    skipped.setdefault(f"archives not of level={level}", []).append(z.name)
                continue
            if wanted and not z.name.startswith(wanted):
                if skipped is not None:
                    skipped.setdefault(f"archives not of split={split!r}", []).append(z.name)
                continue
            yield from _zip_members(z)
        for f in sorted(path.rglob("*.json")):
            yield str(f), f.read_bytes()
    else:
        raise DatasetError(f"{path} does not exist")


def load_aihub141(path: str | Path, *, level: int | None = None, split: str | None = "validation",
                  limit: int | None = None) -> Iterator[Conversation]:
    """Yield conversations with >= 2 sessions, in file-name order.

    ``level`` keeps ``session{level}`` archives (and, for loose files, the
    conversations with that many sessions); ``split`` picks VL_/TL_ archives.
    """
    path = Path(path).expanduser()
    n = 0
    skipped: dict[str, list[str]] = {}
    files = found = 0
    for source, raw in _sources(path, level, split, skipped):
        files += 1
        try:
            doc = json.loads(raw.decode("utf-8-sig"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise DatasetError(f"{source}: not valid JSON ({e})") from None
        docs: Iterable[dict] = doc if isinstance(doc, list) else [doc]
        for d in docs:
            conv = parse_conversation(d, source)
            if conv is None:
                skipped.setdefault("conversations with fewer than 2 sessions (or not a conversation)", []).append(source)
                continue
            found += 1
            if level is not None and len(conv.sessions) != level:
                skipped.setdefault(f"conversations with a session count other than level={level}", []).append(source)
                continue
            yield conv
            n += 1
            if limit is not None and n >= limit:
                return
    if n == 0:  # an empty selection is a mistake to name, not a table of zeros
        why = "; ".join(f"{len(v)} {k} (e.g. {v[0]})" for k, v in skipped.items()) or "nothing was filtered out"
        raise DatasetError(f"no conversation selected from {path} (level={level}, split={split!r}): {files} JSON files "
                           f"read, {found} conversations found; skipped: {why}")
