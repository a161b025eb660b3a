"""The student page in headless Chromium: ask, watch the answer stream, follow a citation."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator

import httpx
import pytest

from app.config import Settings
from app.main import create_app
from tests.app.fake_llm import FakeLLMServer
from tests.servers import ServedApp


def wait_for(page, expression: str, arg: object = None, timeout: float = 30_000) -> None:  # type: ignore[no-untyped-def]
    """Like ``page.wait_for_function``, which evaluates its predicate with ``eval`` inside the
    page, which the pages' Content-Security-Policy (no 'unsafe-eval') refuses; this polls
    through the debugging protocol instead, which the policy does not cover."""
    deadline = time.monotonic() + timeout / 1000
    while not page.evaluate(expression, arg):
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout / 1000:.0f} s for {expression}")
        time.sleep(0.05)

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium not installed"),
]
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def responder(messages: list[dict]) -> str:
    return "A ReLU devolve o máximo entre zero e a entrada [1], e treina melhor [2]."


@pytest.fixture(scope="module")
def site(sample_index) -> Iterator[str]:  # type: ignore[no-untyped-def]
    with FakeLLMServer(responder) as llm:
        settings = Settings(
            answer_strategy="direct", index_dir=sample_index.root, llm_base_url=llm.base_url,
                            llm_model="fake-model")
        with ServedApp(create_app(settings)) as srv:
            yield srv.url


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


def test_student_asks_and_follows_a_citation(site: str, browser) -> None:  # type: ignore[no-untyped-def]
    ctx = browser.new_context(viewport={"width": 390, "height": 844})  # a phone
    opened: list[str] = []

    def fake_video(route) -> None:  # type: ignore[no-untyped-def]
        opened.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body="<title>vídeo</title>ok")

    ctx.route("https://www.youtube.com/**", fake_video)
    ctx.route("https://videos.example.edu/**", fake_video)
    page = ctx.new_page()
    page.goto(site + "/")
    assert page.locator("html").get_attribute("lang") == "pt-BR"
    page.fill("#question", "O que a função ReLU faz?")
    page.click("#ask-button")
    page.wait_for_selector("#citations li a.ref", timeout=60_000)
    assert "ReLU" in page.inner_text("#answer")
    assert page.locator("#segments li").count() >= 2
    cite = page.locator("#answer a.cite").first
    href = cite.get_attribute("href") or ""
    assert "t=" in href
    # a YouTube lecture plays in place, in the embed at the cited second
    ctx.route("https://www.youtube-nocookie.com/**", fake_video)
    cite.click()
    page.wait_for_selector("#player-box iframe")
    second = href.split("t=")[1].split("&")[0]
    assert page.get_attribute("#player-box iframe", "src") == (
        f"https://www.youtube-nocookie.com/embed/AULA0000001?start={second}&autoplay=1")
    deadline = time.monotonic() + 10
    while not opened and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert opened and "/embed/AULA0000001" in opened[-1]
    # the page fits a phone: no horizontal scrolling
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390
    ctx.close()


def test_empty_question_is_refused_on_the_page(site: str, browser) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page()
    page.goto(site + "/")
    page.fill("#question", "   ")
    page.click("#ask-button")
    wait_for(page, "document.getElementById('status').textContent.length > 0")
    assert "pergunta" in page.inner_text("#status").lower()
    page.close()


def gated_responder(messages: list[dict]) -> str:
    user = messages[-1]["content"]
    if "PERGUNTA DE UM ESTUDANTE" in user or "AFIRMAÇÃO:" in user:
        return "SIM@0.95"
    return "A ReLU devolve o máximo entre zero e a entrada [1]."


@pytest.fixture(scope="module")
def gated_site(sample_index, tmp_path_factory) -> Iterator[str]:  # type: ignore[no-untyped-def]
    from answer.evidence import Gate

    gate_file = tmp_path_factory.mktemp("gate") / "gate.json"
    gate_file.write_text(Gate(p_covered=0.5).to_json())
    with FakeLLMServer(gated_responder) as llm:
        llm.slow(0.8)  # every LLM call takes a while, as on a CPU
        settings = Settings(index_dir=sample_index.root, llm_base_url=llm.base_url,
                            llm_model="fake-model", answer_strategy="gated",
                            gate_file=gate_file, gate_candidates=2)
        with ServedApp(create_app(settings)) as srv:
            yield srv.url


def asking(site: str, browser, question: str):  # type: ignore[no-untyped-def]
    """A phone-sized page that asked ``question`` and shows its moments (answer still coming)."""
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(site + "/")
    page.fill("#question", question)
    page.click("#ask-button")
    page.wait_for_selector("#moments li a.moment", timeout=60_000)
    return page


def test_moments_appear_before_the_answer(gated_site: str, browser) -> None:  # type: ignore[no-untyped-def]
    page = asking(gated_site, browser, "O que a função ReLU faz?")
    # the moments are on screen while the answer is still being written
    assert page.inner_text("#answer").strip() == ""
    link = page.locator("#moments li a.moment").first.get_attribute("href") or ""
    assert "t=" in link
    page.wait_for_selector("#citations li a.ref", timeout=60_000)
    assert "ReLU" in page.inner_text("#answer")
    assert page.locator("#moments li").count() >= 1
    page.close()


def test_a_sentence_marker_opens_where_the_lecture_says_it(gated_site: str, browser) -> None:  # type: ignore[no-untyped-def]
    """The reference list opens each passage where it answers the question; the answer's
    [n] opens where the lecture says what that sentence says."""
    question = "Qual a vantagem da ReLU sobre a sigmoid?"
    body = httpx.post(f"{gated_site}/ask", json={"question": question, "k": 8},
                      timeout=60).json()
    sentence, cite = body["sentences"][0], body["citations"][0]
    assert sentence["url"] and sentence["url"] != cite["url"]
    page = asking(gated_site, browser, question)
    page.wait_for_selector("#citations li a.ref", timeout=60_000)
    assert page.locator("#answer a.cite").first.get_attribute("href") == sentence["url"]
    assert page.locator("#citations li a.ref").first.get_attribute("href") == cite["url"]
    page.close()


def test_the_page_says_what_was_searched_when_it_is_not_the_question(  # type: ignore[no-untyped-def]
        gated_site: str, browser) -> None:
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(gated_site + "/")
    page.fill("#question", "O que a função ReLU faz?")
    page.click("#ask-button")
    page.wait_for_selector("#citations li a.ref", timeout=60_000)
    assert not page.locator("#searched").is_visible()  # searched as typed: nothing to say
    page.fill("#question", "oi gente, to com uma duvida: o que a função ReLU faz? valeu!!")
    page.click("#ask-button")
    page.wait_for_selector("#moments li a.moment", timeout=60_000)
    searched = page.inner_text("#searched")
    assert "o que a função ReLU faz?" in searched and "valeu" not in searched
    page.wait_for_selector("#citations li a.ref", timeout=60_000)
    assert page.locator("#searched").is_visible()
    page.close()


def sse(*events: tuple[str, object]) -> str:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


def test_bad_video_links_never_break_the_answer_or_reach_href(site: str, browser) -> None:  # type: ignore[no-untyped-def]
    # What /ask/stream sends for an index built before links were normalised at ingest
    bare, evil = "youtube.com/watch?v=semesquema", "javascript:alert(document.cookie)"
    hit = {"corpus_id": 0, "score": 0.9, "lecture_id": "aula", "title": "Aula", "start": 0.0,
           "end": 90.0, "text": "A ReLU devolve o máximo entre zero e a entrada."}
    segments = [{**hit, "url": bare}, {**hit, "corpus_id": 1, "url": evil}]
    moments = [{"lecture_id": "aula", "title": "Aula", "start": 0.0, "end": 9.0,
                "answer_start": 3.0, "url": url, "snippet": "a ReLU", "score": 0.9}
               for url in (bare, evil)]
    citations = [{"n": [1], "lecture_id": "aula", "title": "Aula", "start": 0.0, "end": 90.0,
                  "url": bare}, {"n": [2], "lecture_id": "aula", "title": "Aula", "start": 0.0,
                                 "end": 90.0, "url": evil}]
    done = {"question": "q", "answer": "A ReLU devolve o máximo [1], e treina melhor [2].",
            "covered": True, "citations": citations, "segments": segments, "moments": moments}
    body = sse(("segments", segments), ("moments", {"covered": True, "moments": moments}),
               ("delta", done["answer"]), ("done", done))
    page = browser.new_page()
    page.route("**/ask/stream", lambda route: route.fulfill(
        status=200, content_type="text/event-stream", body=body))
    page.goto(site + "/")
    page.fill("#question", "O que a função ReLU faz?")
    page.click("#ask-button")
    # the stream's last event renders the citations (the button is never disabled: waiting on
    # it raced the stream on a loaded machine)
    wait_for(page, "document.querySelectorAll('#citations li').length > 0 || "
             "document.getElementById('status').textContent.startsWith('Não foi possível')")
    assert "Não foi possível" not in page.inner_text("#status")
    assert "máximo" in page.inner_text("#answer")
    assert page.locator("#citations li").count() == 2
    assert page.locator("#segments li").count() == 2
    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
    assert not [h for h in hrefs if not h.startswith(("http://", "https://"))], hrefs
    page.close()


def test_a_new_question_replaces_the_one_being_answered(gated_site: str, browser) -> None:  # type: ignore[no-untyped-def]
    page = asking(gated_site, browser, "O que a função ReLU faz?")
    assert page.inner_text("#answer").strip() == ""  # the first answer is still being written
    # the student rephrases at once: the button takes the new question without waiting
    assert page.is_enabled("#ask-button")
    page.fill("#question", "oi gente, o que a função ReLU faz? valeu!!")
    page.click("#ask-button")
    page.wait_for_selector("#citations li a.ref", timeout=60_000)
    page.wait_for_timeout(2_000)  # the first answer would have finished by now
    # what is on screen is the second question's: its searched line, one answer, no error
    assert "valeu" not in page.inner_text("#searched")
    assert page.locator("#searched").is_visible()
    assert page.inner_text("#answer").count("A ReLU devolve") == 1
    assert "Não foi possível" not in page.inner_text("#status")
    page.close()
