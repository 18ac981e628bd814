from __future__ import annotations

import http.client
import json
import math
import numbers
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence, runtime_checkable


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


CLIP = 4000  # characters of a server's body kept in an error message


def clip(text: str, limit: int = CLIP) -> str:
    """A long answer or body as its start and how much was left off: kept in
    logs and exceptions, where a 5 MB answer was stored whole on every retry."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


@runtime_checkable
class ChatClient(Protocol):
    name: str

    def complete(self, messages: Sequence[dict[str, str]]) -> str: ...


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is refused, not followed: urllib resends the request (as a
    GET) with its Authorization header to whatever host the server names,
    and that host's answer would be read as the model's."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: D102 - urllib's hook
        raise LLMError(f"{req.full_url}: HTTP {code} redirect to {newurl} not followed (the key would go with it); "
                       "give the final address as base_url", status=code)


_OPENER = urllib.request.build_opener(_NoRedirects)


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
        self.base_url = self.base_url.rstrip("/")
        self.name = self.name or f"openai-compat-{self.model}"
        check_settings(self.timeout_s, self.max_tokens)

    def complete(self, messages: Sequence[dict[str, str]]) -> str:
        body = json.dumps({"model": self.model, "messages": list(messages), "max_tokens": self.max_tokens, "temperature": self.temperature}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = f"{self.base_url}/chat/completions"
        req = urllib.request.Request(url, data=body, headers=headers, method="POST")
        deadline = time.monotonic() + self.timeout_s
        try:
            with _OPENER.open(req, timeout=self.timeout_s) as resp:
                data = self._read(resp, url, deadline)
        except urllib.error.HTTPError as e:
            raise LLMError(f"{url}: HTTP {e.code}: {clip(_body(e))}", status=e.code) from e
        except LLMError:
            raise
        except (OSError, http.client.HTTPException) as e:  # refused, reset, timed out, cut short
            why = e.reason if isinstance(e, urllib.error.URLError) else f"{type(e).__name__}: {e}"
            raise LLMError(f"cannot get an answer from {url}: {why}") from e
        try:
            raw = data.decode()
        except UnicodeDecodeError as e:
            raise LLMError(f"{url}: the answer is not UTF-8 text: {clip(data.decode(errors='replace'))}") from e
        try:
            message = json.loads(raw)["choices"][0]["message"]
            content = message["content"]
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise LLMError(f"{url}: unexpected response body: {clip(raw)}") from e
        return _text(content, message, url, raw)

    def _read(self, resp, url: str, deadline: float) -> bytes:
        chunks, size = [], 0
        while True:
            if time.monotonic() > deadline:
                raise LLMError(f"{url}: no complete answer within timeout_s={self.timeout_s:g} s")
            chunk = resp.read1(1 << 16)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > self.max_response_bytes:
                raise LLMError(f"{url}: the answer passed max_response_bytes={self.max_response_bytes}")
            chunks.append(chunk)


def _body(e: urllib.error.HTTPError) -> str:
    try:
        return e.read(CLIP * 4).decode(errors="replace")
    except (OSError, http.client.HTTPException):
        return ""


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
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, numbers.Real) or not math.isfinite(timeout_s) \
            or timeout_s <= 0:
        raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
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
