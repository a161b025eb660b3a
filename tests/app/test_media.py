"""Recorded lectures through the service: the recording served with range requests (and
nothing else), and a question answered with a citation that opens where the answer is spoken."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.api.media import served_file
from app.config import Settings
from app.main import create_app
from tests.app.fake_llm import FakeLLMServer
from tests.servers import ServedApp

pytestmark = pytest.mark.slow
SIGMOID = "A função sigmoide transforma qualquer número em um valor entre zero e um"


def responder(messages: list[dict]) -> str:
    user = messages[-1]["content"]
    if messages[0]["content"].startswith("Translate the student's question"):
        return str(user)
    if "PERGUNTA DE UM ESTUDANTE" in user or "AFIRMAÇÃO:" in user:  # the checks
        return "SIM@0.95"
    return f"{SIGMOID} [1]."


def serve(store, media_dirs: str, llm_url: str) -> ServedApp:  # type: ignore[no-untyped-def]
    return ServedApp(create_app(Settings(
        index_dir=store.root, llm_base_url=llm_url,
        llm_model="fake-model", media_dirs=media_dirs)))


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(responder) as srv:
        yield srv


@pytest.fixture(scope="module")
def site(media_index, recorded_course, llm) -> Iterator[str]:  # type: ignore[no-untyped-def]
    with serve(media_index[0], str(recorded_course.root), llm.base_url) as srv:
        yield srv.url


def test_the_recording_is_served_whole_and_in_ranges(site: str, recorded_course) -> None:  # type: ignore[no-untyped-def]
    data = (recorded_course.root / "aula-redes.mp4").read_bytes()
    whole = httpx.get(site + "/media/file/aula-redes")
    assert whole.status_code == 200 and whole.content == data
    assert whole.headers["content-type"] == "video/mp4"
    assert whole.headers["accept-ranges"] == "bytes"
    part = httpx.get(site + "/media/file/aula-redes", headers={"Range": "bytes=100-199"})
    assert part.status_code == 206 and part.content == data[100:200]
    assert part.headers["content-range"] == f"bytes 100-199/{len(data)}"
    tail = httpx.get(site + "/media/file/aula-redes", headers={"Range": "bytes=-50"})
    assert tail.status_code == 206 and tail.content == data[-50:]
    past = httpx.get(site + "/media/file/aula-redes",
                     headers={"Range": f"bytes={len(data) + 10}-"})
    assert past.status_code == 416
    listed = httpx.get(site + "/media/lectures").json()
    assert listed == {
        "aula-redes": {"src": "/media/file/aula-redes", "kind": "video", "type": "video/mp4"},
        "aula-imagens": {"src": "/media/file/aula-imagens", "kind": "audio",
                         "type": "audio/mpeg"}}


@pytest.mark.parametrize("path", [
    "/media/file/derivadas",  # an indexed lecture without a recording
    "/media/file/nao-existe",
    "/media/file/../../../../etc/passwd",
    "/media/file/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "/media/file/..%2f..%2f..%2fetc%2fpasswd",
    "/media/file//etc/passwd",
    "/media/file/aula-redes/../../../etc/passwd",
    "/media/file/aula-redes.mp4",
])
def test_anything_but_an_indexed_recording_is_refused(site: str, path: str) -> None:
    with httpx.Client(base_url=site) as client:
        res = client.send(httpx.Request("GET", site + path))  # the path as typed
    assert res.status_code == 404
    assert b"root:" not in res.content


def test_a_file_beside_the_recordings_that_no_lecture_names_is_refused(
    site: str, recorded_course,  # type: ignore[no-untyped-def]
) -> None:
    (recorded_course.root / "segredo.mp4").write_bytes(b"not indexed")
    try:
        assert httpx.get(site + "/media/file/segredo").status_code == 404
    finally:
        (recorded_course.root / "segredo.mp4").unlink()


def test_recordings_outside_the_configured_folders_are_not_served(
    media_index, tmp_path: Path, llm: FakeLLMServer,  # type: ignore[no-untyped-def]
) -> None:
    for dirs in ("", str(tmp_path)):
        with serve(media_index[0], dirs, llm.base_url) as srv:
            assert httpx.get(srv.url + "/media/file/aula-redes").status_code == 404
            assert httpx.get(srv.url + "/media/lectures").json() == {}


def test_a_link_out_of_the_media_folder_is_not_followed(tmp_path: Path) -> None:
    outside, folder = tmp_path / "fora", tmp_path / "midia"
    outside.mkdir()
    folder.mkdir()
    (outside / "secret.mp4").write_bytes(b"x")
    os.symlink(outside / "secret.mp4", folder / "aula.mp4")
    (folder / "real.mp3").write_bytes(b"y")
    assert served_file({"source": str(folder / "aula.mp4")}, [folder.resolve()]) is None
    assert served_file({"source": str(folder / "real.mp3")}, [folder.resolve()]) == (
        folder / "real.mp3").resolve()
    # a transcript's recording is the one beside it
    (folder / "real.srt").write_text("")
    assert served_file({"source": str(folder / "real.srt")}, [folder.resolve()]) == (
        folder / "real.mp3").resolve()


def test_the_answer_cites_the_second_the_sentence_is_spoken(site: str, recorded_course) -> None:  # type: ignore[no-untyped-def]
    """End to end: espeak-ng speech in an .mp4 -> Whisper base -> index -> /ask: the cited
    sentence's link opens within 1.5 s of where it is spoken."""
    spoken = recorded_course.video.starts[1]
    hits = httpx.get(site + "/search", params={"q": "o que a função sigmoide faz?", "k": 3}
                     ).json()["hits"]
    assert hits[0]["lecture_id"] == "aula-redes"
    body = httpx.post(site + "/ask", json={"question": "O que a função sigmoide faz?"},
                      timeout=120).json()
    first = body["sentences"][0]
    assert first["text"].startswith(SIGMOID)
    (n,) = first["cites"]
    assert body["moments"][n - 1]["lecture_id"] == "aula-redes"
    assert abs(first["at"] - spoken) <= 1.5, (first["at"], spoken)
    cues = httpx.get(site + "/media/cues/aula-redes", params={"start": 0, "end": 60}).json()
    said = min(cues, key=lambda c: abs(c["start"] - spoken))
    assert abs(said["start"] - spoken) <= 1.5
    assert "zero" in said["text"].lower()
