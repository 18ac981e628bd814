from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from ..http_json import CLIP, check_timeout, check_url, clip, post_json

__all__ = ["CLIP", "ChatClient", "LLMError", "OpenAICompatChat", "ScriptedLLM", "check_settings", "clip"]


class LLMError(RuntimeError):
    """The LLM endpoint failed (unreachable, an HTTP error, a body that is not
    a chat completion); the message names the server and holds the start of
    what it said. ``status``: the HTTP status when there was one; 400, 413
    and 422 refuse this request (too long, say), not every request."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status

    @property
    def about_this_input(self) -> bool:
        return self.status in (400, 413, 422)


@runtime_checkable
class ChatClient(Protocol):
    name: str

    def complete(self, messages: Sequence[dict[str, str]]) -> str: ...


@dataclass
class OpenAICompatChat:
    """``/v1/chat/completions`` over urllib. Reasoning models spend tokens
    before answering (AIDA's truncated-answer bug), so max_tokens is generous.
    ``timeout_s`` bounds the whole answer, not each read (a server sending a
    byte at a time never tripped the per-read timeout); ``max_response_bytes``
    bounds its size."""

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)  # never in a repr a log or a traceback may print
    max_tokens: int = 2048
    temperature: float = 0.0
    timeout_s: float = 60.0
    name: str = ""
    max_response_bytes: int = 8 << 20

    def __post_init__(self) -> None:
        self.base_url = check_url(self.base_url)
        self.name = self.name or f"openai-compat-{self.model}"
        check_settings(self.timeout_s, self.max_tokens)

    def complete(self, messages: Sequence[dict[str, str]]) -> str:
        url = f"{self.base_url}/chat/completions"
        payload = {"model": self.model, "messages": list(messages), "max_tokens": self.max_tokens,
                   "temperature": self.temperature}
        raw = post_json(url, payload, self.api_key, self.timeout_s, self.max_response_bytes,
                        lambda message, status: LLMError(message, status=status))
        try:
            message = json.loads(raw)["choices"][0]["message"]
            content = message["content"]
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise LLMError(f"{url}: unexpected response body: {clip(raw)}") from e
        return _text(content, message, url, raw)


def _text(content: Any, message: Any, url: str, raw: str) -> str:
    """The answer's text: a string, or the text parts of a list of content
    parts (some servers answer that way). A refusal, or content of any other
    shape, is the server's failure and said so, not an empty answer."""
    if isinstance(content, str):
        return content
    if content is None:
        refusal = message.get("refusal") if isinstance(message, dict) else None
        if refusal:
            raise LLMError(f"{url}: the model refused: {clip(str(refusal))}")
        return ""  # nothing said: the parsers log it as empty (truncated by max_tokens?)
    if isinstance(content, list) and all(isinstance(p, dict) and isinstance(p.get("text", ""), str) for p in content):
        return "".join(p.get("text", "") for p in content if p.get("type", "text") == "text")
    raise LLMError(f"{url}: message content is neither text nor text parts: {clip(raw)}")


def check_settings(timeout_s: Any, max_tokens: Any) -> None:
    """Refused when the client is made, not at the first call inside a consolidation."""
    check_timeout(timeout_s)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
        raise ValueError(f"max_tokens must be a positive whole number, got {max_tokens!r}")


@dataclass
class ScriptedLLM:
    """Deterministic stand-in for a remote LLM in tests: answers from a script
    (a list consumed in order, or a function of the messages)."""

    script: Sequence[str] | Callable[[Sequence[dict[str, str]]], str]
    name: str = "scripted"
    calls: list[list[dict[str, str]]] = field(default_factory=list)

    def complete(self, messages: Sequence[dict[str, str]]) -> str:
        self.calls.append(list(messages))
        if callable(self.script):
            return self.script(messages)
        if len(self.calls) > len(self.script):
            raise LLMError(f"scripted LLM ran out of answers after {len(self.script)} calls")
        return self.script[len(self.calls) - 1]
