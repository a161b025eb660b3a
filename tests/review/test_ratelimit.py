"""Rate limits that hold and logins that cost little, over real HTTP:
a forwarded header counts only from a configured proxy, /search is limited, a malformed body
spends nothing, logins are throttled per address and per account, several processes share one
limit through the database, and password hashing is bounded and affordable."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from argon2 import PasswordHasher

from app import auth
from app.config import Settings
from app.db import store
from app.db.session import Database, open_database
from app.main import create_app
from app.ratelimit import DatabaseLimiter, RateLimiter, build_limiters, server_options
from tests.app.fake_llm import FakeLLMServer
from tests.review.conftest import PASSWORD, add_instructor
from tests.servers import ServedApp

QUESTION = {"question": "O que a ReLU devolve?", "k": 2}


@dataclass
class Served:
    url: str
    app: Any
    db: Database

    def limit(self, name: str, per_minute: float | None) -> None:
        """A fresh limiter ``name`` (``ask``, ``search``, ``login_address``, ...)."""
        setattr(self.app.state, f"{name}_limiter",
                None if per_minute is None else RateLimiter(per_minute))


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


def _served(sample_index: Any, llm: FakeLLMServer, folder: Path, **over: Any
            ) -> Iterator[Served]:
    settings = Settings(answer_strategy="direct", index_dir=sample_index.root,
                        llm_base_url=llm.base_url, llm_model="fake-model",
                        database_url=f"sqlite:///{folder}/aula.db", rate_limit_store="memory",
                        **over)
    db = open_database(settings.service.database_url)
    add_instructor(db)
    app = create_app(settings)
    with ServedApp(app, **server_options(settings)) as srv:
        yield Served(srv.url, app, db)
    db.close()


@pytest.fixture(scope="module")
def direct(sample_index, llm, tmp_path_factory) -> Iterator[Served]:  # type: ignore[no-untyped-def]
    """Served as ``aula serve`` serves it with no proxy configured."""
    yield from _served(sample_index, llm, tmp_path_factory.mktemp("direct"))


@pytest.fixture(scope="module")
def proxied(sample_index, llm, tmp_path_factory) -> Iterator[Served]:  # type: ignore[no-untyped-def]
    """Served behind a proxy on 127.0.0.1 that AULA_TRUSTED_PROXIES names."""
    yield from _served(sample_index, llm, tmp_path_factory.mktemp("proxied"),
                       trusted_proxies="127.0.0.1")


def from_(address: str) -> dict[str, str]:
    return {"X-Forwarded-For": address}


def login(site: Served, name: str, password: str, address: str | None = None
          ) -> httpx.Response:
    return httpx.post(site.url + "/review/login", json={"name": name, "password": password},
                      headers=from_(address) if address else None, timeout=30)


def test_a_forwarded_header_from_a_client_changes_nothing(direct: Served) -> None:
    direct.limit("ask", 2)
    codes = [httpx.post(direct.url + "/ask", json=QUESTION, headers=from_(f"10.0.0.{n}"),
                        timeout=60).status_code for n in range(1, 4)]
    assert codes == [200, 200, 429]


def test_behind_a_trusted_proxy_each_client_has_its_own_limit(proxied: Served) -> None:
    proxied.limit("ask", 2)
    first = [httpx.post(proxied.url + "/ask", json=QUESTION, headers=from_("10.0.0.1"),
                        timeout=60) for _ in range(3)]
    other = httpx.post(proxied.url + "/ask", json=QUESTION, headers=from_("10.0.0.2"),
                       timeout=60)
    assert [r.status_code for r in first] == [200, 200, 429]
    assert other.status_code == 200


def test_search_is_limited_per_client(direct: Served) -> None:
    direct.limit("search", 2)
    res = [httpx.get(direct.url + "/search", params={"q": "ReLU", "k": 2}) for _ in range(3)]
    assert [r.status_code for r in res] == [200, 200, 429]
    assert int(res[2].headers["Retry-After"]) >= 1 and "searches" in res[2].json()["detail"]


def test_malformed_questions_spend_no_quota(direct: Served) -> None:
    direct.limit("ask", 2)
    bad = [httpx.post(direct.url + "/ask", content=b"{not json",
                      headers={"Content-Type": "application/json"}),
           httpx.post(direct.url + "/ask", json={"question": ""}),
           httpx.post(direct.url + "/ask", json={"question": "ok?", "k": 0}),
           httpx.post(direct.url + "/ask/stream", json={"question": "   "})]
    assert all(r.status_code in (400, 422) for r in bad), [r.status_code for r in bad]
    good = [httpx.post(direct.url + "/ask", json=QUESTION, timeout=60) for _ in range(2)]
    assert [r.status_code for r in good] == [200, 200]


def test_logins_are_throttled_per_address(direct: Served) -> None:
    direct.limit("login_address", 3)
    direct.limit("login_account", None)
    tries = [login(direct, name, "errada-errada") for name in ("ana", "bruno", "carla")]
    blocked = login(direct, "ana", PASSWORD)  # even the right password waits now
    assert [r.status_code for r in tries] == [401, 401, 401]
    assert blocked.status_code == 429 and int(blocked.headers["Retry-After"]) >= 1


def test_logins_are_throttled_per_account_from_any_address(proxied: Served) -> None:
    proxied.limit("login_address", 3)
    proxied.limit("login_account", 3)
    tries = [login(proxied, "ana", "errada-errada", f"10.1.0.{n}") for n in range(1, 4)]
    blocked = login(proxied, "ANA ", "errada-errada", "10.1.0.9")
    other = login(proxied, "bruno", "errada-errada", "10.1.0.9")
    assert [r.status_code for r in tries] == [401, 401, 401]
    assert blocked.status_code == 429 and "conta" in blocked.json()["detail"]
    assert other.status_code == 401  # another account, from a fresh address


def test_right_passwords_spend_nothing(direct: Served) -> None:
    direct.limit("login_address", 2)
    direct.limit("login_account", 2)
    assert [login(direct, "ana", PASSWORD).status_code for _ in range(4)] == [200] * 4


def test_several_processes_share_one_limit_through_the_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/aula.db"
    db = open_database(url)
    try:
        here = DatabaseLimiter(db, 2, scope="ask")
        assert here.take("10.0.0.1") == 0.0
        # another server process, with its own connection, spends the second question
        code = ("import sys; from app.db.session import open_database; "
                "from app.ratelimit import DatabaseLimiter; "
                "print(DatabaseLimiter(open_database(sys.argv[1]), 2, scope='ask')"
                ".take('10.0.0.1'))")
        out = subprocess.run([sys.executable, "-c", code, url], capture_output=True, text=True,
                             check=True, cwd=Path(__file__).parents[2])
        assert float(out.stdout.strip()) == 0.0
        assert here.take("10.0.0.1") > 0  # both processes count toward one limit
        assert here.take("10.0.0.2") == 0.0
    finally:
        db.close()


def test_several_workers_pick_the_database_limit(db: Database,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEB_CONCURRENCY", "4")  # read with the other settings
    shared = build_limiters(Settings(ask_rate_per_minute=30, search_rate_per_minute=0), db)
    monkeypatch.setenv("WEB_CONCURRENCY", "1")
    settings = Settings(ask_rate_per_minute=30, search_rate_per_minute=0)
    alone = build_limiters(settings, db)
    assert isinstance(shared["ask"], DatabaseLimiter) and shared["search"] is None
    assert isinstance(alone["ask"], RateLimiter)
    forced = build_limiters(settings.model_copy(update={"rate_limit_store": "database"}), db)
    assert isinstance(forced["login_account"], DatabaseLimiter)


# --- login cost ---------------------------------------------------------------------------


def test_new_hashes_use_parameters_a_small_server_affords() -> None:
    h = auth.hash_password(PASSWORD)
    assert h.startswith("$argon2id$v=19$m=19456,t=2,p=1$"), h


def test_old_hashes_still_verify_and_are_upgraded_at_login(db: Database) -> None:
    old = PasswordHasher().hash(PASSWORD)  # argon2-cffi's default: 64 MiB, 3 passes, 4 lanes
    assert "m=65536" in old
    with db.write() as s:
        store.add_user(s, "ana", "instructor", old, auth.now())
    assert auth.login(db, "ana", PASSWORD, timedelta(minutes=5)) is not None
    with db.read() as s:
        found = store.find_user(s, "ana")
    assert found is not None and found[1].startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    assert auth.login(db, "ana", PASSWORD, timedelta(minutes=5)) is not None


def test_concurrent_failed_logins_hash_a_bounded_number_at_once(direct: Served) -> None:
    direct.limit("login_address", None)
    direct.limit("login_account", None)
    auth.hashing.peak = 0
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda n: login(direct, f"user{n % 3}", "errada-errada")
                              .status_code, range(16)))
    assert codes == [401] * 16
    hashes = direct.app.state.services.settings.security.password_hashes
    assert 1 <= auth.hashing.peak <= hashes == 2


def test_a_login_that_waits_too_long_for_hashing_is_refused_not_queued() -> None:
    slots = auth.HashSlots(size=1, wait=0.05)
    inside, leave = threading.Event(), threading.Event()

    def hold() -> bool:
        inside.set()
        leave.wait(10)
        return True

    with ThreadPoolExecutor(1) as pool:
        held = pool.submit(slots.run, hold)
        inside.wait(10)
        with pytest.raises(auth.HashingBusy):
            slots.run(lambda: True)
        leave.set()
        assert held.result() is True
    assert slots.run(lambda: True) is True
