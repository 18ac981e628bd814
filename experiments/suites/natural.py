"""The natural suites: statements, updates and lifecycle histories in everyday
Korean and English, written by a session that had not read the rules
(``data/README.md``, ``data/LIFECYCLE.md``).

Every item carries its split, fixed when it was written: ``dev`` is what rules
may be tuned on; ``test`` is frozen and only reported. Loading ``test`` is for
reports; a tuning script should ask for ``dev`` only.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .contradiction_suite import Case
from .lifecycle_scripts import Script, Step

DATA = Path(__file__).parent / "data"
SPLITS = ("dev", "test", "all")


@dataclass(frozen=True)
class LabelledStatement:
    """One user utterance and whether it holds a fact worth keeping."""

    id: str
    lang: str
    text: str
    declarative: bool
    why_not: str | None
    subject: str | None
    time: str | None
    split: str


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")


def _jsonl(name: str) -> list[dict]:
    path = DATA / name
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{n}: {e.msg}") from None
    return rows


def update_cases(split: str = "dev") -> list[Case]:
    """Natural update/delete/keep cases as contradiction ``Case`` s (category, attr and listed kept)."""
    _check_split(split)
    out = []
    for r in _jsonl("natural_updates.jsonl"):
        if split != "all" and r["split"] != split:
            continue
        out.append(Case(r["id"], r["lang"], r["category"], tuple(r["existing"]), r["new"], r["expected"], r.get("target"),
                        attr=r.get("attr"), listed=r.get("listed"), subject=r.get("subject", "user"), split=r["split"]))
    return out


def statements(split: str = "dev") -> list[LabelledStatement]:
    _check_split(split)
    return [LabelledStatement(r["id"], r["lang"], r["text"], bool(r["declarative"]), r.get("why_not"), r.get("subject"),
                              r.get("time"), r["split"])
            for r in _jsonl("natural_statements.jsonl") if split == "all" or r["split"] == split]


@dataclass(frozen=True)
class NaturalScript(Script):
    attr: str | None = None
    listed: bool | None = None
    split: str = "dev"


def lifecycle_scripts(split: str = "dev") -> list[NaturalScript]:
    _check_split(split)
    raw = json.loads((DATA / "natural_lifecycle.json").read_text(encoding="utf-8"))
    out = []
    for s in raw:
        if split != "all" and s["split"] != split:
            continue
        steps = tuple(Step(int(st["day"]), st["say"], st["query"], st.get("current"), tuple(st.get("stale") or ()),
                           tuple(st.get("deleted") or ())) for st in s["steps"])
        out.append(NaturalScript(s["script_id"], s["lang"], steps, attr=s.get("attr"), listed=s.get("listed"), split=s["split"]))
    return out
