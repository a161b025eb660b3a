"""Who may review: password hashing (argon2), login sessions that expire, CSRF tokens, API
bearer tokens for scripts, and the FastAPI dependencies that check them.

Students ask without an account; every review route depends on ``InstructorDep``. A browser
proves itself with the session cookie (HttpOnly, SameSite=Strict) and, on anything that
writes, the session's CSRF token in the ``X-CSRF-Token`` header (double submit: the page reads
it from the login response, a cross-site form can neither read it nor set the header). A script
sends ``Authorization: Bearer <token>`` and needs no CSRF token (browsers never add that
header by themselves). Tokens and session ids are random; the database keeps only SHA-256.
"""

from __future__ import annotations

import ctypes
import hashlib
import hmac
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, TypeVar

from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError
from fastapi import Depends, HTTPException, Request

from app.db import store
from app.db.session import Database, DatabaseUnavailable
from corpus.errors import InputError

T = TypeVar("T")

SESSION_COOKIE = "aula_session"
CSRF_HEADER = "X-CSRF-Token"
TOKEN_PREFIX = "aula_"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
INSTRUCTOR = "instructor"

# argon2id at OWASP's first recommended setting: 19 MiB, 2 passes, 1 lane. A hash takes one
# core about 60 ms and 19 MiB; argon2-cffi's default (64 MiB, 3 passes, 4 lanes) made eight
# failed logins cost half a GiB. Hashes made with other parameters still verify (argon2 keeps
# them in the hash) and are rehashed with these at the next login.
ARGON2_MEMORY_KIB = 19 * 1024
ARGON2_TIME_COST = 2
ARGON2_PARALLELISM = 1
_hasher = PasswordHasher(time_cost=ARGON2_TIME_COST, memory_cost=ARGON2_MEMORY_KIB,
                         parallelism=ARGON2_PARALLELISM, type=Type.ID)
# Verified against when the user does not exist, so a wrong name costs as long as a wrong
# password and timing does not tell which names exist.
_DUMMY_HASH = _hasher.hash("not a password")


class HashingBusy(RuntimeError):
    """Every hashing slot stayed busy for the whole wait: the login may be tried again."""


class HashSlots:
    """At most ``size`` argon2 computations at once in this process, each run on one of
    ``size`` long-lived worker threads; a caller waits up to ``wait`` seconds for a slot, then
    ``HashingBusy``.

    The workers are what keeps memory bounded: a hash allocates its 19 MiB in the calling
    thread's malloc arena, and an arena keeps that buffer after the hash; run on the server's
    many request threads, every one of them kept its own. Run on the same few workers, the
    buffers are reused, and what else a hash left free is handed back to the system after it
    (glibc's ``malloc_trim``), so failed logins cost ``size`` buffers for good and no more."""

    def __init__(self, size: int = 2, wait: float = 5.0) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self.resize(size, wait)
        self.peak = 0  # the most hashes that ran at once (observed by the tests)
        self._running = 0
        self._count = threading.Lock()

    def resize(self, size: int, wait: float) -> None:
        old = self._pool
        self.size, self.wait = size, wait
        self._slots = threading.BoundedSemaphore(size)
        self._pool = ThreadPoolExecutor(size, thread_name_prefix="argon2")
        if old is not None:
            old.shutdown(wait=False)  # hashes running there finish; its workers then exit

    def run(self, fn: Callable[[], T]) -> T:
        slots, pool = self._slots, self._pool
        assert pool is not None
        if not slots.acquire(timeout=self.wait):
            raise HashingBusy(f"password hashing busy for {self.wait:g} s")
        try:
            with self._count:
                self._running += 1
                self.peak = max(self.peak, self._running)
            return pool.submit(_then_trim, fn).result()
        finally:
            with self._count:
                self._running -= 1
            slots.release()


def _malloc_trim() -> Callable[[], object]:
    """glibc's ``malloc_trim(0)``: free heap memory back to the system (a no-op elsewhere)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS)
        return lambda: None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return lambda: trim(0)


_trim = _malloc_trim()


def _then_trim(fn: Callable[[], T]) -> T:
    try:
        return fn()
    finally:
        _trim()  # about 0.2 ms, against a 60 ms hash


hashing = HashSlots()


def now() -> datetime:
    return datetime.now(UTC)


def hash_password(password: str) -> str:
    if len(password) < 8:
        raise ValueError("password: use at least 8 characters")
    return hashing.run(lambda: _hasher.hash(password))


def verify_password(password_hash: str, password: str) -> bool:
    def verify() -> bool:
        try:
            return _hasher.verify(password_hash, password)
        except (VerificationError, InvalidHashError):
            return False

    return hashing.run(verify)


def new_secret(prefix: str = "") -> str:
    return prefix + secrets.token_urlsafe(32)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def same(a: str | None, b: str | None) -> bool:
    return bool(a) and bool(b) and hmac.compare_digest(str(a), str(b))


@dataclass(frozen=True)
class Principal:
    """Who is calling: the user, and how they proved it (``csrf`` is set for sessions)."""

    user: store.UserInfo
    via: str
    csrf: str | None = None

    @property
    def name(self) -> str:
        return self.user.name


# --- operations (no FastAPI) ------------------------------------------------------------------


def login(
    db: Database, name: str, password: str, lifetime: timedelta
) -> tuple[str, str, datetime] | None:
    """A new session for a right name and password: (cookie value, CSRF token, expiry)."""
    with db.read() as s:
        found = store.find_user(s, name.strip())
    if found is None:
        verify_password(_DUMMY_HASH, password)
        return None
    user, pw_hash = found
    if not verify_password(pw_hash, password):
        return None
    token, csrf = new_secret(), new_secret()
    rehashed = (hashing.run(lambda: _hasher.hash(password))
                if _hasher.check_needs_rehash(pw_hash) else None)
    with db.write() as s:
        if rehashed is not None:  # made with older parameters: upgraded now
            store.set_password(s, user.name, rehashed)
        expires = store.start_session(s, user.id, digest(token), csrf, now(), lifetime)
    return token, csrf, expires


def logout(db: Database, token: str) -> None:
    with db.write() as s:
        store.end_session(s, digest(token))


TOKEN_LIFETIME = timedelta(days=90)
MAX_TOKEN_DAYS = 36_500
"""The longest lifetime a token may be given (100 years; dates end at year 9999)."""


def token_expiry(days: float, start: datetime | None = None) -> datetime:
    """When a token given ``days`` of life from ``start`` (default now) expires; a lifetime
    outside 0..``MAX_TOKEN_DAYS`` is an ``InputError`` naming the limit."""
    if not 0 < days <= MAX_TOKEN_DAYS:
        raise InputError(f"days: {days:g} is outside the lifetime a token may have "
                         f"(more than 0, at most {MAX_TOKEN_DAYS})")
    return (start or now()) + timedelta(days=days)


def issue_token(db: Database, name: str, expires: datetime | None = None) -> str:
    """A new API token for ``name`` (shown once; only its digest is kept), refused from
    ``expires`` on (default: ``TOKEN_LIFETIME`` from now)."""
    token = new_secret(TOKEN_PREFIX)
    t = now()
    with db.write() as s:
        user = _user(s, name)
        store.add_token(s, user.id, digest(token), t, expires or t + TOKEN_LIFETIME)
    return token


def _user(s: Any, name: str) -> store.UserInfo:
    found = store.find_user(s, name)
    if found is None:
        raise InputError(f"user: no user named {name!r} (create it with `aula users add`)")
    return found[0]


def revoke(db: Database, name: str, token: str | None = None) -> tuple[int, int]:
    """Revoke ``name``'s API tokens (only ``token`` when given; else every token and every
    login session too): returns (tokens revoked, sessions ended)."""
    with db.write() as s:
        user = _user(s, name)
        tokens = store.revoke_tokens(s, user.id, None if token is None else digest(token))
        sessions = 0 if token is not None else store.end_sessions(s, user.id)
    return tokens, sessions


def remove_user(db: Database, name: str) -> None:
    """Delete the account, its sessions and tokens; its annotations keep the name."""
    with db.write() as s:
        store.remove_user(s, _user(s, name).id)


def change_password(db: Database, name: str, password: str) -> int:
    """Set a new password and end every login session of ``name`` (its API tokens stay:
    revoke them apart); returns how many sessions ended."""
    try:
        hashed = hash_password(password)
    except ValueError as exc:  # the password rule
        raise InputError(str(exc)) from None
    with db.write() as s:
        user = _user(s, name)
        store.set_password(s, user.name, hashed)
        return store.end_sessions(s, user.id)


def identify(db: Database, request: Request) -> Principal | None:
    """The caller, from a bearer token or a live session cookie; None for anonymous."""
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        with db.read() as s:
            user = store.token_user(s, digest(header[7:].strip()), now())
        return None if user is None else Principal(user, "token")
    cookie = request.cookies.get(SESSION_COOKIE)
    if not cookie:
        return None
    with db.read() as s:
        found = store.session_user(s, digest(cookie), now())
    return None if found is None else Principal(found[0], "session", csrf=found[1])


# --- FastAPI dependencies ---------------------------------------------------------------------


def get_database(request: Request) -> Database:
    db = getattr(request.app.state.services, "db", None)
    if db is None:
        raise DatabaseUnavailable("no database configured")
    return db  # type: ignore[no-any-return]


DatabaseDep = Annotated[Database, Depends(get_database)]


def throttled_login(
    request: Request, db: Database, name: str, password: str, lifetime: timedelta
) -> tuple[str, str, datetime] | None:
    """``login`` behind the login limits: every try spends a token of the caller's address
    and one of the account, given back when the password was right (so only failures count);
    429 with Retry-After when either is spent; 503 when the hashing slots stay busy."""
    from app.ratelimit import spend

    spend(request, "login_address")
    account = name.strip().casefold()
    spend(request, "login_account", account)
    try:
        got = login(db, name, password, lifetime)
    except HashingBusy as exc:  # not a failed try: nothing spent
        spend(request, "login_address", cost=-1.0)
        spend(request, "login_account", account, cost=-1.0)
        raise HTTPException(503, "muitos logins ao mesmo tempo; tente de novo em alguns "
                                 "segundos", headers={"Retry-After": "5"}) from exc
    if got is not None:
        spend(request, "login_address", cost=-1.0)
        spend(request, "login_account", account, cost=-1.0)
    return got


def require_instructor(request: Request, db: DatabaseDep) -> Principal:
    """401 without credentials, 403 for another role or a write without the CSRF token."""
    who = identify(db, request)
    if who is None:
        raise HTTPException(
            401, "login required: instructors only (session cookie or bearer token)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if who.user.role != INSTRUCTOR:
        raise HTTPException(403, "instructors only")
    if who.via == "session" and request.method not in SAFE_METHODS:
        if not same(request.headers.get(CSRF_HEADER), who.csrf):
            raise HTTPException(403, f"CSRF token missing or wrong (send {CSRF_HEADER})")
    return who


InstructorDep = Annotated[Principal, Depends(require_instructor)]
