"""Each transcript format reads into the cues a user would expect, and bad files say where."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from corpus.models import Cue
from corpus.readers import read_cues
from corpus.readers.errors import TranscriptError
from corpus.readers.table import read_table
from corpus.readers.text import read_text

DATA = Path(__file__).resolve().parents[1] / "data" / "transcripts"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "corpora"


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path


def test_srt_times_text_bom_tags_and_empty_cues() -> None:
    fmt, cues = read_cues(DATA / "aula.srt")
    assert fmt == "srt"
    assert cues == [
        Cue(1.0, 4.5, "Olá, turma. Hoje: derivadas."),
        Cue(5.25, 9.0, "A derivada & a taxa."),
        Cue(3723.004, 3724.0, "Fim."),
    ]


def test_vtt_skips_header_note_style_and_strips_voice_tags() -> None:
    fmt, cues = read_cues(DATA / "aula.vtt")
    assert fmt == "vtt"
    assert cues == [
        Cue(1.0, 4.5, "Bem-vindos à aula de hoje."),
        Cue(5.25, 9.0, "Gradiente descendente <3"),
        Cue(3723.004, 3724.0, "Fim."),
    ]


def test_whisper_json_segments() -> None:
    fmt, cues = read_cues(DATA / "whisper.json")
    assert fmt == "whisper_json"
    assert cues == [Cue(0.0, 2.5, "Hello there."), Cue(2.5, 6.25, "General idea.")]


def test_sentence_json_prefers_translation_and_repairs_swapped_times() -> None:
    fmt, cues = read_cues(DATA / "sentences.json")
    assert fmt == "sentence_json"
    assert cues == [
        Cue(4.22, 5.4, "Isso é um três."),
        Cue(6.0, 8.5, "Uma frase sem tradução."),
        Cue(10.0, 12.0, "Ela termina antes de começar."),
    ]


def test_sentence_json_triples() -> None:
    fmt, cues = read_cues(DATA / "triples.json")
    assert fmt == "sentence_json"
    assert cues[1] == Cue(6.06, 13.72, "It is sloppily written.")


def test_csv_table_holds_several_lectures_with_mixed_time_formats() -> None:
    tables = read_table(DATA / "table.csv")
    assert tables == {
        "calculo-1": [
            Cue(0.0, 4.5, "Limites e continuidade."),
            Cue(5.0, 9.25, "Derivadas, enfim."),
        ],
        "calculo-2": [Cue(60.0, 90.5, "Integrais.")],
    }


def test_parquet_table(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    pd.DataFrame(
        {"lecture": ["a", "a"], "start": [0.0, 2.0], "end": [2.0, 3.5], "text": ["um", "dois"]}
    ).to_parquet(path)
    assert read_cues(path) == ("table", [Cue(0.0, 2.0, "um"), Cue(2.0, 3.5, "dois")])


def test_srt_bad_timestamp_names_file_and_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "a.srt",
        "1\n00:00:01,000 --> 00:00:04,000\nolá\n\n2\n00:01:xx,000 --> 00:01:09,000\ntchau\n",
    )
    with pytest.raises(TranscriptError) as info:
        read_cues(path)
    assert info.value.line == 6
    assert str(info.value) == f"{path}: line 6: bad timestamp '00:01:xx,000'"


def test_vtt_cue_without_timing_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "a.vtt", "WEBVTT\n\n00:01.000 --> 00:02.000\nok\n\nsolta\n")
    with pytest.raises(TranscriptError, match=r"a\.vtt: line 6: expected a cue timing line"):
        read_cues(path)


def test_srt_end_before_start_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "a.srt", "1\n00:00:05,000 --> 00:00:04,000\noi\n")
    with pytest.raises(TranscriptError, match="line 2: cue ends before it starts"):
        read_cues(path)


@pytest.mark.parametrize("ext", ["srt", "vtt"])
def test_a_cue_ending_where_the_one_before_ends_is_read_as_an_instant(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, ext: str) -> None:
    """Auto-generated captions write cues like "00:04:28,420 --> 00:04:28,020" after a cue
    ending at 00:04:28,020: the lecture is read, that cue as an instant, and the line is logged.
    An inverted cue that does not end where the one before ends is still an error."""
    head = "WEBVTT\n\n" if ext == "vtt" else ""
    sep = "." if ext == "vtt" else ","
    body = (f"1\n00:04:21{sep}749 --> 00:04:28{sep}020\numa casa de 2, uma casa de 4\n\n"
            f"2\n00:04:28{sep}420 --> 00:04:28{sep}020\nO ritmo da contagem é mais rápido\n\n"
            f"3\n00:04:28{sep}420 --> 00:04:29{sep}540\nmas isso o torna mais perceptível.\n")
    _, cues = read_cues(write(tmp_path / f"auto.{ext}", head + body))
    assert [(c.start, c.end) for c in cues] == [(261.749, 268.02), (268.42, 268.42),
                                                (268.42, 269.54)]
    assert cues[1].text == "O ritmo da contagem é mais rápido"
    line = 8 if ext == "vtt" else 6
    assert f"auto.{ext}: line {line}: cue ends at 268.02, before it starts" in caplog.text
    inverted = body.replace(f"28{sep}420 --> 00:04:28{sep}020", f"28{sep}420 --> 00:04:27{sep}000")
    broken = write(tmp_path / f"broken.{ext}", head + inverted)
    with pytest.raises(TranscriptError, match=f"line {line}: cue ends before it starts"):
        read_cues(broken)


def test_json_entry_missing_a_field_names_the_entry(tmp_path: Path) -> None:
    path = write(
        tmp_path / "talk.json",
        '[{"start": 0, "end": 1, "text": "a"}, {"start": 1, "end": 2, "text": "b"},'
        ' {"start": 2, "end": 3, "text": "c"}, {"start": 3, "text": "d"}]',
    )
    with pytest.raises(TranscriptError) as info:
        read_cues(path)
    assert info.value.entry == 3
    assert str(info.value) == f"{path}: entry 3: missing 'end'"


def test_whisper_segment_with_bad_time_names_the_entry(tmp_path: Path) -> None:
    path = write(tmp_path / "w.json", '{"segments": [{"start": "x", "end": 1, "text": "a"}]}')
    with pytest.raises(TranscriptError, match="entry 0: 'start' is not a number"):
        read_cues(path)


def test_broken_json_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "w.json", '{"segments": [\n  {"start": 0,,}\n]}')
    with pytest.raises(TranscriptError, match=r"w\.json: line 2: invalid JSON"):
        read_cues(path)


def test_latin1_file_is_decoded(tmp_path: Path) -> None:
    srt = "1\n00:00:01,000 --> 00:00:02,000\naula de cálculo\n"
    path = write(tmp_path / "a.srt", srt, "latin-1")
    assert read_text(path).endswith("aula de cálculo\n")
    assert read_cues(path)[1] == [Cue(1.0, 2.0, "aula de cálculo")]


def test_binary_garbage_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "lixo.srt"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(TranscriptError, match=r"lixo\.srt: line 1: not UTF-8 or Latin-1 text"):
        read_cues(path)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("e.srt", ""),
        ("e.vtt", "WEBVTT\n\n"),
        ("e.json", ""),
        ("l.json", "[]"),
        ("w.json", '{"segments": []}'),
        ("n.srt", "1\n00:00:01,000 --> 00:00:02,000\n\n"),
    ],
)
def test_files_without_cues_read_as_empty(tmp_path: Path, name: str, text: str) -> None:
    assert read_cues(write(tmp_path / name, text))[1] == []


def test_json_of_another_shape_is_not_a_transcript(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="not a transcript"):
        read_cues(write(tmp_path / "config.json", '{"name": "x"}'))


@pytest.mark.skipif(not SHARED.exists(), reason="../shared/corpora absent")
def test_real_corpus_files_parse() -> None:
    fmt, cues = read_cues(SHARED / "karpathy-en" / "micrograd" / "micrograd.json")
    assert fmt == "whisper_json" and len(cues) > 1000 and cues[0].text.startswith("Hello")
    sentences = SHARED / "3b1b-pt/2017/neural-networks/portuguese/sentence_translations.json"
    fmt, cues = read_cues(sentences)
    assert fmt == "sentence_json" and cues[0] == Cue(4.22, 5.4, "Isso é um três.")
