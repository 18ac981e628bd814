"""The natural suites: statements, updates and lifecycle histories in everyday
Korean and English, written by a session that had not read the rules
(``data/README.md``, ``data/LIFECYCLE.md``).

Every item carries its split, fixed when it was written: ``dev`` is what rules
may be tuned on; ``test`` is frozen and only reported. Loading ``test`` is for
reports; a tuning script should ask for ``dev`` only.
"""
from __future__ import annotations

import json
import random
import re
import zlib
from dataclasses import dataclass, replace
from pathlib import Path

from .contradiction_suite import Case
from .lifecycle_scripts import Script, Step

DATA = Path(__file__).parent / "data"
SPLITS = ("dev", "test", "all")
BATCHES = ("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "all")
# each batch was written on its own, by a helper that had not seen the rules nor
# the batches before it; batch 2 came after the rules were tuned on batch 1's dev
# part, so its test part is a check no rule was shaped around; batch 3 (updates
# only) came after the rules were tuned on the dev parts of 1 and 2; batch 4
# (updates only, weighted to the keep traps) after a round on batch 3's dev part
# and batch 5 (updates only, a fresh check) after session 23's four rounds, measured
# once on both parts before any rule was touched for it; batch 6 (the same recipe as 5)
# after session 25 (slot centring with the top directions out), measured the same way;
# batch 7 (the same recipe) after session 27's round, measured with the code before and after it;
# batch 8 (the same recipe) written at session 28's start, measured with the code before and after its round;
# batch 9 (the same recipe) written in session 29, measured once with that session's code (no rule changed for it);
# batch 10 (the same recipe) written at session 30's start, measured once with the code at that start;
# statements batch 3 written in session 30 after its update round, measured once (no rule changed for it);
# batch 11 (the same recipe) written in session 31, measured once with that session's code (no rule changed for it);
# batch 12 (the same recipe) written at session 32's start, measured with the code at that start before anything changed
_FILES = {"updates": ("natural_updates.jsonl", "natural_updates_2.jsonl", "natural_updates_3.jsonl",
                      "natural_updates_4.jsonl", "natural_updates_5.jsonl", "natural_updates_6.jsonl",
                      "natural_updates_7.jsonl", "natural_updates_8.jsonl", "natural_updates_9.jsonl",
                      "natural_updates_10.jsonl", "natural_updates_11.jsonl", "natural_updates_12.jsonl"),
          "statements": ("natural_statements.jsonl", "natural_statements_2.jsonl", "natural_statements_3.jsonl"),
          "lifecycle": ("natural_lifecycle.json", "natural_lifecycle_2.json")}


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
    batch: int = 1


def _check_split(split: str, batch: str | int = "all") -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    if str(batch) not in BATCHES:
        raise ValueError(f"batch must be one of {BATCHES}, not {batch!r}")


def _batches(kind: str, batch: str | int) -> list[tuple[int, str]]:
    if str(batch) != "all" and int(batch) > len(_FILES[kind]):
        raise ValueError(f"the natural {kind} suite has {len(_FILES[kind])} batches; batch {batch} is not one of them")
    return [(n, f) for n, f in enumerate(_FILES[kind], 1) if str(batch) in ("all", str(n))]


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


def update_cases(split: str = "dev", batch: str | int = "all") -> list[Case]:
    """Natural update/delete/keep cases as contradiction ``Case`` s (category, attr and listed kept)."""
    _check_split(split, batch)
    out = []
    for n, name in _batches("updates", batch):
        for r in _jsonl(name):
            if split != "all" and r["split"] != split:
                continue
            out.append(Case(r["id"], r["lang"], r["category"], tuple(r["existing"]), r["new"], r["expected"], r.get("target"),
                            attr=r.get("attr"), listed=r.get("listed"), subject=r.get("subject", "user"), split=r["split"], batch=n))
    return out


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{3,}|[가-힣]{2,}", text.lower())}


# the statements the padding is drawn from: the first two batches, fixed, so that a statements batch added
# later (batch 3, session 30) does not change what every update case is padded with
PAD_POOL_BATCHES = (1, 2)


def padded(cases: list[Case], n: int, seed: int = 0) -> list[Case]:
    """Each case with ``n`` more facts told before its own: the user's
    declarative statements of the labelled-statements suite (same split and
    language), none sharing a word with the case, so the case's answer does
    not change. A memory holds many facts; a suite case holds one to three,
    and a slot found by closeness must stand out from every other fact."""
    if n <= 0:
        return list(cases)
    splits = {c.split for c in cases}
    part = splits.pop() if len(splits) == 1 else "all"
    pool: dict[str, list[str]] = {}
    for batch in PAD_POOL_BATCHES:
        for st in statements(part, batch):
            if st.declarative and st.subject in (None, "user"):
                pool.setdefault(st.lang, []).append(st.text)
    out = []
    for c in cases:
        own = set().union(*(_words(t) for t in (*c.existing, c.new)))
        fit = [t for t in pool.get(c.lang, []) if not _words(t) & own]
        rng = random.Random(zlib.crc32(f"{seed}:{c.case_id}".encode()))
        extra = tuple(rng.sample(fit, min(n, len(fit))))
        out.append(replace(c, existing=extra + c.existing, target=None if c.target is None else c.target + len(extra),
                           padding=len(extra)))
    return out


def _said(text: str) -> str:
    return " ".join(text.split()).lower()


def statements(split: str = "dev", batch: str | int = "all") -> list[LabelledStatement]:
    """The labelled statements of ``split``. A test statement said word for word
    in the dev part of any batch ("hey!", "ㅋㅋㅋㅋ": seven greetings and fillers
    a review found in session 33) is left out of the test part: the rules were
    tuned on its twin, so it measured nothing unseen."""
    _check_split(split, batch)
    dev = {_said(r["text"]) for _, name in _batches("statements", "all") for r in _jsonl(name) if r["split"] == "dev"}
    return [LabelledStatement(r["id"], r["lang"], r["text"], bool(r["declarative"]), r.get("why_not"), r.get("subject"),
                              r.get("time"), r["split"], n)
            for n, name in _batches("statements", batch) for r in _jsonl(name)
            if (split == "all" or r["split"] == split) and not (r["split"] == "test" and _said(r["text"]) in dev)]


@dataclass(frozen=True)
class NaturalScript(Script):
    attr: str | None = None
    listed: bool | None = None
    split: str = "dev"
    batch: int = 1


def lifecycle_scripts(split: str = "dev", batch: str | int = "all") -> list[NaturalScript]:
    _check_split(split, batch)
    out = []
    for n, name in _batches("lifecycle", batch):
        for s in json.loads((DATA / name).read_text(encoding="utf-8")):
            if split != "all" and s["split"] != split:
                continue
            steps = tuple(Step(int(st["day"]), st["say"], st["query"], st.get("current"), tuple(st.get("stale") or ()),
                               tuple(st.get("deleted") or ())) for st in s["steps"])
            out.append(NaturalScript(s["script_id"], s["lang"], steps, attr=s.get("attr"), listed=s.get("listed"),
                                     split=s["split"], batch=n))
    return out
