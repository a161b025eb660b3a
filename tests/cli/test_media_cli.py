"""``aula ingest`` of a course folder of recordings: transcribed once, read again after."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli.test_corpus_cli import run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def first_ingest(recorded_course, tmp_path_factory) -> tuple[Path, dict]:  # type: ignore[no-untyped-def]
    index = tmp_path_factory.mktemp("media-cli") / "index"
    res = run("ingest", str(recorded_course.root), "--language", "pt", "--json", index=index)
    assert res.returncode == 0, res.stderr
    return index, json.loads(res.stdout)


def test_a_folder_of_a_video_an_audio_and_a_transcript_is_three_lectures(
    first_ingest: tuple[Path, dict],
) -> None:
    index, summary = first_ingest
    formats = {lec["lecture_id"]: lec["format"] for lec in summary["lectures"]}
    assert formats == {"aula-redes": "media", "aula-imagens": "media",
                       "derivadas": "srt"}
    assert summary["total_lectures"] == 3
    assert summary["transcribed"] == 2
    by_id = {m["lecture_id"]: m for m in summary["media"]}
    assert by_id["aula-redes"]["transcribed"] and by_id["aula-redes"]["rtf"] > 0
    assert 20 < by_id["aula-redes"]["audio_seconds"] < 40
    transcript = json.loads(Path(by_id["aula-redes"]["transcript"]).read_text())
    assert transcript["language"] == "pt"
    assert Path(by_id["aula-redes"]["transcript"]).parent == index / "transcripts"
    words = [w for s in transcript["segments"] for w in s["words"]]
    assert all(s["start"] == s["words"][0]["start"] for s in transcript["segments"])
    assert "sigmoide" in transcript["text"].lower() or "zero e um" in transcript["text"].lower()
    assert len(words) > 20


def test_the_second_ingest_transcribes_nothing(first_ingest: tuple[Path, dict]) -> None:
    index, first = first_ingest
    res = run("ingest", str(Path(first["media"][0]["path"]).parent), "--json", index=index)
    assert res.returncode == 0, res.stderr
    again = json.loads(res.stdout)
    assert again["transcribed"] == 0
    assert {m["lecture_id"] for m in again["media"]} == {"aula-redes", "aula-imagens"}
    assert not any(m["transcribed"] for m in again["media"])
    assert again["unchanged"] is True
    lectures = json.loads(run("lectures", "--json", index=index).stdout)
    assert len(lectures) == 3


def test_a_transcript_beside_the_recording_wins_and_a_broken_file_is_named(
    recorded_course, tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    folder = tmp_path / "curso"
    folder.mkdir()
    shutil.copy(recorded_course.root / "aula-redes.mp4", folder / "aula-redes.mp4")
    shutil.copy(recorded_course.root / "derivadas" / "derivadas.srt", folder / "aula-redes.srt")
    (folder / "quebrado.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 not really a video")
    res = run("ingest", str(folder), "--json", index=tmp_path / "index")
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert [lec["format"] for lec in summary["lectures"]] == ["srt"]
    assert summary["transcribed"] == 0
    (failed,) = summary["failed"]
    assert failed["path"].endswith("quebrado.mp4") and "no audio" in failed["error"]
