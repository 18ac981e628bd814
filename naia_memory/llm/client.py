from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence, runtime_checkable


class LLMError(RuntimeError):
    """The LLM endpoint failed; the message holds the full response body."""


@runtime_checkable
class ChatClient(Protocol):
    name: str

    def complete(self, messages: Sequence[dict[str, str]]) -> str: ...


@dataclass
class OpenAICompatChat:
    """``/v1/chat/completions`` over urllib. Reasoning models spend tokens
    before answering (AIDA's truncated-answer bug), so max_tokens is generous."""

    base_url: str
    model: str
    api_key: str | None = None
    max_tokens: int = 2048
    temperature: float = 0.0
    timeout_s: float = 60.0
    name: str = ""

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/")
        self.name = self.name or f"openai-compat-{self.model}"

    def complete(self, messages: Sequence[dict[str, str]]) -> str:
        body = json.dumps({"model": self.model, "messages": list(messages), "max_tokens": self.max_tokens, "temperature": self.temperature}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(f"{self.base_url}/chat/completions", data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                raw = resp.read().decode()
        except urllib.error.HTTPError as e:
            raise LLMError(f"HTTP {e.code}: {e.read().decode(errors='replace')}") from e
        except urllib.error.URLError as e:
            raise LLMError(f"cannot reach {self.base_url}: {e.reason}") from e
        try:
            content = json.loads(raw)["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise LLMError(f"unexpected response body: {raw}") from e
        return content if content is not None else ""


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
