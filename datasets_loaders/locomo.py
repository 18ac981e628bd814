"""LoCoMo (Maharana et al., ACL 2024) loader that survives the file's quirks.

Accepts any path to ``locomo10.json`` (or the dev half in ``shared/``).
Quirks handled, each counted in the ``LocomoReport``: evidence strings that
pack several ids (``'D8:6; D9:17'``, ``'D9:1 D4:4 D4:6'``), a stray colon
(``'D:11:26'``), zero-padded turns (``'D30:05'``), a bare ``'D'``, evidence
pointing at turns that do not exist, questions with no evidence, more
``session_N_date_time`` keys than ``session_N`` lists, and integer answers.
License: CC BY-NC 4.0; never copied into this repository.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .aihub141 import DatasetError

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_ID = re.compile(r"D:?(\d+):0*(\d+)")
_SESSION = re.compile(r"session_(\d+)")


@dataclass(frozen=True)
class LocomoTurn:
    dia_id: str
    speaker: str
    text: str
    session: int


@dataclass(frozen=True)
class LocomoSession:
    n: int
    date: datetime
    turns: tuple[LocomoTurn, ...]


@dataclass(frozen=True)
class LocomoQA:
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]
    evidence_raw: tuple[str, ...]
    dropped_evidence: tuple[str, ...] = ()

    @property
    def category_name(self) -> str:
        return CATEGORIES.get(self.category, f"category-{self.category}")


@dataclass(frozen=True)
class LocomoSample:
    sample_id: str
    speakers: tuple[str, str]
    sessions: tuple[LocomoSession, ...]
    qa: tuple[LocomoQA, ...]

    @property
    def turn_ids(self) -> set[str]:
        return {t.dia_id for s in self.sessions for t in s.turns}


@dataclass
class LocomoReport:
    samples: int = 0
    sessions: int = 0
    turns: int = 0
    questions: int = 0
    empty_evidence: int = 0
    split_evidence: int = 0
    repaired_ids: int = 0
    unparseable_ids: list[str] = field(default_factory=list)
    missing_turn_ids: list[str] = field(default_factory=list)
    dates_without_session: list[str] = field(default_factory=list)
    non_string_answers: int = 0


def parse_date(s: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> aware datetime (the file has no zone; UTC is assumed)."""
    try:
        return datetime.strptime(s.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
    except ValueError:
        raise DatasetError(f"unrecognised LoCoMo session date {s!r}") from None


def parse_evidence(raw: str, report: LocomoReport | None = None) -> list[str]:
    """One evidence string -> canonical ids 'D<session>:<turn>' (no zero padding)."""
    parts = [p for p in re.split(r"[;,\s]+", raw.strip()) if p]
    if report is not None and len(parts) > 1:
        report.split_evidence += 1
    out = []
    for p in parts:
        m = _ID.fullmatch(p)
        if not m:
            if report is not None:
                report.unparseable_ids.append(p)
            continue
        canon = f"D{int(m.group(1))}:{int(m.group(2))}"
        if report is not None and canon != p:
            report.repaired_ids += 1
        out.append(canon)
    return out


def _canon_turn_id(dia_id: str) -> str:
    m = _ID.fullmatch(dia_id.strip())
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else dia_id.strip()


def _turn_text(t: dict) -> str:
    text = str(t.get("text") or "").strip()
    cap = t.get("blip_caption")
    return f"{text} [shares a photo: {cap}]" if cap else text


def parse_sample(doc: dict, report: LocomoReport) -> LocomoSample:
    sid = doc.get("sample_id") or "?"
    conv = doc.get("conversation")
    if not isinstance(conv, dict) or "speaker_a" not in conv or "speaker_b" not in conv:
        raise DatasetError(f"{sid}: missing conversation.speaker_a/speaker_b")
    numbers = sorted({int(m.group(1)) for k in conv if (m := _SESSION.fullmatch(k.replace("_date_time", "")))})
    sessions = []
    for n in numbers:
        turns_raw, date_raw = conv.get(f"session_{n}"), conv.get(f"session_{n}_date_time")
        if not isinstance(turns_raw, list):
            report.dates_without_session.append(f"{sid}:session_{n}")
            continue
        if not date_raw:
            raise DatasetError(f"{sid}: session_{n} has no session_{n}_date_time")
        turns = tuple(LocomoTurn(_canon_turn_id(str(t["dia_id"])), str(t["speaker"]), _turn_text(t), n) for t in turns_raw)
        sessions.append(LocomoSession(n, parse_date(date_raw), turns))
    sample = LocomoSample(sid, (conv["speaker_a"], conv["speaker_b"]), tuple(sessions), ())
    known = sample.turn_ids
    qas = []
    for q in doc.get("qa", []):
        raw = tuple(str(e) for e in q.get("evidence") or ())
        if not raw:
            report.empty_evidence += 1
        ids = [i for r in raw for i in parse_evidence(r, report)]
        kept = tuple(dict.fromkeys(i for i in ids if i in known))
        dropped = tuple(i for i in ids if i not in known)
        report.missing_turn_ids += [f"{sid}:{i}" for i in dropped]
        ans = q.get("answer", q.get("adversarial_answer", ""))
        if not isinstance(ans, str):
            report.non_string_answers += 1
            ans = str(ans)
        qas.append(LocomoQA(str(q["question"]), ans, int(q["category"]), kept, raw, dropped))
    report.samples += 1
    report.sessions += len(sessions)
    report.turns += sum(len(s.turns) for s in sessions)
    report.questions += len(qas)
    return LocomoSample(sid, sample.speakers, sample.sessions, tuple(qas))


def load_locomo(path: str | Path, *, limit: int | None = None, sample_ids: list[str] | None = None) -> tuple[list[LocomoSample], LocomoReport]:
    path = Path(path).expanduser()
    if not path.exists():
        raise DatasetError(f"{path} does not exist (point at locomo10.json)")
    try:
        docs = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(docs, list):
        raise DatasetError(f"{path}: expected a JSON list of samples")
    report = LocomoReport()
    out = []
    for d in docs:
        if sample_ids and d.get("sample_id") not in sample_ids:
            continue
        out.append(parse_sample(d, report))
        if limit is not None and len(out) >= limit:
            break
    return out, report
