"""Security over real HTTP: headers on every response, pages without inline script, API docs
only when turned on, bounded request bodies and lists, Secure cookies, limits in the spec."""

from __future__ import annotations

import http.client
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.db.session import open_database
from app.main import create_app
from tests.app.fake_llm import FakeLLMServer
from tests.review.conftest import PASSWORD, add_instructor
from tests.servers import ServedApp

LIMIT = 4096


@pytest.fixture(scope="module")
def service(sample_index, tmp_path_factory) -> Iterator[str]:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path_factory.mktemp('security-db')}/aula.db"
    with FakeLLMServer() as llm:
        settings = Settings(
            answer_strategy="direct", index_dir=sample_index.root, llm_base_url=llm.base_url,
            llm_model="fake-model", llm_retries=0, database_url=url, ask_rate_per_minute=0,
            max_body_bytes=LIMIT, secure_cookies=True,
        )
        db = open_database(url)
        add_instructor(db)
        with ServedApp(create_app(settings)) as srv:
            yield srv.url
        db.close()


@pytest.mark.parametrize("path", ["/", "/review", "/health", "/static/app.js", "/openapi.json",
                                  "/nao-existe"])
def test_every_response_carries_the_security_headers(service: str, path: str) -> None:
    r = httpx.get(service + path)
    csp = r.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp
    assert "unsafe-inline" not in csp and "default-src 'none'" in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "no-referrer"


@pytest.mark.parametrize("path", ["/", "/review"])
def test_pages_hold_no_inline_script_or_style(service: str, path: str) -> None:
    html = httpx.get(service + path).text
    scripts = re.findall(r"<script\b[^>]*>", html)
    assert scripts and all("src=" in s for s in scripts)
    assert not re.search(r"<script\b[^>]*>\s*[^<\s]", html)  # nothing between the tags
    assert not re.search(r"\son[a-z]+\s*=", html) and "style=" not in html
    assert "<style" not in html and "javascript:" not in html


def test_api_docs_are_off_by_default_and_the_spec_stays(service: str) -> None:
    assert httpx.get(service + "/docs").status_code == 404
    assert httpx.get(service + "/redoc").status_code == 404
    assert httpx.get(service + "/openapi.json").status_code == 200


def test_api_docs_when_turned_on() -> None:
    client = TestClient(create_app(Settings(api_docs=True)))  # no lifespan: nothing loads
    r = client.get("/docs")
    assert r.status_code == 200 and "swagger" in r.text.lower()
    assert "cdn.jsdelivr.net" in r.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]


def _raw_post(service: str, path: str, chunks: list[bytes], headers: dict[str, str]) -> Any:
    """POST ``chunks`` as they are (chunked unless Content-Length is given)."""
    host, port = service.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.putrequest("POST", path)
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.endheaders()
        for c in chunks:
            if "Content-Length" in headers:
                conn.send(c)
            else:
                conn.send(b"%x\r\n%s\r\n" % (len(c), c))
        if "Content-Length" not in headers:
            conn.send(b"0\r\n\r\n")
        r = conn.getresponse()
        return r.status, r.read()
    except (BrokenPipeError, ConnectionResetError):
        return 413, b""  # the server closed the connection after answering
    finally:
        conn.close()


def test_a_body_over_the_limit_is_refused_before_it_is_read(service: str) -> None:
    # 30 MB announced, a question padded with spaces: answered 413 before a byte is read
    status, body = _raw_post(service, "/ask", [b'{"question": "o que e a relu?   '],
                             {"Content-Type": "application/json",
                              "Content-Length": str(30_000_000)})
    assert status == 413 and b"limit" in body
    just = b'{"question": "relu' + b" " * (LIMIT - 100) + b'"}'
    r = httpx.post(service + "/ask", content=just, headers={"content-type": "application/json"})
    assert r.status_code == 422  # under the body limit, over the question's 2000 characters
    over = httpx.post(service + "/ask", content=just + b" " * 100,
                      headers={"content-type": "application/json"})
    assert over.status_code == 413 and over.headers["x-content-type-options"] == "nosniff"


def test_a_streamed_body_is_counted_as_it_arrives(service: str) -> None:
    piece = b" " * 1024
    status, body = _raw_post(
        service, "/ask", [b'{"question": "relu', *[piece] * 8, b'"}'],
        {"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
    assert status == 413
    ok, _ = _raw_post(service, "/ask", [b'{"question": "', b'o que e a relu?"}'],
                      {"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
    assert ok == 200


def test_question_length_counts_the_spaces_as_sent(service: str) -> None:
    padded = "o que é a relu?" + " " * 2000  # 17 characters once stripped
    r = httpx.post(service + "/ask", json={"question": padded})
    assert r.status_code == 422 and "2000" in r.json()["detail"]
    assert r.json()["field"] == "question"


def test_lists_are_bounded(service: str) -> None:
    r = httpx.post(service + "/ask", json={"question": "relu", "lectures": ["a"] * 501})
    assert r.status_code == 422 and r.json()["field"] == "lectures"
    s = httpx.get(service + "/search", params=[("q", "relu")] + [("lecture", "a")] * 501)
    assert s.status_code == 422


def test_search_refuses_a_nul_in_the_query(service: str) -> None:
    r = httpx.get(service + "/search", params={"q": "relu\x00"})
    assert r.status_code == 422 and r.json()["field"] == "query.q"
    assert httpx.get(service + "/search", params={"q": "relu"}).status_code == 200


def test_the_spec_states_the_limits(service: str) -> None:
    spec = httpx.get(service + "/openapi.json").json()
    schemas = spec["components"]["schemas"]
    ask = schemas["AskIn"]["properties"]
    assert ask["question"]["maxLength"] == 2000 and ask["question"]["minLength"] == 1
    assert ask["lectures"]["anyOf"][0]["maxItems"] == 500
    imp = schemas["ImportIn"]["properties"]["text"]
    assert imp["maxLength"] > 0 and imp["minLength"] == 1
    assert schemas["AnnotationIn"]["properties"]["comment"]["anyOf"][0]["maxLength"] == 4000
    ask_responses = spec["paths"]["/ask"]["post"]["responses"]
    assert {"400", "413", "422"} <= set(ask_responses)
    assert ask_responses["422"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/ErrorOut")


def test_the_login_cookie_is_secure_when_set_so(service: str) -> None:
    r = httpx.post(service + "/review/login", json={"name": "ana", "password": PASSWORD})
    assert r.status_code == 200
    cookie = r.headers["set-cookie"].lower()
    assert "secure" in cookie and "httponly" in cookie and "samesite=strict" in cookie
