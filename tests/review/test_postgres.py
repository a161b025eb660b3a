"""The same store and API on a real PostgreSQL server the tests start themselves: schema,
annotations and conflicts, all-or-nothing import, concurrent savers, an outage answered 503."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from app.config import Settings
from app.db import exchange, store
from app.db.models import Base
from app.db.session import Database, open_database
from app.main import create_app
from tests.app.fake_llm import FakeLLMServer
from tests.review.annotators import run_annotators
from tests.review.conftest import (
    PASSWORD,
    add_instructor,
    answer_body,
    judge_or_answer,
    seed,
)
from tests.review.postgres_server import PostgresServer, skip_reason
from tests.review.test_load import ANNOTATORS, SAVES_EACH, check_nothing_lost
from tests.review.test_store import NOW
from tests.servers import ServedApp

pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")


@pytest.fixture(scope="module")
def pg() -> Iterator[PostgresServer]:
    with PostgresServer() as server:
        yield server


@pytest.fixture()
def pdb(pg: PostgresServer) -> Iterator[Database]:
    d = open_database(pg.url, timeout=3)
    yield d
    d.close()


def test_the_schema_on_postgres_matches_the_models(pdb: Database) -> None:
    assert pdb.backend == "postgresql"
    with pdb.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}),
                                Base.metadata)
    assert diff == []


def test_annotations_conflicts_and_history_on_postgres(pdb: Database) -> None:
    [i] = seed(pdb, 1)
    with pdb.write() as s:
        store.annotate(s, i, label="PC", comment="falta", version=1, user="ana", now=NOW)
    with pytest.raises(store.Conflict), pdb.write() as s:
        store.annotate(s, i, label="C", comment=None, version=1, user="bruno", now=NOW)
    with pdb.read() as s:
        it, hist = store.get_item(s, i), store.history(s, i)
        rows, _ = store.queue(s, store.QueueFilter(lecture="redes-neurais", manual="PC"))
    assert (it["manual"], it["version"], it["created_at"]) == ("PC", 2, "2026-05-01T12:00:00+00:00")
    assert [(h["user"], h["new_label"]) for h in hist] == [("ana", "PC")]
    assert i in [r["id"] for r in rows]


def test_the_least_sure_labels_come_first_on_postgres(pdb: Database) -> None:
    """The order reads a number inside the JSON signals: Postgres's JSON path, not SQLite's."""
    with pdb.write() as s:
        ids = [store.save_answer(s, answer_body(f"Pergunta {n}", "ordem-pg"), NOW)
               for n in range(3)]
        for answer_id, sure in zip(ids, (0.93, None, 0.41), strict=True):
            store.set_automated(s, answer_id, ar_score=2, label="PC", reasoning="r", model="m",
                                error=None, now=NOW, signals={"label_confidence": sure})
    with pdb.read() as s:
        rows, _ = store.queue(s, store.QueueFilter(lecture="ordem-pg"), order="least_sure")
    assert [r["id"] for r in rows] == [ids[2], ids[0], ids[1]]


def test_an_import_with_a_bad_row_changes_nothing_on_postgres(pdb: Database) -> None:
    a, b = seed(pdb, 2)
    rows = exchange.parse_csv(f"id,manual,comment\n{a},C,\n{b},PC,\n")
    with pytest.raises(store.ImportRejected, match=r"row 2 .*comment"), pdb.write() as s:
        store.import_annotations(s, rows, user="imp", now=NOW, source="import-csv")
    with pdb.read() as s:
        assert store.get_item(s, a)["manual"] is None


def test_eight_concurrent_savers_of_one_version_one_wins(pdb: Database) -> None:
    [i] = seed(pdb, 1)
    barrier = threading.Barrier(8)
    results: list[str] = []

    def save(n: int) -> None:
        barrier.wait()
        try:
            with pdb.write() as s:
                store.annotate(s, i, label="I", comment=f"nota {n}", version=1, user=f"u{n}",
                               now=NOW)
            results.append("ok")
        except store.Conflict:
            results.append("conflict")

    threads = [threading.Thread(target=save, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["conflict"] * 7 + ["ok"]
    with pdb.read() as s:
        assert len(store.history(s, i)) == 1 and store.get_item(s, i)["version"] == 2


def test_the_api_on_postgres_answers_503_while_it_is_down(pg: PostgresServer, pdb: Database,
                                                          sample_index) -> None:  # type: ignore[no-untyped-def]
    add_instructor(pdb, "pg-ana")
    [i] = seed(pdb, 1)
    with FakeLLMServer(judge_or_answer) as llm:
        settings = Settings(
            answer_strategy="direct", index_dir=sample_index.root, llm_base_url=llm.base_url,
                            llm_model="fake-model", database_url=pg.url, database_timeout=2,
                            ask_rate_per_minute=0)
        with ServedApp(create_app(settings)) as srv, httpx.Client(timeout=60) as c:
            r = c.post(srv.url + "/review/login",
                       json={"name": "pg-ana", "password": "senha-do-instrutor"})
            h = {"X-CSRF-Token": r.json()["csrf"]}
            url = srv.url + f"/api/review/items/{i}/annotation"
            pg.stop()
            try:
                down = c.put(url, json={"label": "C", "version": 1}, headers=h)
                asked = c.post(srv.url + "/ask", json={"question": "O que é a ReLU?", "k": 2})
            finally:
                pg.start()
            assert down.status_code == 503 and "indisponível" in down.json()["detail"]
            assert asked.status_code == 200 and asked.json()["answer"]
            back = c.put(url, json={"label": "C", "version": 1}, headers=h)
            assert back.status_code == 200 and back.json()["version"] == 2


def test_eight_annotators_on_postgres_lose_nothing(pg: PostgresServer, pdb: Database,
                                                   sample_index) -> None:  # type: ignore[no-untyped-def]
    items = seed(pdb, 4)
    users = [(f"pg-carga{n}", PASSWORD) for n in range(ANNOTATORS)]
    for name, _ in users:
        add_instructor(pdb, name)
    settings = Settings(
            answer_strategy="direct", index_dir=sample_index.root, llm_base_url="http://127.0.0.1:9/v1",
                        llm_model="unused", database_url=pg.url, ask_rate_per_minute=0)
    with ServedApp(create_app(settings)) as srv:
        saves, _ = run_annotators(srv.url, users, items, SAVES_EACH)
    check_nothing_lost(pdb, items, saves)
