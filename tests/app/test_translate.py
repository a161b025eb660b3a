"""A question asked in another language than the lectures' is translated for search:
the service over real HTTP with a fake LLM that translates; the translation's real
effect on retrieval and on the evidence gate is measured by ``bench/cross_language.py``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from answer.translate import clean_translation, needs_translation
from app.config import Settings
from app.main import create_app
from tests.app.fake_llm import FakeLLMServer
from tests.servers import ServedApp

ENGLISH = "what does the ReLU return for negative numbers?"
TRANSLATED = "o que a ReLU devolve para números negativos?"


def responder(messages: list[dict[str, Any]]) -> str:
    if messages[0]["content"].startswith("Translate the student's question"):
        return {ENGLISH: f"Translation: \"{TRANSLATED}\""}.get(messages[-1]["content"], "")
    return "A ReLU devolve zero para entradas negativas [1]."


def translations(llm: FakeLLMServer) -> list[str]:
    return [r["messages"][-1]["content"] for r in llm.chat_requests
            if r["messages"][0]["content"].startswith("Translate")]


@pytest.fixture(scope="module")
def served(sample_index) -> Iterator[tuple[str, FakeLLMServer]]:  # type: ignore[no-untyped-def]
    with FakeLLMServer(responder) as llm:
        settings = Settings(answer_strategy="direct", index_dir=sample_index.root,
                            llm_base_url=llm.base_url, llm_model="fake-model", llm_retries=0,
                            llm_timeout=5, ask_rate_per_minute=0, search_rate_per_minute=0)
        with ServedApp(create_app(settings)) as srv:
            yield srv.url, llm


def ask(url: str, question: str) -> dict[str, Any]:
    res = httpx.post(f"{url}/ask", json={"question": question, "k": 3}, timeout=60)
    assert res.status_code == 200, res.text
    return res.json()


def test_an_english_question_over_portuguese_lectures_is_searched_in_portuguese(
        served: tuple[str, FakeLLMServer]) -> None:
    url, llm = served
    llm.requests.clear()
    body = ask(url, ENGLISH)
    assert translations(llm) == [ENGLISH]
    assert body["search_query"] == TRANSLATED and "translate" in body["timings"]
    direct = httpx.get(f"{url}/search", params={"q": TRANSLATED, "k": 3}, timeout=30).json()
    assert [(s["lecture_id"], s["start"]) for s in body["segments"]] == [
        (h["lecture_id"], h["start"]) for h in direct["hits"]]
    assert body["segments"][0]["lecture_id"] == "redes-neurais"
    # the answer is written for the question as the student typed it
    generation = llm.chat_requests[-1]["messages"]
    assert ENGLISH in generation[-1]["content"]
    ask(url, ENGLISH)  # asked again: the translation is remembered
    assert translations(llm) == [ENGLISH]


def test_a_question_in_the_lectures_language_is_searched_as_typed(
        served: tuple[str, FakeLLMServer]) -> None:
    url, llm = served
    llm.requests.clear()
    body = ask(url, TRANSLATED)
    assert translations(llm) == [] and body["search_query"] is None
    assert "translate" not in body["timings"]


def test_when_the_translation_fails_the_question_is_searched_as_typed(
        served: tuple[str, FakeLLMServer]) -> None:
    url, llm = served
    llm.requests.clear()
    llm.fail_next(1, 500)  # the translation request; the answer's request then succeeds
    question = "why is the ReLU easier to train than the sigmoid?"
    body = ask(url, question)
    assert translations(llm) == [question]
    assert body["search_query"] is None and body["answer"]
    assert body["segments"]


def test_languages_and_what_a_translation_reply_holds() -> None:
    assert needs_translation(ENGLISH, "pt") and not needs_translation(ENGLISH, "en")
    assert needs_translation("pq a derivada de e^x é ela mesma?", "en")
    assert not needs_translation("pq a derivada de e^x é ela mesma?", "pt")
    assert clean_translation(f'Tradução: "{TRANSLATED}"\n\nNote: ...', ENGLISH) == TRANSLATED
    assert clean_translation("", ENGLISH) == ENGLISH
    assert clean_translation("x" * 500, ENGLISH) == ENGLISH  # not a translation
