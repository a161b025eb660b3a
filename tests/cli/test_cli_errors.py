"""Every failure a user can cause ends the command with one ``erro:`` line and exit code 1;
a bug (a plain ``ValueError``) keeps its traceback."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import typer
from sqlalchemy.exc import OperationalError

from app.cli.common import one_line_errors
from app.db import store
from app.db.session import open_database
from app.embedded_llm import EmbeddedLLMError, ModelAssemblyError
from app.llm import LLMError
from corpus.errors import InputError
from corpus.index import IndexNotFound
from eval.questions import QuestionsError
from tests.cli.inprocess import Ran, run_aula
from tests.conftest import SAMPLES
from tests.review.conftest import answer_body
from tests.review.test_store import NOW


def aula(*args: str, **env: str) -> Ran:
    return run_aula(*args, **env)


def one_line(res: Ran) -> str:
    """The error line, after checking it is the only thing the command said about it."""
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr, res.stderr
    errors = [line for line in res.stderr.splitlines() if line.startswith("erro: ")]
    assert len(errors) == 1, res.stderr
    return errors[0]


@pytest.mark.parametrize("exc", [
    InputError("perguntas.csv: row 3: the question is empty"),
    QuestionsError("x.csv: no 'question' column"),
    IndexNotFound("no index in /tmp/x"),
    LLMError("LLM endpoint http://127.0.0.1:9/v1 failed"),
    EmbeddedLLMError("the embedded llama.cpp server did not start"),
    ModelAssemblyError("part 3 is missing"),
    OperationalError("BEGIN IMMEDIATE", {}, sqlite3.OperationalError("database is locked")),
    FileNotFoundError(2, "No such file or directory", "perguntas.csv"),
    UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
])
def test_user_errors_are_one_line_and_exit_1(exc: Exception,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as caught, one_line_errors():
        raise exc
    assert caught.value.exit_code == 1
    err = capsys.readouterr().err
    assert err.startswith("erro: ") and err.count("\n") == 1
    if isinstance(exc, OperationalError):
        assert err == "erro: database unavailable: database is locked\n"


def test_a_plain_value_error_is_a_bug_and_keeps_its_traceback() -> None:
    with pytest.raises(ValueError, match="bug"), one_line_errors():
        raise ValueError("bug")
    with pytest.raises(KeyError), one_line_errors():
        raise KeyError("bug")


def test_ingest_follows_linked_lecture_folders(tmp_path: Path) -> None:
    course = tmp_path / "curso"
    course.mkdir()
    for lecture in ("derivadas", "redes-neurais"):
        (course / lecture).symlink_to(SAMPLES / lecture, target_is_directory=True)
    (course / "redes-neurais-de-novo").symlink_to(SAMPLES / "redes-neurais")
    res = aula("ingest", str(course), "--index", str(tmp_path / "idx"))
    assert res.returncode == 0, res.stderr
    assert "2 aulas lidas" in res.stdout


def test_ingest_that_reads_nothing_fails_and_leaves_no_index(tmp_path: Path) -> None:
    empty = tmp_path / "curso"
    (empty / "aula-1").mkdir(parents=True)
    (empty / "aula-1" / "notas.txt").write_text("nada aqui")
    res = aula("ingest", str(empty), "--index", str(tmp_path / "idx"))
    line = one_line(res)
    assert f"no lecture read from {empty}" in line and "no transcript found" in line
    assert not (tmp_path / "idx" / "CURRENT").exists()


def test_judge_with_the_llm_down_is_one_line(tmp_path: Path) -> None:
    f = tmp_path / "respostas.jsonl"
    f.write_text('{"question": "O que é ReLU?", "answer": "max(0, x)", '
                 '"contexts": ["a ReLU devolve max(0, x)"]}\n')
    res = aula("judge", str(f), AULA_INDEX_DIR=str(tmp_path / "idx"),
               AULA_LLM_BASE_URL="http://127.0.0.1:9/v1", AULA_LLM_RETRIES="0",
               AULA_LLM_TIMEOUT="5")
    assert "cannot connect" in one_line(res)


def test_judge_of_a_file_with_id_and_question_id_reads_id(tmp_path: Path) -> None:
    f = tmp_path / "respostas.jsonl"
    f.write_text('{"id": 7, "question_id": "q1", "question": "O que é ReLU?", '
                 '"answer": "max(0, x)", "contexts": ["a ReLU devolve max(0, x)"]}\n')
    res = aula("judge", str(f), AULA_INDEX_DIR=str(tmp_path / "idx"),
               AULA_LLM_BASE_URL="http://127.0.0.1:9/v1", AULA_LLM_RETRIES="0",
               AULA_LLM_TIMEOUT="5")
    line = one_line(res)  # the file is read; only the (absent) LLM stops it
    assert "several columns" not in line and "cannot connect" in line


def test_an_import_into_a_locked_database_is_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/aula.db"
    db = open_database(url)
    with db.write() as s:
        answer_id = store.save_answer(s, answer_body("O que é ReLU?"), NOW)
    db.close()
    f = tmp_path / "anotacoes.csv"
    f.write_text(f"id,manual,comment\n{answer_id},C,\n")
    holder = sqlite3.connect(tmp_path / "aula.db", isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another process is writing (readers still read)
        res = aula("review", "import", str(f), AULA_DATABASE_URL=url,
                   AULA_DATABASE_TIMEOUT="0.2")
    finally:
        holder.close()
    assert "database is locked" in one_line(res)


def test_a_bad_import_file_is_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/aula.db"
    open_database(url).close()
    f = tmp_path / "anotacoes.md"
    f.write_bytes("**Pergunta 1**: ol\xe1".encode("latin-1"))
    assert "utf-8" in one_line(aula("review", "import", str(f), AULA_DATABASE_URL=url))
    f.write_text("**Pergunta 1**: oi\n\n**Segmentos recuperados pelo E5**:\n\n"
                 "**Resposta gerada pelo LLM**: a\n\n**Resposta gerada pelo LLM**: b\n")
    line = one_line(aula("review", "import", str(f), AULA_DATABASE_URL=url))
    assert "line 7" in line and "appears again" in line


def test_unreadable_eval_files_are_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "itens.csv"
    broken.write_text('ar_score,correctness_score,manual\n"3,2,C\n')
    assert "itens.csv: cannot be read" in one_line(aula("fit-labels", str(broken)))
    questions = tmp_path / "perguntas.csv"
    questions.write_bytes("question\nol\xe1\n".encode("utf-16"))
    line = one_line(aula("judge", str(questions), AULA_INDEX_DIR=str(tmp_path / "idx")))
    assert "perguntas.csv" in line
