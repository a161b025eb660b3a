"""Two `aula serve` processes behind one proxy behave as one service.

Real processes on loopback, one SQLite database and one index folder, a fake LLM over HTTP.
A student's question limit holds across both servers, and a lecture ingested while they run
(by a third process, as `aula ingest` would) is found by both without a restart.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from corpus.index import IndexStore
from tests.app.fake_llm import FakeLLMServer
from tests.conftest import CACHE, ROOT, SAMPLES, free_port

NEW_LECTURE = """WEBVTT

00:00:00.000 --> 00:00:20.000
Hoje vamos falar do algoritmo de Dijkstra para caminhos mínimos em grafos.

00:00:20.000 --> 00:00:45.000
O algoritmo de Dijkstra usa uma fila de prioridade e não aceita arestas com peso negativo.
"""


def serve(port: int, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"server not ready: {log.read_text()[-2000:]}")


@pytest.fixture(scope="module", params=["faiss", "milvus"])
def replicas(request, tmp_path_factory: pytest.TempPathFactory, sample_index) -> Iterator[  # type: ignore[no-untyped-def]
        tuple[list[str], Path, Any]]:
    """Two servers on one database and one index folder; their windows searched in each
    process (faiss) or in one Milvus server they share (milvus). Yields their URLs, the index
    folder and the shared store (None for faiss)."""
    from corpus.vector_store import MilvusStore

    folder = tmp_path_factory.mktemp("replicas")
    index = folder / "index"
    shutil.copytree(sample_index.root, index)
    extra, shared = {}, None
    if request.param == "milvus":
        uri = request.getfixturevalue("milvus_server")
        extra = {"AULA_VECTOR_STORE": "milvus", "AULA_MILVUS_URI": uri,
                 "AULA_MILVUS_COLLECTION": "replicas"}
        shared = MilvusStore(uri, "replicas")
        shared.drop()
        shared.sync(IndexStore(index).load(with_faiss=False))
    with FakeLLMServer() as llm:
        env = {**os.environ, "AULA_INDEX_DIR": str(index),
               "AULA_DATABASE_URL": f"sqlite:///{folder}/aula.db",
               "AULA_LLM_BASE_URL": llm.base_url, "AULA_LLM_MODEL": "fake-model",
               "AULA_ANSWER_STRATEGY": "direct", "AULA_ASK_RATE_PER_MINUTE": "2",
               "AULA_RATE_LIMIT_STORE": "database", "AULA_INDEX_POLL_SECONDS": "0.2",
               "AULA_SEARCH_RATE_PER_MINUTE": "0", "HF_HUB_OFFLINE": "1", **extra}
        procs, urls, logs = [], [], []
        try:
            for n in range(2):
                port = free_port()
                logs.append(folder / f"serve{n}.log")
                procs.append(serve(port, env, logs[-1]))
                urls.append(f"http://127.0.0.1:{port}")
            for url, proc, log in zip(urls, procs, logs, strict=True):
                wait_ready(url, proc, log)
            yield urls, index, shared
        finally:
            if shared is not None:
                shared.close()
            for proc in procs:
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()


def ask(url: str) -> httpx.Response:
    return httpx.post(f"{url}/ask", json={"question": "O que a ReLU devolve?", "k": 3},
                      timeout=60)


def test_a_students_question_limit_holds_across_both_servers(
        replicas: tuple[list[str], Path, Any]) -> None:
    (a, b), _, _ = replicas
    first, second = ask(a), ask(b)
    assert first.status_code == 200 and second.status_code == 200
    # each process alone would still have a question left; together they have spent both
    third, fourth = ask(a), ask(b)
    assert third.status_code == 429 and int(third.headers["Retry-After"]) >= 1
    assert fourth.status_code == 429


def test_a_lecture_ingested_while_they_run_is_found_by_both(
        replicas: tuple[list[str], Path, Any], embedder, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from corpus.ingest import ingest

    urls, index, shared = replicas

    def found(url: str) -> bool:
        r = httpx.get(f"{url}/search", params={"q": "algoritmo de Dijkstra", "k": 3}, timeout=30)
        assert r.status_code == 200, r.text
        return any(h["lecture_id"] == "grafos" for h in r.json()["hits"])

    assert not any(found(u) for u in urls)
    lectures = tmp_path / "lectures"
    shutil.copytree(SAMPLES, lectures)
    (lectures / "grafos").mkdir()
    (lectures / "grafos" / "grafos.vtt").write_text(NEW_LECTURE, encoding="utf-8")
    ingest([lectures / "grafos"], IndexStore(index), embedder, vector_store=shared)
    deadline = time.monotonic() + 30
    pending = set(urls)
    while pending and time.monotonic() < deadline:
        pending = {u for u in pending if not found(u)}
        time.sleep(0.2)
    assert not pending, f"{sorted(pending)} still serve the old index"
    health = [httpx.get(f"{u}/health", timeout=10).json() for u in urls]
    assert health[0]["index_version"] == health[1]["index_version"] == IndexStore(
        index).live_version()
    assert health[0]["vector_store"] == ("faiss" if shared is None else "milvus")
    # the lectures already there are still served, by both
    for url in urls:
        ids = {lec["lecture_id"] for lec in httpx.get(f"{url}/lectures", timeout=10).json()}
        assert {"grafos", "derivadas", "redes-neurais"} <= ids, ids


def test_a_new_version_that_fails_to_load_leaves_the_old_one_serving(
        sample_index, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from app.services import IndexWatch

    index = tmp_path / "index"
    shutil.copytree(sample_index.root, index)
    store = IndexStore(index)
    data = store.load(with_faiss=False)
    now = [0.0]
    broken = [True]

    def build(loaded):  # type: ignore[no-untyped-def]
        if broken[0]:
            raise OSError("half-copied version")
        return loaded.live

    watch = IndexWatch(store, build, data.live, poll_s=1.0, clock=lambda: now[0])
    store.write(data)  # another process writes a new version
    assert watch.poll() is None  # not yet time to look
    now[0] = 1.0
    assert watch.poll() is None and watch.seen == data.live  # failed: keeps the old one
    broken[0] = False
    now[0] = 2.0
    assert watch.poll() == store.live_version() != data.live
    now[0] = 3.0
    assert watch.poll() is None  # nothing new since


def test_a_reloading_server_keeps_one_milvus_connection_and_the_new_words(
        sample_index, embedder, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A server on Milvus that picks up a new version searches it with the new version's
    lexical statistics (a word only the new lecture has is found by BM25 alone) through the
    connection it already has, and does not read the folder's FAISS index it never uses."""
    from app.config import Settings
    from app.services import build_services
    from corpus.ingest import ingest
    from corpus.vector_store import MilvusStore

    index, uri = tmp_path / "index", str(tmp_path / "milvus.db")
    shutil.copytree(sample_index.root, index)
    writer = MilvusStore(uri, "reload")
    writer.sync(IndexStore(index).load(with_faiss=False))
    writer.close()
    settings = Settings(index_dir=index, vector_store="milvus", milvus_uri=uri,
                        milvus_collection="reload", index_poll_seconds=0.05, rerank="off",
                        cache_dir=CACHE)
    services = build_services(settings, with_llm=False)
    try:
        before = services.retriever
        assert before.data.faiss_index is None
        assert len(before.store.lexical("Dijkstra", 3)[0]) == 0
        lectures = tmp_path / "lectures"
        (lectures / "grafos").mkdir(parents=True)
        (lectures / "grafos" / "grafos.vtt").write_text(NEW_LECTURE, encoding="utf-8")
        ingest([lectures / "grafos"], IndexStore(index), embedder,
               vector_store=before.store.for_texts([]))
        time.sleep(0.1)
        after = services.retriever
        assert after is not before and after.data.live == IndexStore(index).live_version()
        assert after.store.client is before.store.client
        ids, _ = after.store.lexical("Dijkstra", 3)  # Milvus' sparse field, new statistics
        grafos = set(after.data.segments.loc[after.data.segments["lecture_id"] == "grafos",
                                             "corpus_id"].tolist())
        assert len(ids) and set(ids.tolist()) <= grafos
        hits = after.search("Dijkstra", 3, mode="bm25")
        assert hits and hits[0].lecture_id == "grafos"
    finally:
        services.close()
