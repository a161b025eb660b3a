"""Per-client token buckets for ``/ask``, ``/search`` and the review login.

Each client may burst up to ``per_minute`` requests and then gets one more every
``60 / per_minute`` seconds; beyond that the route answers 429 with ``Retry-After``. A route
takes its token only once its input is valid, so a malformed request spends nothing.

The client is the connection's address. uvicorn replaces it with the ``X-Forwarded-For`` one
only when the connection comes from a proxy named in ``AULA_TRUSTED_PROXIES``
(``server_options``); a header alone changes nothing.

One server process keeps the buckets in memory (``RateLimiter``). Several processes share them
through the database's ``rate_limits`` table (``DatabaseLimiter``), so the limit is the same
however many workers there are: ``AULA_RATE_LIMIT_STORE=auto`` picks the database when it sees
more than one worker (``several_workers``), ``database`` or ``memory`` force either.
"""

from __future__ import annotations

import hashlib
import logging
import math
import multiprocessing
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from fastapi import HTTPException, Request
from starlette.concurrency import run_in_threadpool

if TYPE_CHECKING:
    from app.config import Settings
    from app.db.session import Database

log = logging.getLogger(__name__)

KEY_CHARS = 128  # the rate_limits.key column
MESSAGES = {
    "ask": "too many questions from this address; try again in {s} s",
    "search": "too many searches from this address; try again in {s} s",
    "login_address": "muitas tentativas de login deste endereço; tente de novo em {s} s",
    "login_account": "muitas tentativas de login nesta conta; tente de novo em {s} s",
}


class Limiter(Protocol):
    def take(self, key: str, cost: float = 1.0) -> float:
        """Spend ``cost`` tokens of ``key``'s bucket: 0 when allowed, else the seconds until
        there are enough (nothing is spent then). A negative cost gives tokens back."""
        ...


class RateLimiter:
    """Token buckets in this process's memory."""

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

    def take(self, key: str, cost: float = 1.0) -> float:
        with self._lock:
            t = self.clock()
            tokens, last = self._buckets.get(key, (self.capacity, t))
            tokens, wait = _spend(tokens, t - last, cost, self.rate, self.capacity)
            self._buckets[key] = (tokens, t)
            if wait == 0.0 and len(self._buckets) > self.max_clients:
                self._forget_full(t)
            return wait

    def _forget_full(self, t: float) -> None:
        """Drop the clients whose bucket has refilled: they are as good as new."""
        full = [k for k, (tok, last) in self._buckets.items()
                if tok + (t - last) * self.rate >= self.capacity]
        for k in full:
            del self._buckets[k]


def _spend(tokens: float, elapsed: float, cost: float, rate: float, capacity: float
           ) -> tuple[float, float]:
    """The bucket after ``elapsed`` seconds of refill and the spend: (tokens, wait)."""
    tokens = min(capacity, tokens + max(0.0, elapsed) * rate)
    if tokens >= cost:
        return min(capacity, tokens - cost), 0.0
    return tokens, (cost - tokens) / rate


class DatabaseLimiter:
    """Token buckets in the database, shared by every server process that uses it.

    One short write transaction a request (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: the row
    locked with ``FOR UPDATE``). While the database cannot be reached the buckets of this
    process's memory stand in, so a database fault never turns questions away.
    """

    def __init__(self, db: Database, per_minute: float, *, scope: str,
                 burst: float | None = None, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.scope = scope
        self.clock = clock
        self.fallback = RateLimiter(per_minute, burst=burst, clock=clock)
        self.rate = self.fallback.rate
        self.capacity = self.fallback.capacity
        self._takes = 0

    def take(self, key: str, cost: float = 1.0) -> float:
        from sqlalchemy.exc import IntegrityError, SQLAlchemyError

        from app.db.session import DatabaseUnavailable

        try:
            try:
                return self._take(_row_key(self.scope, key), cost)
            except IntegrityError:  # another process added the same new bucket first
                return self._take(_row_key(self.scope, key), cost)
        except (DatabaseUnavailable, SQLAlchemyError) as exc:
            log.warning("rate limit %s: database unavailable, this process's limit stands in "
                        "(%s)", self.scope, exc)
            return self.fallback.take(key, cost)

    def _take(self, key: str, cost: float) -> float:
        from sqlalchemy import delete

        from app.db.models import RateBucket

        t = self.clock()
        with self.db.write() as s:
            row = s.get(RateBucket, key, with_for_update=True)
            if row is None:
                tokens, wait = _spend(self.capacity, 0.0, cost, self.rate, self.capacity)
                s.add(RateBucket(key=key, tokens=tokens, updated=t))
            else:
                tokens, wait = _spend(row.tokens, t - row.updated, cost, self.rate,
                                      self.capacity)
                row.tokens, row.updated = tokens, t
            self._takes += 1
            if self._takes % 500 == 0:  # forget buckets that have refilled: as good as new
                s.execute(delete(RateBucket).where(
                    RateBucket.key.like(f"{self.scope}:%"),
                    RateBucket.updated < t - self.capacity / self.rate))
        return wait


def _row_key(scope: str, key: str) -> str:
    full = f"{scope}:{key}"
    if len(full) <= KEY_CHARS:
        return full
    return f"{scope}:sha256:{hashlib.sha256(key.encode()).hexdigest()}"


def several_workers(settings: Settings) -> bool:
    """Whether this process is one of several serving the app: uvicorn ``--workers`` (its
    workers are multiprocessing children), gunicorn, or ``WEB_CONCURRENCY`` above 1."""
    return (settings.scale.web_concurrency > 1 or multiprocessing.parent_process() is not None
            or settings.scale.server_software.startswith("gunicorn"))


def build_limiters(settings: Settings, db: Database | None) -> dict[str, Limiter | None]:
    """The limiters the settings ask for, by name (None where the rate is 0)."""
    store = settings.scale.rate_limit_store
    shared = db is not None and (
        store == "database" or (store == "auto" and several_workers(settings)))
    rates = {"ask": settings.scale.ask_rate_per_minute,
             "search": settings.scale.search_rate_per_minute,
             "login_address": settings.security.login_rate_per_minute,
             "login_account": settings.security.login_rate_per_minute}
    out: dict[str, Limiter | None] = {}
    for name, rate in rates.items():
        if rate <= 0:
            out[name] = None
        elif shared and db is not None:
            out[name] = DatabaseLimiter(db, rate, scope=name)
        else:
            out[name] = RateLimiter(rate)
    if shared:
        log.info("rate limits shared through the database (%s)", store)
    return out


def install_limiters(app: Any, settings: Settings, db: Database | None) -> None:
    """Put the limiters on ``app.state`` as ``ask_limiter``, ``search_limiter``, ..."""
    for name, limiter in build_limiters(settings, db).items():
        setattr(app.state, f"{name}_limiter", limiter)


def server_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's proxy options: believe ``X-Forwarded-For`` / ``-Proto`` only from the
    configured proxies (uvicorn's own default believes 127.0.0.1)."""
    trusted = settings.security.trusted_proxies.strip()
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": trusted or None}


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def spend(request: Request, name: str, key: str | None = None, cost: float = 1.0) -> None:
    """Spend a token of limiter ``name`` for ``key`` (the client's address by default);
    429 with ``Retry-After`` when its bucket is empty. Blocking: call it from a thread."""
    limiter: Limiter | None = getattr(request.app.state, f"{name}_limiter", None)
    if limiter is None:
        return
    wait = limiter.take(client_address(request) if key is None else key, cost)
    if wait > 0:
        seconds = max(1, math.ceil(wait))
        raise HTTPException(429, MESSAGES[name].format(s=seconds),
                            headers={"Retry-After": str(seconds)})


async def spend_async(request: Request, name: str) -> None:
    """``spend`` from an async route (a database limiter does I/O)."""
    await run_in_threadpool(spend, request, name)
