"""The README's agent-loop example runs as shipped."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_agent_loop_example_runs_and_ends_with_the_new_job():
    out = subprocess.run([sys.executable, "examples/agent_loop.py", "--embedder", "hashing"], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("user: ") == 5 and "From memory:" in out.stdout
    facts = out.stdout.rsplit("facts now:", 1)[1]
    assert "UX designer" in facts
