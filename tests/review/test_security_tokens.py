"""API tokens expire and can be revoked; accounts can be removed and their password changed,
from the library and from ``aula users`` as an administrator runs it."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from app import auth
from app.db import store
from app.db.session import Database, open_database
from tests.review.conftest import PASSWORD, add_instructor
from tests.review.test_cli import run


def _user_of(db: Database, token: str, at: object = None) -> str | None:
    with db.read() as s:
        u = store.token_user(s, auth.digest(token), at or auth.now())  # type: ignore[arg-type]
    return None if u is None else u.name


def test_a_token_is_refused_from_its_expiry_on(db: Database) -> None:
    add_instructor(db)
    expires = auth.now() + timedelta(days=2)
    token = auth.issue_token(db, "ana", expires)
    assert _user_of(db, token) == "ana"
    assert _user_of(db, token, expires - timedelta(seconds=1)) == "ana"
    assert _user_of(db, token, expires) is None
    default = auth.issue_token(db, "ana")  # the default lifetime is finite too
    assert _user_of(db, default, auth.now() + auth.TOKEN_LIFETIME + timedelta(1)) is None


def test_revoke_ends_tokens_and_sessions_and_one_token_alone(db: Database) -> None:
    add_instructor(db)
    add_instructor(db, "bia")
    one, two, other = (auth.issue_token(db, n) for n in ("ana", "ana", "bia"))
    session = auth.login(db, "ana", PASSWORD, timedelta(hours=1))
    assert session is not None
    assert auth.revoke(db, "ana", one) == (1, 0)
    assert _user_of(db, one) is None and _user_of(db, two) == "ana"
    assert auth.revoke(db, "ana") == (1, 1)
    assert _user_of(db, two) is None and _user_of(db, other) == "bia"
    with db.read() as s:
        assert store.session_user(s, auth.digest(session[0]), auth.now()) is None
    with pytest.raises(ValueError, match="no user named 'carla'"):
        auth.revoke(db, "carla")


def test_password_change_ends_sessions_and_remove_ends_the_account(db: Database) -> None:
    add_instructor(db)
    token = auth.issue_token(db, "ana")
    session = auth.login(db, "ana", PASSWORD, timedelta(hours=1))
    assert session is not None
    assert auth.change_password(db, "ana", "uma-senha-nova") == 1
    assert auth.login(db, "ana", PASSWORD, timedelta(hours=1)) is None
    assert auth.login(db, "ana", "uma-senha-nova", timedelta(hours=1)) is not None
    with db.read() as s:
        assert store.session_user(s, auth.digest(session[0]), auth.now()) is None
    with pytest.raises(ValueError, match="8 characters"):
        auth.change_password(db, "ana", "curta")
    auth.remove_user(db, "ana")
    assert _user_of(db, token) is None
    assert auth.login(db, "ana", "uma-senha-nova", timedelta(hours=1)) is None
    with db.read() as s:
        assert store.list_users(s) == []


def test_the_cli_issues_expiring_tokens_revokes_removes_and_changes_passwords(
    tmp_path,  # type: ignore[no-untyped-def]
) -> None:
    url = f"sqlite:///{tmp_path}/aula.db"
    assert run(["users", "add", "ana", "--password-stdin"], url, PASSWORD + "\n").returncode == 0
    r = run(["users", "token", "ana", "--days", "1", "--json"], url)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    db = open_database(url)
    try:
        lasts = auth.now() + timedelta(days=1)
        assert _user_of(db, got["token"]) == "ana"
        assert _user_of(db, got["token"], lasts + timedelta(minutes=1)) is None
        assert got["expires_at"][:10] == lasts.date().isoformat()

        r = run(["users", "revoke", "ana", "--json"], url)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["tokens"] == 1 and _user_of(db, got["token"]) is None
        wrong = run(["users", "revoke", "ana", "--token-stdin"], url, "aula_nao-existe\n")
        assert wrong.returncode == 1 and "not a live token" in wrong.stderr

        r = run(["users", "password", "ana", "--password-stdin"], url, "outra-senha-boa\n")
        assert r.returncode == 0, r.stderr
        assert auth.login(db, "ana", "outra-senha-boa", timedelta(hours=1)) is not None
        short = run(["users", "password", "ana", "--password-stdin"], url, "curta\n")
        assert short.returncode == 1 and "8 characters" in short.stderr

        assert run(["users", "remove", "ana"], url).returncode == 0
        gone = run(["users", "remove", "ana"], url)
        assert gone.returncode == 1 and "no user named 'ana'" in gone.stderr
    finally:
        db.close()
