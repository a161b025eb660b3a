"""The review API over real HTTP: who may see and write what, the version check, clear errors,
answers recorded by /ask and judged in the background, the /ask rate limit, 503."""

from __future__ import annotations

import sqlite3
import time

import httpx

from app.auth import issue_token
from app.db import store
from app.ratelimit import RateLimiter
from tests.review.conftest import Site, seed


def wait_for(predicate, timeout: float = 30.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_ask_records_the_answer_and_judges_it_in_the_background(site: Site) -> None:
    r = httpx.post(site.url + "/ask", json={"question": "O que a função ReLU faz?", "k": 3},
                   timeout=60)
    assert r.status_code == 200
    with site.db.read() as s:
        rows, _ = store.queue(s, limit=1000)
    mine = [x for x in rows if x["question"] == "O que a função ReLU faz?"]
    assert mine
    answer_id = mine[-1]["id"]

    def judged() -> dict | None:
        with site.db.read() as s:
            it = store.get_item(s, answer_id)
        return it if it["judged_at"] else None

    it = wait_for(judged)
    assert it["answer"] == r.json()["answer"]
    assert len(it["segments"]) == 3 and it["segments"][0]["score"] > 0
    assert it["models"]["llm"] == "fake-model" and it["timings"]["total"] > 0
    # The fake relevance judge gives 2 of 3 (AR alone: PC) but its claim checker confirms no
    # claim of the answer, so the combined label is I and the reasoning says which claim.
    assert it["ar_score"] == 2 and it["automated"] == "I"
    assert "Supporting Evidence" in (it["reasoning"] or "")
    assert "A ReLU devolve o máximo entre zero e a entrada. => NOT SUPPORTED" in it["reasoning"]


def test_students_get_no_queue_no_item_and_cannot_annotate(site: Site) -> None:
    [answer_id] = seed(site.db, 1)
    with httpx.Client() as student:
        page = student.get(site.url + "/review")
        assert page.status_code == 401 and "Senha" in page.text
        assert "O que a função ReLU faz?" not in page.text
        for path in ("/api/review/items", f"/api/review/items/{answer_id}",
                     "/api/review/export?format=csv", "/api/review/me"):
            assert student.get(site.url + path).status_code == 401, path
        put = student.put(site.url + f"/api/review/items/{answer_id}/annotation",
                          json={"label": "C", "version": 1})
        assert put.status_code == 401
        bad = student.post(site.url + "/review/login", json={"name": "ana", "password": "x"})
        assert bad.status_code == 401
        fake = student.get(site.url + "/api/review/items",
                           headers={"Authorization": "Bearer aula_not-a-token"})
        assert fake.status_code == 401
    with site.db.read() as s:
        assert store.get_item(s, answer_id)["version"] == 1


def test_instructor_annotates_with_csrf_and_sees_history(site: Site) -> None:
    [answer_id] = seed(site.db, 1)
    with httpx.Client() as c:
        csrf = site.login(c)
        cookie = c.cookies.jar
        assert any(k.name == "aula_session" for k in cookie)
        r = c.get(site.url + "/review")
        assert r.status_code == 200 and csrf in r.text
        url = site.url + f"/api/review/items/{answer_id}/annotation"
        no_csrf = c.put(url, json={"label": "C", "version": 1})
        assert no_csrf.status_code == 403 and "CSRF" in no_csrf.json()["detail"]
        ok = c.put(url, json={"label": "PC", "comment": "falta o exemplo", "version": 1},
                   headers={"X-CSRF-Token": csrf})
        assert ok.status_code == 200, ok.text
        body = ok.json()
        assert (body["manual"], body["comment"], body["version"]) == ("PC", "falta o exemplo", 2)
        assert body["history"][-1]["user"] == "ana"
        assert (body["history"][-1]["old_label"], body["history"][-1]["new_label"]) == (None, "PC")
        queue = c.get(site.url + "/api/review/items", params={"manual": "PC"}).json()
        assert answer_id in [x["id"] for x in queue["items"]]
        unreviewed = c.get(site.url + "/api/review/items", params={"unreviewed": 1}).json()
        assert answer_id not in [x["id"] for x in unreviewed["items"]]


def test_bad_input_is_named_and_changes_nothing(site: Site) -> None:
    [answer_id] = seed(site.db, 1)
    with httpx.Client() as c:
        h = {"X-CSRF-Token": site.login(c)}
        url = site.url + f"/api/review/items/{answer_id}/annotation"
        r = c.put(url, json={"label": "X", "version": 1}, headers=h)
        assert r.status_code == 422 and r.json()["field"] == "label" and "'X'" in r.text
        r = c.put(url, json={"label": "I", "comment": "  ", "version": 1}, headers=h)
        assert r.status_code == 422 and r.json()["field"] == "comment"
        assert c.put(url, json={"label": "C", "version": 1}, headers=h).status_code == 200
        stale = c.put(url, json={"label": "I", "comment": "errada", "version": 1}, headers=h)
        assert stale.status_code == 409
        current = stale.json()["current"]
        assert (current["manual"], current["version"], current["annotated_by"]) == ("C", 2, "ana")
        assert c.put(site.url + "/api/review/items/999999/annotation",
                     json={"label": "C", "version": 1}, headers=h).status_code == 404
        bad_filter = c.get(site.url + "/api/review/items", params={"manual": "Z"})
        assert bad_filter.status_code == 422 and "manual" in bad_filter.json()["detail"]
        bad_order = c.get(site.url + "/api/review/items", params={"order": "newest"})
        assert bad_order.status_code == 422 and "order" in bad_order.text
    with site.db.read() as s:
        it = store.get_item(s, answer_id)
        assert (it["manual"], it["version"]) == ("C", 2)
        assert len(store.history(s, answer_id)) == 1


def test_a_script_uses_a_bearer_token_without_csrf(site: Site) -> None:
    [answer_id] = seed(site.db, 1)
    token = issue_token(site.db, "ana")
    h = {"Authorization": f"Bearer {token}"}
    r = httpx.put(site.url + f"/api/review/items/{answer_id}/annotation",
                  json={"label": "C", "version": 1}, headers=h)
    assert r.status_code == 200 and r.json()["annotated_by"] == "ana"


def test_ask_is_rate_limited_per_client(site: Site) -> None:
    site.app.state.ask_limiter = RateLimiter(2)
    try:
        codes = [httpx.post(site.url + "/ask", json={"question": "O que é a ReLU?", "k": 2},
                            timeout=60) for _ in range(3)]
    finally:
        site.app.state.ask_limiter = None
    assert [r.status_code for r in codes] == [200, 200, 429]
    assert int(codes[2].headers["Retry-After"]) >= 1
    assert "tente" in codes[2].json()["detail"] or "try" in codes[2].json()["detail"]


def test_a_locked_database_answers_503_and_ask_still_answers(site: Site) -> None:
    [answer_id] = seed(site.db, 1)
    path = site.settings.service.database_url.removeprefix("sqlite:///")
    with httpx.Client(timeout=60) as c:
        h = {"X-CSRF-Token": site.login(c)}
        url = site.url + f"/api/review/items/{answer_id}/annotation"
        lock = sqlite3.connect(path, isolation_level=None)
        lock.execute("BEGIN EXCLUSIVE")
        try:
            r = c.put(url, json={"label": "C", "version": 1}, headers=h)
            asked = c.post(site.url + "/ask", json={"question": "O que é a ReLU?", "k": 2})
        finally:
            lock.execute("ROLLBACK")
            lock.close()
        assert r.status_code == 503 and "nada foi salvo" in r.json()["detail"]
        assert r.headers["Retry-After"]
        assert asked.status_code == 200 and asked.json()["answer"]
        again = c.put(url, json={"label": "C", "version": 1}, headers=h)
        assert again.status_code == 200 and again.json()["version"] == 2


def test_the_streamed_answer_the_student_page_uses_is_recorded_too(site: Site) -> None:
    q = "Pergunta feita na página, em streaming?"
    with httpx.stream("POST", site.url + "/ask/stream", json={"question": q, "k": 2},
                      timeout=60) as r:
        assert r.status_code == 200
        text = "".join(r.iter_text())
    assert "event: done" in text
    with site.db.read() as s:
        rows, _ = store.queue(s, limit=1000)
    assert q in [x["question"] for x in rows]


def test_an_import_over_the_api_is_all_or_nothing(site: Site) -> None:
    a, b = seed(site.db, 2)
    with httpx.Client() as c:
        h = {"X-CSRF-Token": site.login(c)}
        bad = c.post(site.url + "/api/review/import", headers=h, json={
            "text": f"id,manual,comment\n{a},C,\n{b},I,\n", "format": "csv"})
        assert bad.status_code == 422
        assert bad.json()["errors"] == [
            f"row 2 (id {b}): comment: required for I: say what is missing or wrong in the answer"]
        with site.db.read() as s:
            assert store.get_item(s, a)["manual"] is None
        good = c.post(site.url + "/api/review/import", headers=h, json={
            "text": f"id,manual,comment\n{a},C,\n{b},I,não responde\n"})
        assert good.status_code == 200 and good.json() == {"changed": 2, "unchanged": 0}
        no_csrf = c.post(site.url + "/api/review/import", json={"text": "id,manual\n"})
        assert no_csrf.status_code == 403


def test_numbers_and_dates_out_of_range_are_named_never_a_500(site: Site) -> None:
    [answer_id] = seed(site.db, 1)
    big = 10**20
    with httpx.Client() as c:
        h = {"X-CSRF-Token": site.login(c)}
        for method, path, body, named in [
            ("GET", f"/api/review/items?offset={big}", None, "offset"),
            ("GET", f"/api/review/items?limit={big}", None, "limit"),
            ("GET", f"/api/review/items/{big}", None, "answer_id"),
            ("GET", f"/api/review/items/{big}/history", None, "answer_id"),
            ("PUT", f"/api/review/items/{big}/annotation", {"label": "C", "version": 1},
             "answer_id"),
            ("PUT", f"/api/review/items/{answer_id}/annotation",
             {"label": "C", "version": big}, "version"),
            ("POST", "/api/review/import", {"text": f"id,manual\n{big},C\n"}, str(big)),
            ("GET", "/api/review/items?from=2026-05-02&to=2026-05-01", None, "from"),
        ]:
            r = c.request(method, site.url + path, json=body, headers=h)
            assert 400 <= r.status_code < 500, (path, r.status_code, r.text)
            assert named in r.json()["detail"], r.text  # says what is wrong
        # the ends of the calendar are a filter like any other
        edges = c.get(site.url + "/api/review/items", params={"from": "0001-01-01",
                                                             "to": "9999-12-31", "limit": 1000})
        assert edges.status_code == 200, edges.text
        assert answer_id in [x["id"] for x in edges.json()["items"]]
    with site.db.read() as s:
        assert store.get_item(s, answer_id)["version"] == 1
