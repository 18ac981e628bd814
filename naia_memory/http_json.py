"""One JSON POST to a server the user named (a chat model, an embedder),
held to what a remote we do not control may do: redirects are refused (urllib
resends the request, Authorization header included, to whatever host the
server names), the whole answer must arrive within ``timeout_s`` (a server
sending a byte at a time never trips a per-read timeout), its size is capped,
only http and https are spoken (``file://`` would read a local file as the
answer), and every way it can fail (refused, reset, cut short, not UTF-8)
reaches the caller as the caller's own error, never a raw urllib or socket
exception. Shared by ``llm.client`` and ``embedders.openai_compat``.
"""
from __future__ import annotations

import http.client
import json
import math
import numbers
import time
import urllib.error
import urllib.request
from typing import Any, Callable

CLIP = 4000  # characters of a server's body kept in an error message

Fail = Callable[[str, "int | None"], Exception]  # (message, HTTP status or None) -> the caller's error


def clip(text: str, limit: int = CLIP) -> str:
    """A long answer or body as its start and how much was left off: kept in
    logs and exceptions, where a 5 MB answer was stored whole on every retry."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


class _Redirected(Exception):
    def __init__(self, code: int, target: str):
        super().__init__(target)
        self.code, self.target = code, target


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: D102 - urllib's hook
        raise _Redirected(code, newurl)


_OPENER = urllib.request.build_opener(_NoRedirects)


def check_timeout(timeout_s: Any) -> None:
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, numbers.Real) or not math.isfinite(timeout_s) \
            or timeout_s <= 0:
        raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")


def check_url(base_url: Any) -> str:
    """The address without a trailing slash; refused unless it is http(s)."""
    if not isinstance(base_url, str) or not base_url.lower().startswith(("http://", "https://")):
        raise ValueError(f"base_url must be an http:// or https:// address, got {base_url!r}")
    return base_url.rstrip("/")


def post_json(url: str, payload: Any, api_key: str | None, timeout_s: float, max_bytes: int, fail: Fail) -> str:
    """The server's answer as text; ``fail(message, status)`` builds the error
    raised for anything else (``status`` is the HTTP status when there was one)."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), headers=headers, method="POST")
    deadline = time.monotonic() + timeout_s
    try:
        with _OPENER.open(req, timeout=timeout_s) as resp:
            data = _read(resp, url, deadline, timeout_s, max_bytes, fail)
    except _Redirected as e:
        raise fail(f"{url}: HTTP {e.code} redirect to {e.target} not followed (the key would go with it); "
                   "give the final address as base_url", e.code) from None
    except urllib.error.HTTPError as e:
        raise fail(f"{url}: HTTP {e.code}: {clip(_body(e))}", e.code) from e
    except (OSError, http.client.HTTPException) as e:  # refused, reset, timed out, cut short
        why = e.reason if isinstance(e, urllib.error.URLError) else f"{type(e).__name__}: {e}"
        raise fail(f"cannot get an answer from {url}: {why}", None) from e
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        raise fail(f"{url}: the answer is not UTF-8 text: {clip(data.decode(errors='replace'))}", None) from e


def _read(resp, url: str, deadline: float, timeout_s: float, max_bytes: int, fail: Fail) -> bytes:
    chunks, size = [], 0
    while True:
        if time.monotonic() > deadline:
            raise fail(f"{url}: no complete answer within timeout_s={timeout_s:g} s", None)
        chunk = resp.read1(1 << 16)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            raise fail(f"{url}: the answer passed max_response_bytes={max_bytes}", None)
        chunks.append(chunk)


def _body(e: urllib.error.HTTPError) -> str:
    try:
        return e.read(CLIP * 4).decode(errors="replace")
    except (OSError, http.client.HTTPException):
        return ""
