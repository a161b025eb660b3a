"""A per-client token bucket for ``/ask``: in memory, one process, no dependencies.

Each client (IP address) may burst up to ``per_minute`` questions and then gets one more every
``60 / per_minute`` seconds; beyond that ``/ask`` answers 429 with ``Retry-After``.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, HTTPException, Request


class RateLimiter:
    """``take(key)`` -> 0 when allowed, else the seconds until the next token."""

    def __init__(
        self,
        per_minute: float,
        *,
        burst: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_clients: int = 10_000,
    ) -> None:
        if per_minute <= 0:
            raise ValueError("per_minute must be positive (or use no limiter)")
        self.rate = per_minute / 60.0
        self.capacity = float(burst if burst is not None else max(1.0, per_minute))
        self.clock = clock
        self.max_clients = max_clients
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, last time)
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        with self._lock:
            t = self.clock()
            tokens, last = self._buckets.get(key, (self.capacity, t))
            tokens = min(self.capacity, tokens + (t - last) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, t)
                if len(self._buckets) > self.max_clients:
                    self._forget_full(t)
                return 0.0
            self._buckets[key] = (tokens, t)
            return (1.0 - tokens) / self.rate

    def _forget_full(self, t: float) -> None:
        """Drop the clients whose bucket has refilled: they are as good as new."""
        full = [k for k, (tok, last) in self._buckets.items()
                if tok + (t - last) * self.rate >= self.capacity]
        for k in full:
            del self._buckets[k]


def limit_ask(request: Request) -> None:
    """The ``/ask`` dependency: 429 with ``Retry-After`` once a client's bucket is empty."""
    limiter: RateLimiter | None = getattr(request.app.state, "ask_limiter", None)
    if limiter is None:
        return
    client = request.client.host if request.client else "unknown"
    wait = limiter.take(client)
    if wait > 0:
        seconds = max(1, math.ceil(wait))
        raise HTTPException(
            429,
            f"too many questions from this address; try again in {seconds} s",
            headers={"Retry-After": str(seconds)},
        )


AskLimit = Annotated[None, Depends(limit_ask)]
