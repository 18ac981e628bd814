"""Per-client request limits for the REST server.

A token bucket per client (its bearer token, or its address when auth is
off): ``rate`` requests a second on average, bursts of up to ``burst``.
Time is passed in, so the limiter is a pure object tests can drive.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass


@dataclass
class _Bucket:
    tokens: float
    at: float


def check_rate(rate: float, burst: int) -> None:
    """NaN passed "rate <= 0" and never limited."""
    if not (math.isfinite(rate) and rate > 0) or burst < 1:
        raise ValueError("rate must be a finite number > 0 and burst >= 1")


class RateLimiter:
    def __init__(self, rate: float, burst: int) -> None:
        check_rate(rate, burst)
        self.rate, self.burst = float(rate), int(burst)
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def take(self, client: str, now: float) -> float:
        """0.0 when the request may go ahead (one token spent), else the
        seconds until the client's next token (the Retry-After)."""
        with self._lock:
            b = self._buckets.get(client)
            if b is None:
                b = self._buckets[client] = _Bucket(float(self.burst), now)
            b.tokens = min(float(self.burst), b.tokens + (now - b.at) * self.rate)
            b.at = now
            if b.tokens >= 1.0:
                b.tokens -= 1.0
                return 0.0
            return (1.0 - b.tokens) / self.rate
