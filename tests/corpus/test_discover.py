"""Discovery picks one transcript per lecture, names it readably, and finds its metadata."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus.discover import discover, glob_regex, load
from corpus.metadata import ManifestError, lecture_id_for, load_manifest, sidecar_meta
from corpus.models import Cue

DATA = Path(__file__).resolve().parents[1] / "data" / "transcripts"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "corpora"
SRT = "1\n00:00:01,000 --> 00:00:02,000\nolá\n"
SENTENCES = json.dumps([{"input": "hi", "translatedText": "oi", "start": 1.0, "end": 2.0}])
WHISPER = json.dumps({"text": "hi", "segments": [{"id": 0, "start": 0, "end": 1, "text": "hi"}]})


def put(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def threeb1b(tmp_path: Path) -> Path:
    """A 3b1b/captions-like tree: several transcripts per video, sidecars at two levels."""
    root = tmp_path / "3b1b"
    for video in ("2017/neural-networks", "2019/clacks"):
        put(root, f"{video}/video_url.txt", f"\nhttps://youtu.be/{video[-5:]}\n")
        put(
            root,
            f"{video}/portuguese/title.json",
            json.dumps(
                {"input": "English title", "translatedText": f"Título {video}", "n_reviews": 1}
            ),
        )
        put(root, f"{video}/portuguese/sentence_translations.json", SENTENCES)
        put(root, f"{video}/portuguese/community.srt", SRT)
        put(root, f"{video}/english/sentence_timings.json", json.dumps([["hi", 1.0, 2.0]]))
    return root


def test_lecture_ids_for_3b1b_and_karpathy_layouts(tmp_path: Path) -> None:
    root = tmp_path / "c"
    assert (
        lecture_id_for(root / "2017/neural-networks/portuguese/sentence_translations.json", root)
        == "2017/neural-networks"
    )
    assert lecture_id_for(root / "makemore1/makemore1.json", root) == "makemore1"
    assert lecture_id_for(root / "calc/aula-01.srt", root) == "calc/aula-01"
    root.mkdir()
    talk = put(tmp_path, "x/talk.srt", SRT)
    assert lecture_id_for(talk, talk) == "talk"


def test_include_keeps_only_matching_files_with_sidecar_metadata(threeb1b: Path) -> None:
    found = discover([threeb1b], include=["**/portuguese/sentence_translations.json"])
    assert not found.failed
    assert [(f.meta.lecture_id, f.fmt) for f in found.lectures] == [
        ("2017/neural-networks", "sentence_json"),
        ("2019/clacks", "sentence_json"),
    ]
    meta = found.lectures[0].meta
    assert meta.title == "Título 2017/neural-networks"
    assert meta.url == "https://youtu.be/works"
    assert load(found.lectures[0]) == [Cue(1.0, 2.0, "oi")]


def test_sidecar_from_a_parent_folder_and_nearest_wins(tmp_path: Path) -> None:
    put(tmp_path, "curso/video_url.txt", "https://example.org/curso\n")
    put(tmp_path, "curso/title.txt", "Curso inteiro\n")
    near = put(tmp_path, "curso/aula1/title.json", '"Aula um"')
    srt = put(tmp_path, "curso/aula1/aula1.srt", SRT)
    assert sidecar_meta(srt, tmp_path / "curso") == {
        "url": "https://example.org/curso",
        "title": "Aula um",
    }
    near.unlink()
    assert sidecar_meta(srt, tmp_path / "curso")["title"] == "Curso inteiro"
    assert sidecar_meta(srt, tmp_path / "curso" / "aula1") == {}


def test_same_lecture_in_two_formats_reads_the_richer(tmp_path: Path) -> None:
    put(tmp_path, "makemore1/makemore1.srt", SRT)
    json_path = put(tmp_path, "makemore1/makemore1.json", WHISPER)
    (item,) = discover([tmp_path]).lectures
    assert (item.meta.lecture_id, item.path, item.fmt) == ("makemore1", json_path, "whisper_json")
    assert item.skipped == [tmp_path / "makemore1/makemore1.srt"]
    assert item.meta.title == "Makemore1"


def test_default_title_is_the_humanised_last_part(threeb1b: Path) -> None:
    for title in threeb1b.rglob("title.json"):
        title.unlink()
    found = discover([threeb1b], include=["**/sentence_translations.json"])
    assert found.lectures[0].meta.title == "Neural networks"


def test_manifest_overrides_sidecar_title(threeb1b: Path, tmp_path: Path) -> None:
    manifest = put(
        tmp_path,
        "manifest.csv",
        (
            "path,lecture_id,title,url,course\n"
            "3b1b/2017/neural-networks,,Redes neurais (manifesto),,Deep learning\n"
            ",2019/clacks,Colisões,https://example.org/clacks,\n"
        ),
    )
    found = discover(
        [threeb1b], include=["**/portuguese/sentence_translations.json"], manifest=manifest
    )
    nn, clacks = (f.meta for f in found.lectures)
    assert (nn.title, nn.course, nn.url) == (
        "Redes neurais (manifesto)",
        "Deep learning",
        "https://youtu.be/works",
    )
    assert (clacks.title, clacks.url) == ("Colisões", "https://example.org/clacks")


def test_manifest_yaml_can_rename_a_lecture(tmp_path: Path) -> None:
    put(tmp_path, "src/aula.srt", SRT)
    manifest = put(tmp_path, "m.yaml", "- path: src/aula.srt\n  lecture_id: calc/aula-01\n")
    (item,) = discover([tmp_path / "src"], manifest=manifest).lectures
    assert item.meta.lecture_id == "calc/aula-01"
    assert item.meta.title == "Aula 01"


def test_bad_manifest_row_is_named(tmp_path: Path) -> None:
    manifest = put(tmp_path, "m.csv", "path,title\n,sem caminho\n")
    with pytest.raises(ManifestError, match=r"m\.csv: line 2: row has neither 'path'"):
        load_manifest(manifest)
    manifest = put(tmp_path, "m.yaml", "- lecture_id: a\n  titel: typo\n")
    with pytest.raises(ManifestError, match=r"m\.yaml: row 1: unknown column 'titel'"):
        load_manifest(manifest)


@pytest.mark.parametrize(
    ("raw", "url"),
    [
        ("youtube.com/watch?v=abc", "https://youtube.com/watch?v=abc"),
        ("www.youtube.com/watch?v=abc&t=5", "https://www.youtube.com/watch?v=abc&t=5"),
        ("youtu.be/abc", "https://youtu.be/abc"),
        ("videos.example.edu:8443/aula.mp4", "https://videos.example.edu:8443/aula.mp4"),
        ("//videos.example.edu/aula.mp4", "https://videos.example.edu/aula.mp4"),
        ("http://videos.example.edu/aula.mp4", "http://videos.example.edu/aula.mp4"),
        ("javascript:alert(document.cookie)", None),
        ("JavaScript://youtube.com/%0aalert(1)", None),
        ("data:text/html,<script>alert(1)</script>", None),
        ("file:///etc/passwd", None),
        ("https://", None),
    ],
)
def test_a_video_url_gets_https_and_only_web_links_are_kept(
    tmp_path: Path, raw: str, url: str | None
) -> None:
    put(tmp_path, "aula/video_url.txt", raw + "\n")
    put(tmp_path, "aula/aula.srt", SRT)
    (item,) = discover([tmp_path]).lectures
    assert item.meta.url == (url or "")  # a link that is not http(s) is logged and dropped
    manifest = put(tmp_path, "m.csv", f'lecture_id,url\naula,"{raw}"\n')
    if url is None:
        with pytest.raises(ManifestError, match=r"m\.csv: line 2: url"):
            load_manifest(manifest)
    else:
        assert load_manifest(manifest)["aula"]["url"] == url


def test_table_yields_one_lecture_per_id(tmp_path: Path) -> None:
    table = put(tmp_path, "t/aulas.csv", (DATA / "table.csv").read_text())
    put(tmp_path, "t/notas.csv", "nome,nota\nana,10\n")
    found = discover([tmp_path / "t"])
    assert [(f.meta.lecture_id, f.fmt, f.path) for f in found.lectures] == [
        ("calculo-1", "table", table),
        ("calculo-2", "table", table),
    ]
    assert load(found.lectures[1]) == [Cue(60.0, 90.5, "Integrais.")]
    assert not found.failed


def test_unrecognised_files_are_ignored_unless_asked_for(tmp_path: Path) -> None:
    put(tmp_path, "a/a.srt", SRT)
    put(tmp_path, "a/config.json", '{"name": "x"}')
    put(tmp_path, "a/notes.md", "oi")
    assert [f.meta.lecture_id for f in discover([tmp_path]).lectures] == ["a"]
    assert not discover([tmp_path]).failed
    asked = discover([tmp_path], include=["**/*.json"])
    assert asked.lectures == []
    assert [p.name for p, _ in asked.failed] == ["config.json"]


def test_broken_file_is_reported_at_load_and_empty_file_is_empty(tmp_path: Path) -> None:
    put(tmp_path, "quebrada/quebrada.srt", SRT + "\n2\n00:00:0x,000 --> 00:00:09,000\ntchau\n")
    put(tmp_path, "vazia/vazia.vtt", "WEBVTT\n\n")
    broken, empty = discover([tmp_path]).lectures
    with pytest.raises(ValueError, match=r"quebrada\.srt: line 6"):
        load(broken)
    assert load(empty) == []


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        (
            "**/portuguese/sentence_translations.json",
            "2017/nn/portuguese/sentence_translations.json",
            True,
        ),
        ("**/portuguese/sentence_translations.json", "portuguese/sentence_translations.json", True),
        (
            "**/portuguese/sentence_translations.json",
            "2017/nn/english/sentence_timings.json",
            False,
        ),
        ("2017/*/portuguese/*.json", "2017/nn/portuguese/title.json", True),
        ("2017/*/portuguese/*.json", "2017/a/b/portuguese/x.json", False),
        ("*.srt", "a/b/c.srt", True),
        ("a/**", "a/b/c.srt", True),
        ("a/[!x]?.srt", "a/bc.srt", True),
    ],
)
def test_include_globs(pattern: str, path: str, expected: bool) -> None:
    assert bool(glob_regex(pattern).fullmatch(path)) is expected


@pytest.mark.skipif(not SHARED.exists(), reason="../shared/corpora absent")
def test_real_karpathy_folder_prefers_whisper_json() -> None:
    found = discover([SHARED / "karpathy-en"])
    assert len(found.lectures) == 9 and not found.failed
    assert {f.fmt for f in found.lectures} == {"whisper_json"}
    assert all(len(f.skipped) == 1 and f.skipped[0].suffix == ".srt" for f in found.lectures)


def test_linked_lecture_folders_are_followed_once_and_loops_end(tmp_path: Path) -> None:
    """Lecture folders that are symbolic links (into a shared disk) are read like folders; a
    link back to an ancestor and a second link to the same folder read nothing twice."""
    disk = tmp_path / "disk"
    put(disk, "aula-1/aula-1.srt", SRT)
    put(disk, "aula-2/aula-2.srt", SRT)
    course = tmp_path / "curso"
    course.mkdir()
    (course / "aula-1").symlink_to(disk / "aula-1", target_is_directory=True)
    (course / "aula-2").symlink_to(disk / "aula-2", target_is_directory=True)
    (course / "de-novo").symlink_to(disk / "aula-1", target_is_directory=True)
    (disk / "aula-2" / "volta").symlink_to(course, target_is_directory=True)  # a loop
    found = discover([course])
    assert sorted(f.meta.lecture_id for f in found.lectures) == ["aula-1", "aula-2"]
    assert found.failed == []
    assert load(found.lectures[0]) == [Cue(1.0, 2.0, "olá")]
