"""The README's quick start must run as written and print what it claims."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_quick_start_runs_and_prints_what_it_says(tmp_path):
    text = README.read_text(encoding="utf-8")
    block = re.search(r"## Library quick start\s+```python\n(.*?)```", text, re.DOTALL).group(1)
    block = block.replace("/tmp/naia-quickstart.json", str(tmp_path / "qs.json"))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(block, "README-quickstart", "exec"), {})
    printed = buf.getvalue().splitlines()
    lines = block.splitlines()
    claimed = []
    for i, line in enumerate(lines):
        if not line.startswith("print("):
            continue
        same = re.search(r"\)\s+# (.*)$", line)
        nxt = re.match(r"\s*# (.*)$", lines[i + 1]) if i + 1 < len(lines) else None
        comment = same or nxt
        if comment:
            claimed.append(re.sub(r"\s+\(.*\)$", "", comment.group(1).strip()))
    assert len(claimed) >= 6
    for claim in claimed:
        assert claim in printed, (claim, printed)


def _headings(text: str) -> list[str]:
    out, in_code = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and re.match(r"^#{2,3} ", line) and line != "## Contents":
            out.append(line.split(" ", 1)[1])
    return out


def test_the_contents_list_every_section_and_each_link_finds_its_heading():
    text = README.read_text(encoding="utf-8")
    contents = re.search(r"## Contents\n\n(.*?)\n\n", text, re.DOTALL).group(1)
    links = re.findall(r"\[(.+)\]\(#([^)]+)\)", contents)
    heads = _headings(text)
    assert [t for t, _ in links] == heads  # every section, in order, none stale
    for title, anchor in links:  # GitHub's anchors: lower case, punctuation dropped, spaces to hyphens
        assert anchor == re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
