"""``aula ingest --ray`` on a folder of recordings: Ray actors (Ray started locally with 2 CPUs)
transcribe them into the transcripts the local path makes, where the next ingest finds them,
and a file they cannot decode is named and skipped."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from corpus.asr import AsrOptions, MediaTranscripts, Transcriber
from corpus.index import IndexStore
from corpus.ingest import ingest
from tests.conftest import CACHE

pytestmark = pytest.mark.slow


@pytest.fixture()
def ray_local() -> Iterator[None]:
    from corpus.ray_embed import start_ray

    started = start_ray("local", 2)
    yield
    if started:
        import ray

        ray.shutdown()


def segments(transcript: str) -> list[tuple[float, float, str, int]]:
    data = json.loads(Path(transcript).read_text())
    return [(s["start"], s["end"], s["text"], len(s["words"])) for s in data["segments"]]


def test_recordings_transcribed_on_ray_are_those_transcribed_here(
    ray_local, recorded_course, media_index, embedder, tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    from corpus.ray_asr import RayTranscripts

    course = tmp_path / "curso"
    shutil.copytree(recorded_course.root, course)
    (course / "quebrada.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 not a video")
    store = IndexStore(tmp_path / "index")
    asr = Transcriber(AsrOptions(language="pt", cache_dir=CACHE))
    on_ray = RayTranscripts(store.root / "transcripts", asr, address="local", workers=2)
    summary = ingest([course], store, embedder, media=on_ray)

    assert summary.transcribed == 2
    assert [f["path"] for f in summary.failed] == [str(course / "quebrada.mp4")]
    here = {m["lecture_id"]: m for m in media_index[1].media}
    there = {m["lecture_id"]: m for m in summary.media}
    assert set(there) == set(here) == {"aula-redes", "aula-imagens"}
    for lid in here:
        assert there[lid]["transcribed"] and there[lid]["rtf"] > 0
        assert Path(there[lid]["transcript"]).parent == store.root / "transcripts"
        assert segments(there[lid]["transcript"]) == segments(here[lid]["transcript"]), lid
    mine = store.load(with_faiss=False).segments
    local = media_index[0].load(with_faiss=False).segments
    cols = ["lecture_id", "start", "end", "text"]
    assert mine[cols].sort_values(cols).reset_index(drop=True).equals(
        local[cols].sort_values(cols).reset_index(drop=True))

    # the next ingest, without Ray, finds them
    again = ingest([course], store, embedder,
                   media=MediaTranscripts(store.root / "transcripts", asr))
    assert again.transcribed == 0
    assert {m["lecture_id"] for m in again.media} == {"aula-redes", "aula-imagens"}
