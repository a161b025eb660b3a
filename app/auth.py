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

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from fastapi import Depends, HTTPException, Request

from app.db import store
from app.db.session import Database, DatabaseUnavailable

SESSION_COOKIE = "aula_session"
CSRF_HEADER = "X-CSRF-Token"
TOKEN_PREFIX = "aula_"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
INSTRUCTOR = "instructor"

_hasher = PasswordHasher()
# Verified against when the user does not exist, so a wrong name costs as long as a wrong
# password and timing does not tell which names exist.
_DUMMY_HASH = _hasher.hash("not a password")


def now() -> datetime:
    return datetime.now(UTC)


def hash_password(password: str) -> str:
    if len(password) < 8:
        raise ValueError("password: use at least 8 characters")
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


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
    with db.write() as s:
        if _hasher.check_needs_rehash(pw_hash):
            store.set_password(s, user.name, _hasher.hash(password))
        expires = store.start_session(s, user.id, digest(token), csrf, now(), lifetime)
    return token, csrf, expires


def logout(db: Database, token: str) -> None:
    with db.write() as s:
        store.end_session(s, digest(token))


def issue_token(db: Database, name: str) -> str:
    """A new API token for ``name`` (shown once; only its digest is kept)."""
    token = new_secret(TOKEN_PREFIX)
    with db.write() as s:
        found = store.find_user(s, name)
        if found is None:
            raise ValueError(f"user: no user named {name!r} (create it with `aula users add`)")
        store.add_token(s, found[0].id, digest(token), now())
    return token


def identify(db: Database, request: Request) -> Principal | None:
    """The caller, from a bearer token or a live session cookie; None for anonymous."""
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        with db.read() as s:
            user = store.token_user(s, digest(header[7:].strip()))
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
