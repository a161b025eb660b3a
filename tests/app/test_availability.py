"""A saturated LLM stalls nothing, over real HTTP against a fake LLM that the
test holds: a full line answers 503 with Retry-After at once, /health and /search keep
answering, a question past its deadline gets its moments, and a stream whose reader leaves
stops the LLM's generation."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.admission import Admission
from app.config import Settings
from app.main import create_app
from tests.app.fake_llm import FakeLLMServer, Messages
from tests.servers import ServedApp

LONG = "resposta longa"


def responder(messages: Messages) -> str:
    if LONG in messages[-1]["content"]:
        return " ".join(["palavra"] * 400) + " [1]."
    return "A ReLU devolve o máximo entre zero e a entrada [1]."


class HeldLLM(FakeLLMServer):
    """The fake LLM, which the test can hold: chat requests wait until ``release()``. Streamed
    replies go a token every ``token_delay`` seconds, and ``abandoned`` counts the streams
    whose reader hung up before the end."""

    def __init__(self, reply: Callable[[Messages], str]) -> None:
        super().__init__(reply)
        self.open = threading.Event()
        self.open.set()
        self.arrived = 0
        self.token_delay = 0.0
        self.abandoned = 0

    def hold(self) -> None:
        self.open.clear()

    def release(self) -> None:
        self.open.set()

    def _app(self) -> Any:
        inner = super()._app()

        async def app(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and scope["path"].endswith("/chat/completions"):
                self.arrived += 1
                while not self.open.is_set():
                    await asyncio.sleep(0.01)
            await inner(scope, receive, send)

        return app

    async def _sse(self, reply: str, model: str) -> AsyncIterator[str]:
        try:
            async for event in super()._sse(reply, model):
                yield event
                await asyncio.sleep(self.token_delay)
        except (asyncio.CancelledError, GeneratorExit):
            self.abandoned += 1
            raise


@pytest.fixture(scope="module")
def llm() -> Iterator[HeldLLM]:
    srv = HeldLLM(responder)
    with srv:
        yield srv


@pytest.fixture(scope="module")
def site(sample_index, llm: HeldLLM, tmp_path_factory) -> Iterator[tuple[str, Any]]:  # type: ignore[no-untyped-def]
    folder: Path = tmp_path_factory.mktemp("availability")
    settings = Settings(
        answer_strategy="direct", index_dir=sample_index.root, llm_base_url=llm.base_url,
        llm_model="fake-model", llm_retries=0, llm_timeout=60, llm_slots=1, ask_queue=1,
        ask_deadline=60, ask_rate_per_minute=0, search_rate_per_minute=0,
        database_url=f"sqlite:///{folder}/aula.db")
    app = create_app(settings)
    with ServedApp(app) as srv:
        yield srv.url, app


@pytest.fixture()
def held(llm: HeldLLM) -> Iterator[HeldLLM]:
    llm.hold()
    try:
        yield llm
    finally:
        llm.release()
        llm.token_delay = 0.0


def wait_until(predicate: Callable[[], Any], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


def ask(url: str, question: str = "O que a ReLU devolve?") -> httpx.Response:
    return httpx.post(f"{url}/ask", json={"question": question, "k": 3}, timeout=60)


def idle(app: Any) -> bool:
    admission: Admission = app.state.admission
    return admission.busy == 0 and admission.waiting == 0


def test_a_full_line_answers_503_at_once_and_the_rest_keeps_answering(
        site: tuple[str, Any], held: HeldLLM) -> None:
    url, app = site
    wait_until(lambda: idle(app))
    before = held.arrived
    crowd = 45  # more than the server's 40 request threads
    with ThreadPoolExecutor(crowd) as pool:
        replies: list[Future[httpx.Response]] = [pool.submit(ask, url) for _ in range(crowd)]
        wait_until(lambda: held.arrived > before)  # one question reached the LLM, held there
        # 1 slot × (1 + a queue of 1): two are in, every other one is turned away at once
        wait_until(lambda: sum(f.done() for f in replies) >= crowd - 2)
        early = [f for f in replies if f.done()]
        stream = httpx.post(f"{url}/ask/stream", json={"question": "O que é a ReLU?"},
                            timeout=10)
        health = httpx.get(f"{url}/health", timeout=10)
        found = httpx.get(f"{url}/search", params={"q": "ReLU", "k": 3}, timeout=10)
        lectures = httpx.get(f"{url}/lectures", timeout=10)
        held.release()
        admitted = [f.result() for f in replies if f not in early]
    assert health.status_code == found.status_code == lectures.status_code == 200
    assert found.json()["hits"]
    turned = [f.result() for f in early] + [stream]
    assert len(turned) == crowd - 1
    for r in turned:
        assert r.status_code == 503, r.text
        assert int(r.headers["Retry-After"]) >= 1 and "tente de novo" in r.json()["detail"]
    assert len(admitted) == 2
    assert all(r.status_code == 200 and r.json()["answer"] for r in admitted)


def test_past_its_deadline_a_question_gets_its_moments_and_a_line(
        site: tuple[str, Any], held: HeldLLM) -> None:
    url, app = site
    wait_until(lambda: idle(app))
    normal = app.state.admission
    app.state.admission = Admission(slots=1, queue=0, deadline=2.0)
    try:
        late = ask(url)
        # the LLM call of the late question has not returned, so its slot is still taken:
        # with no line, the next question is turned away
        again = ask(url)
        held.release()
        wait_until(lambda: idle(app))
        after = ask(url)
    finally:
        app.state.admission.close()
        app.state.admission = normal
    assert late.status_code == 200
    body = late.json()
    assert body["answer"] is None and body["covered"] is None
    assert body["segments"] and body["moments"]
    assert "limite de 2 s" in body["note"] and body["error"] == "no answer within 2 s"
    assert again.status_code == 503 and again.headers["Retry-After"]
    assert after.status_code == 200 and after.json()["answer"]


def test_a_stream_whose_reader_leaves_stops_the_llm(site: tuple[str, Any], llm: HeldLLM) -> None:
    url, app = site
    wait_until(lambda: idle(app))
    llm.token_delay = 0.05  # 400 words: 20 s if nobody stopped it
    before = llm.abandoned
    try:
        with httpx.stream("POST", f"{url}/ask/stream", json={"question": f"Uma {LONG}?"},
                          timeout=30) as res:
            assert res.status_code == 200
            for line in res.iter_lines():
                if line.startswith("event: delta"):
                    break  # the student closes the tab
        wait_until(lambda: llm.abandoned > before, timeout=10)
        wait_until(lambda: idle(app), timeout=10)
    finally:
        llm.token_delay = 0.0
    with httpx.stream("POST", f"{url}/ask/stream", json={"question": "O que é a ReLU?"},
                      timeout=30) as res:
        text = "".join(res.iter_text())
    assert res.status_code == 200 and "event: done" in text


def test_an_ask_whose_client_leaves_stops_the_llm(site: tuple[str, Any], llm: HeldLLM) -> None:
    url, app = site
    wait_until(lambda: idle(app))
    llm.token_delay = 0.05  # 400 words: 20 s if nobody stopped it
    before, arrived = llm.abandoned, llm.arrived
    body = json.dumps({"question": f"Uma {LONG}?", "k": 3}).encode()
    host, port = url.removeprefix("http://").split(":")
    try:
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"POST /ask HTTP/1.1\r\nHost: %b\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%b" % (host.encode(), len(body), body))
            wait_until(lambda: llm.arrived > arrived)  # the answer is being written
        # the socket is closed: the student gave up
        wait_until(lambda: llm.abandoned > before, timeout=10)
        wait_until(lambda: idle(app), timeout=10)
    finally:
        llm.token_delay = 0.0
    assert ask(url).status_code == 200
