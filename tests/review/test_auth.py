"""Passwords, sessions that expire, API tokens, and the /ask rate limiter."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

from app import auth
from app.db import store
from app.db.session import Database
from app.ratelimit import RateLimiter
from corpus.errors import InputError
from tests.review.conftest import PASSWORD, add_instructor


def test_passwords_are_argon2_hashes_and_too_short_ones_are_refused() -> None:
    h = auth.hash_password(PASSWORD)
    assert h.startswith("$argon2") and PASSWORD not in h
    assert auth.verify_password(h, PASSWORD) and not auth.verify_password(h, PASSWORD + "x")
    assert not auth.verify_password("not a hash", PASSWORD)
    with pytest.raises(ValueError, match="8 characters"):
        auth.hash_password("curta")


def test_a_login_lasts_its_lifetime_and_no_longer(db: Database) -> None:
    add_instructor(db)
    assert auth.login(db, "ana", "errada", timedelta(minutes=5)) is None
    assert auth.login(db, "nobody", PASSWORD, timedelta(minutes=5)) is None
    got = auth.login(db, "ana", PASSWORD, timedelta(minutes=5))
    assert got is not None
    token, csrf, expires = got
    with db.read() as s:
        live = store.session_user(s, auth.digest(token), auth.now())
        late = store.session_user(s, auth.digest(token), expires + timedelta(seconds=1))
        raw = store.session_user(s, token, auth.now())  # the table keeps only the digest
    assert live is not None and live[0].name == "ana" and live[1] == csrf
    assert late is None and raw is None
    auth.logout(db, token)
    with db.read() as s:
        assert store.session_user(s, auth.digest(token), auth.now()) is None


def test_api_tokens_name_their_user(db: Database) -> None:
    add_instructor(db)
    token = auth.issue_token(db, "ana")
    assert token.startswith(auth.TOKEN_PREFIX)
    with db.read() as s:
        user = store.token_user(s, auth.digest(token), auth.now())
    assert user is not None and user.name == "ana"
    with pytest.raises(ValueError, match="no user named 'bruno'"):
        auth.issue_token(db, "bruno")


def test_users_are_unique_and_roles_known(db: Database) -> None:
    add_instructor(db)
    with pytest.raises(store.UserExists), db.write() as s:
        store.add_user(s, "ana", "instructor", "h", auth.now())
    with pytest.raises(ValueError, match="role"), db.write() as s:
        store.add_user(s, "carla", "admin", "h", auth.now())


def test_the_rate_limiter_allows_a_burst_then_one_per_interval() -> None:
    t = [0.0]
    limiter = RateLimiter(6, clock=lambda: t[0])  # 6 a minute: one every 10 s
    assert [limiter.take("a") for _ in range(6)] == [0.0] * 6
    wait = limiter.take("a")
    assert wait == pytest.approx(10.0)
    assert limiter.take("b") == 0.0  # per client
    t[0] += 10.0
    assert limiter.take("a") == 0.0 and limiter.take("a") > 0


def test_hashes_run_on_the_same_few_workers_whoever_asks() -> None:
    """Each thread that hashes keeps a 19 MiB argon2 buffer in its malloc arena: sixteen
    request threads hashing made sixteen buffers for good. The hashes run on the slots' own
    workers instead, so the buffers are those of ``size`` threads, reused."""
    slots = auth.HashSlots(size=2, wait=30)
    callers: set[int] = set()

    def hash_once(n: int) -> int:
        callers.add(threading.get_ident())
        return slots.run(lambda: (time.sleep(0.01), threading.get_ident())[1])

    with ThreadPoolExecutor(16) as pool:
        workers = set(pool.map(hash_once, range(64)))
    assert len(callers) > 2 and 1 <= len(workers) <= 2 and not workers & callers
    assert slots.peak <= 2
    assert auth.verify_password(auth.hash_password(PASSWORD), PASSWORD)


def test_a_token_lifetime_past_the_calendar_is_refused() -> None:
    for days in (1e9, 3e6, float("inf"), float("nan"), 0.0, -1.0):
        with pytest.raises(InputError, match="36500"):
            auth.token_expiry(days)
    assert auth.token_expiry(36_500).year > auth.now().year + 99
