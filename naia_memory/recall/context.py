"""The turn before: what a turn is indexed with, besides itself.

An answer carries the context of the question it answers ("What are you
researching?" -> "Adoption agencies!"), and a short reply carries the
context of what it replies to ("Yes, it was great!"). Such a turn is
embedded and keyword-indexed with the turn before it; the stored content
stays the turn. Other turns are indexed alone, so a topic does not bleed
into the unrelated turn that follows it. Fusion study on the LoCoMo dev
half (scripts/fusion_study.py), turn R@5 / R@50: no context 0.593 / 0.832,
context for every turn 0.682 / 0.895, after a question or when short
(< 8 content tokens) 0.698 / 0.903.
"""
from __future__ import annotations

from ..cognition.contradiction import is_question
from ..cognition.tokenize import Tokenizer

SHORT_TOKENS = 8


def carried_context(previous: str | None, content: str, tokenizer: Tokenizer, short_tokens: int = SHORT_TOKENS) -> str | None:
    """The previous turn if ``content`` answers it or is a short reply, else None."""
    if not previous:
        return None
    if is_question(previous) or len(tokenizer.tokens(content)) < short_tokens:
        return previous
    return None


def index_text(content: str, context: str | None) -> str:
    """What is embedded and keyword-indexed for an episode: the turn before, then the turn."""
    return f"{context}\n{content}" if context else content
