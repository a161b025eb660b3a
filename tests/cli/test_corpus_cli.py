"""The ``aula`` corpus commands as a user runs them: real files, real index, the command's
own parsing, output, errors and exit code (run in this process, each with its settings read
afresh; the commands that must be killed and resumed run as processes elsewhere)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli.inprocess import Ran, run_aula
from tests.conftest import SAMPLES


def run(*args: str, index: Path, stdin: str | None = None) -> Ran:
    return run_aula(*args, stdin=stdin, AULA_INDEX_DIR=str(index))


@pytest.fixture(scope="module")
def cli_index(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    index = tmp_path_factory.mktemp("cli") / "index"
    res = run("ingest", str(SAMPLES), index=index)
    assert res.returncode == 0, res.stderr
    assert "2 aulas lidas" in res.stdout
    return index


def test_search_json_has_the_documented_keys(cli_index: Path) -> None:
    res = run("search", "qual a derivada do seno?", "-k", "3", "--json", index=cli_index)
    assert res.returncode == 0, res.stderr
    hits = json.loads(res.stdout)
    assert len(hits) == 3
    assert set(hits[0]) == {
        "corpus_id", "score", "lecture_id", "title", "url", "start", "end", "text",
        "answer_start", "unit_score",
    }
    assert hits[0]["start"] <= hits[0]["answer_start"] < hits[0]["end"]
    assert 0 < hits[0]["unit_score"] <= 1  # the best 30 s passage's cosine
    assert hits[0]["lecture_id"] == "derivadas"
    assert "cosseno" in hits[0]["text"]


def test_search_prints_the_report_list(cli_index: Path) -> None:
    res = run("search", "o que é sobreajuste?", "-k", "2", index=cli_index)
    assert res.returncode == 0, res.stderr
    assert "**Segmentos recuperados pelo E5**" in res.stdout
    assert res.stdout.count("- *Corpus ID:*") == 2
    assert "- *Início:* 00:0" in res.stdout


def test_search_reads_questions_from_stdin_one_array_per_line(cli_index: Path) -> None:
    res = run("search", "-", "--json", "-k", "2", index=cli_index,
              stdin="o que é a ReLU?\n\nderivada de x ao cubo\n")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 2
    assert json.loads(lines[1])[0]["lecture_id"] == "derivadas"


def test_lectures_and_remove(tmp_path: Path, cli_index: Path) -> None:
    index = tmp_path / "index"
    shutil.copytree(cli_index, index)
    listed = json.loads(run("lectures", "--json", index=index).stdout)
    assert {x["lecture_id"] for x in listed} == {"derivadas", "redes-neurais"}
    assert run("remove", "derivadas", index=index).returncode == 0
    listed = json.loads(run("lectures", "--json", index=index).stdout)
    assert [x["lecture_id"] for x in listed] == ["redes-neurais"]
    bad = run("remove", "nao-existe", index=index)
    assert bad.returncode == 1 and "nao-existe" in bad.stderr


def test_a_bad_file_is_named_and_the_rest_is_ingested(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(SAMPLES / "derivadas", src / "derivadas")
    (src / "quebrada").mkdir()
    (src / "quebrada" / "quebrada.srt").write_text(
        "1\n00:00:01,000 --> 00:00:04,000\nolá\n\n2\n00:00:0x,000 --> 00:00:09,000\ntchau\n"
    )
    (src / "vazia").mkdir()
    (src / "vazia" / "vazia.vtt").write_text("WEBVTT\n\n")
    index = tmp_path / "index"
    res = run("ingest", str(src), "--json", index=index)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert [x["lecture_id"] for x in summary["lectures"]] == ["derivadas"]
    assert "quebrada.srt" in summary["failed"][0]["error"]
    assert "line" in summary["failed"][0]["error"]
    assert any("vazia.vtt" in p for p in summary["empty"])


INCLUDE = ["--include", "**/sentence_translations.json", "--include", "derivadas/*"]
"""The README's --include for 3b1b-pt, and the sample lecture beside it."""


def _empty_beside(tmp_path: Path, second_timing: str) -> Path:
    """A lecture folder like 3b1b-pt's hilbert-curve: an empty sentence_translations.json
    beside an auto_generated.srt whose second cue has ``second_timing``."""
    src = tmp_path / "src"
    shutil.copytree(SAMPLES / "derivadas", src / "derivadas")
    lecture = src / "curva" / "portuguese"
    lecture.mkdir(parents=True)
    (lecture / "sentence_translations.json").write_text("[]")
    (lecture / "auto_generated.srt").write_text(
        "1\n00:00:01,000 --> 00:00:06,000\nA curva de Hilbert preenche o quadrado inteiro.\n\n"
        f"2\n{second_timing}\nCada ordem da curva dobra a resolução do caminho.\n")
    (lecture / "title.json").write_text('"Curva de Hilbert"')
    return src


def test_an_empty_transcript_is_read_from_the_other_transcript_in_its_folder(
        tmp_path: Path) -> None:
    """3b1b-pt's hilbert-curve has an empty sentence_translations.json beside a Portuguese
    auto_generated.srt: read with --include for the JSON files, the lecture is read from the
    SRT (the JSON's name says nothing of the lecture: its folder is the lecture), and the
    warning says so."""
    src = _empty_beside(tmp_path, "00:00:06,000 --> 00:00:12,000")
    index = tmp_path / "index"
    res = run("ingest", str(src), *INCLUDE, index=index)
    assert res.returncode == 0, res.stderr
    assert "sentence_translations.json: vazia; lida " in res.stderr
    assert "auto_generated.srt" in res.stderr
    summary = json.loads(run("ingest", str(src), *INCLUDE, "--json", index=index).stdout)
    assert summary["empty"] == []
    [rep] = summary["replaced"]
    assert rep["lecture_id"] == "curva" and rep["read"].endswith("auto_generated.srt")
    hits = json.loads(run("search", "a curva que preenche o quadrado", "--json",
                          index=index).stdout)
    hits = hits["hits"] if isinstance(hits, dict) else hits
    assert hits[0]["lecture_id"] == "curva"


def test_a_broken_transcript_tried_in_an_empty_ones_place_is_named_with_its_line(
        tmp_path: Path) -> None:
    """The only other transcript beside an empty one has a cue that cannot be read: the
    operator is told which file and line, and the rest of the ingest goes on."""
    src = _empty_beside(tmp_path, "00:00:06,000 -> depois")
    res = run("ingest", str(src), *INCLUDE, index=tmp_path / "index")
    assert res.returncode == 0, res.stderr
    [line] = [ln for ln in res.stderr.splitlines() if "não pôde ser lida" in ln]
    assert "auto_generated.srt" in line and "line 6" in line, line
    assert "transcrição vazia, ignorada" in res.stderr
    summary = json.loads(run("ingest", str(src), *INCLUDE, "--json",
                             index=tmp_path / "index").stdout)
    [bad] = summary["unreadable"]
    assert bad["path"].endswith("auto_generated.srt")
    assert any(lec["lecture_id"] == "derivadas" for lec in summary["lectures"])


def test_missing_index_is_one_clear_line(tmp_path: Path) -> None:
    res = run("search", "qualquer coisa", index=tmp_path / "nada")
    assert res.returncode == 1
    assert res.stderr.strip().count("\n") == 0
    assert "aula ingest" in res.stderr


def test_a_transcript_filed_under_two_lectures_is_reported_and_searched_once(
        tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(SAMPLES / "derivadas", src / "derivadas")
    # the derivatives transcript, filed under another lecture (whose id sorts first)
    (src / "calculo-integral").mkdir()
    shutil.copy(SAMPLES / "derivadas" / "derivadas.srt",
                src / "calculo-integral" / "calculo-integral.srt")
    index = tmp_path / "index"
    res = run("ingest", str(src), "--json", index=index)
    assert res.returncode == 0, res.stderr
    [rep] = json.loads(res.stdout)["repeated"]
    assert {rep["lecture_id"], rep["repeats"]} == {"derivadas", "calculo-integral"}
    assert rep["shared"] == 1.0
    # the text says "derivada" again and again: its title is "Derivadas: a taxa de variação"
    assert rep["searched"] == "derivadas"
    res = run("ingest", str(src), index=index)
    assert "a busca mostra só derivadas, cujo título combina com o texto" in res.stderr
    hits = json.loads(run("search", "o que é a derivada?", "--json", index=index).stdout)
    hits = hits["hits"] if isinstance(hits, dict) else hits
    assert hits and {h["lecture_id"] for h in hits} == {"derivadas"}
    res = run("ingest", str(SAMPLES / "redes-neurais"), index=index)
    assert res.returncode == 0 and "repete" not in res.stderr  # other lectures: no warning


def test_a_sentence_stretched_to_the_end_of_a_stream_is_cut_and_reported(tmp_path: Path) -> None:
    """A live stream's captions whose last sentence lasts to the end of the video (3b1b-pt's
    ldm-complex-numbers: 74 words from 18:47 to 1:22:10): the ingest says so, naming the file,
    and no search result spans the untranscribed hour."""
    lecture = tmp_path / "src" / "ao-vivo"
    lecture.mkdir(parents=True)
    sentences = [{"translatedText": f"A frase número {i} fala de números complexos e de rotações.",
                  "start": str(i * 4.0), "end": str(i * 4.0 + 3.8)} for i in range(60)]
    sentences.append({"translatedText": "Ok, parece que alguns de vocês vieram responder.",
                      "start": "240.0", "end": "4930.37"})
    (lecture / "sentence_translations.json").write_text(json.dumps(sentences), "utf-8")
    index = tmp_path / "index"
    res = run("ingest", str(tmp_path / "src"), index=index)
    assert res.returncode == 0, res.stderr
    assert "sentence_translations.json: 1 fala(s) duram muito mais que suas palavras" in res.stderr
    assert "4690 s para 8 palavras, em 4:00" in res.stderr
    res = run("ingest", str(tmp_path / "src"), "--json", index=index)
    [note] = json.loads(res.stdout)["stretched"]
    assert note["path"].endswith("sentence_translations.json") and note["words"] == 8
    res = run("search", "alguns de vocês vieram responder", "-k", "5", "--json", index=index)
    hits = json.loads(res.stdout)
    assert hits and max(h["end"] for h in hits) < 300


def test_fit_fusion_reads_lectures_by_name_and_says_which_it_cannot_find(
        tmp_path: Path, cli_index: Path) -> None:
    """Gold spans over this index fit its weights; a question whose lecture the index does not
    hold is named and left out, and a set written for another index is refused."""
    index = tmp_path / "index"
    shutil.copytree(cli_index, index)
    rows = [
        {"id": "d1", "question": "quanto vale a derivada de x ao quadrado?",
         "gold_lecture": "derivadas", "gold_start": 41.4, "gold_end": 61.7},
        {"id": "d2", "question": "o que é a derivada geometricamente?",
         "gold_lecture": "Derivadas: a taxa de variação", "gold_start": 17.4, "gold_end": 26.4},
        {"id": "n1", "question": "o que a ReLU faz com entradas negativas?",
         "gold_lecture": "https://youtube.com/watch?v=AULA0000001&t=60",
         "gold_start": 0.0, "gold_end": 600.0},
        {"id": "x1", "question": "o que é uma integral?", "gold_lecture": "integrais",
         "gold_start": 0.0, "gold_end": 60.0},
    ]
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    res = run("fit-fusion", str(gold), "--json", index=index)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["questions"] == 3 and report["fitted"]["span_hit@5"] == 1.0
    assert (index / "fusion.json").exists()
    assert "question x1: gold_lecture 'integrais' is no lecture of this index" in res.stderr
    assert "d2" not in res.stderr and "n1" not in res.stderr
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps(rows[-1]) + "\n")
    res = run("fit-fusion", str(other), index=index)
    assert res.returncode == 1 and res.stderr.count("erro:") == 1
    assert "no question's gold lecture is in the index" in res.stderr
    # no index at all is said as such, not as a set of unknown lectures
    res = run("fit-fusion", str(gold), index=tmp_path / "missing")
    assert res.returncode == 1 and res.stderr.count("erro:") == 1
    assert "no index in" in res.stderr and "aviso:" not in res.stderr
