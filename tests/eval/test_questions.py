"""Question files: CSV, JSONL and XLSX read into one normalised table, with clear errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from eval.questions import (
    QuestionsError,
    from_spreadsheet_text,
    load_questions,
    spreadsheet_text,
)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_with_aliases_times_and_extras(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "q.csv",
        (
            "Pergunta,Label,gold_lecture,gold_start,gold_end,turma\n"
            "O que é o TensorBoard?,correct,aula-7,00:49:56,3113,A\n"
            "Para que serve o dropout?,Partially Correct,,,,B\n"
            "E o Adam?,i,,,,\n"
        ),
    )
    table = load_questions(path)
    assert list(table.columns[:9]) == [
        "id",
        "question",
        "manual",
        "reference_answer",
        "gold_lecture",
        "gold_start",
        "gold_end",
        "answer",
        "contexts",
    ]
    assert table["id"].tolist() == ["1", "2", "3"]
    assert table["manual"].tolist() == ["C", "PC", "I"]
    assert table.loc[0, "gold_start"] == 2996.0 and table.loc[0, "gold_end"] == 3113.0
    assert table.loc[1, "gold_lecture"] is None  # missing is None, not NaN or ""
    assert table.loc[2, "answer"] is None
    assert table["turma"].tolist() == ["A", "B", None]


def test_jsonl_with_ids_answers_and_contexts(tmp_path: Path) -> None:
    rows = [
        {"id": 10, "question": "q1", "annotation": "PC", "answer": "a1", "contexts": ["s1", "s2"]},
        {"id": 11, "question": "q2", "contexts": json.dumps(["s3"])},
        {"id": 12, "question": "q3", "contexts": "s4\n---\ns5\r\n---\r\ns6"},
    ]
    path = _write(tmp_path / "q.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n\n")
    table = load_questions(path)
    assert table["id"].tolist() == ["10", "11", "12"]
    assert table.loc[0, "answer"] == "a1" and table.loc[1, "answer"] is None
    assert table["contexts"].tolist() == [["s1", "s2"], ["s3"], ["s4", "s5", "s6"]]
    assert table["manual"].tolist() == ["PC", None, None]


def test_empty_question_names_the_row(tmp_path: Path) -> None:
    path = _write(tmp_path / "q.csv", "question,manual\nok?,C\n  ,C\n")
    with pytest.raises(QuestionsError, match="row 2: the question is empty"):
        load_questions(path)


def test_a_gold_span_ending_before_it_starts_names_the_row(tmp_path: Path) -> None:
    path = _write(tmp_path / "q.csv", "question,gold_lecture,gold_start,gold_end\n"
                  "ok?,a,10,20\nponto?,a,00:05:03,00:05:03\noutra?,a,00:02:00,90\n")
    with pytest.raises(QuestionsError, match="row 3: gold_end 90 s is before gold_start 120 s"):
        load_questions(path)


def test_unknown_label_names_row_and_value(tmp_path: Path) -> None:
    path = _write(tmp_path / "q.csv", "question,manual\nok?,C\noutra?,talvez\n")
    with pytest.raises(QuestionsError, match="row 2.*'talvez'"):
        load_questions(path)


def test_other_errors(tmp_path: Path) -> None:
    with pytest.raises(QuestionsError, match="no 'question' column"):
        load_questions(_write(tmp_path / "a.csv", "texto\nx\n"))
    with pytest.raises(QuestionsError, match="row 1: gold_start"):
        load_questions(_write(tmp_path / "b.csv", "question,gold_start\nq,ontem\n"))
    with pytest.raises(QuestionsError, match="duplicate ids: 1"):
        load_questions(_write(tmp_path / "c.csv", "id,question\n1,a\n1,b\n"))
    with pytest.raises(QuestionsError, match="several columns could be 'manual'"):
        load_questions(_write(tmp_path / "d.csv", "question,label,annotation\nq,C,C\n"))
    with pytest.raises(QuestionsError, match="e.jsonl: line 2: not JSON"):
        load_questions(_write(tmp_path / "e.jsonl", '{"question": "q"}\n{oops\n'))
    with pytest.raises(QuestionsError, match="unsupported"):
        load_questions(_write(tmp_path / "f.txt", "q"))


def test_xlsx(tmp_path: Path) -> None:
    pytest.importorskip("openpyxl")
    path = tmp_path / "q.xlsx"
    pd.DataFrame(
        {
            "ID": [1, 2],
            "Question": ["q1", "q2"],
            "Manual": ["C", None],
            "gold_start": ["00:01:00", None],
        }
    ).to_excel(path, index=False)
    table = load_questions(path)
    assert table["id"].tolist() == ["1", "2"]
    assert table["manual"].tolist() == ["C", None]
    assert table.loc[0, "gold_start"] == 60.0


def test_xlsx_without_openpyxl_says_how_to_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "openpyxl", None)  # makes `import openpyxl` fail
    with pytest.raises(QuestionsError, match="pip install openpyxl"):
        load_questions(_write(tmp_path / "q.xlsx", ""))


@pytest.mark.parametrize(
    ("text", "cell"),
    [
        ("=1+1", "'=1+1"), ("+1", "'+1"), ("-1", "'-1"), ("@A1", "'@A1"), ("\t=1", "'\t=1"),
        ("\r=1", "'\r'=1"), ("'=1", "''=1"), ("''", "'''"), ("'texto'", "'texto'"),
        ("texto = 1", "texto = 1"), ("", ""), ("'", "'"),
        # a spreadsheet may start a formula on any line of a cell
        ("o que é?\r=cmd|' /C calc'!A0\r@SUM(1+1)", "o que é?\r'=cmd|' /C calc'!A0\r'@SUM(1+1)"),
        ("a\n-1\r\n+2\n\n'@", "a\n'-1\r\n'+2\n\n''@"), ("a\nb", "a\nb"),
    ],
)
def test_formula_cells_are_neutralised_and_read_back(text: str, cell: str) -> None:
    assert spreadsheet_text(text) == cell
    assert from_spreadsheet_text(cell) == text


def test_an_exact_column_name_wins_over_its_aliases(tmp_path: Path) -> None:
    """A file with both ``id`` and ``question_id`` (an export joined with a question bank) is
    read by ``id``; ``question_id`` stays as another column."""
    qs = load_questions(_write(tmp_path / "a.csv",
                               "id,question_id,question,answer\n7,q1,O que é?,É.\n8,q1,E?,Sim\n"))
    assert qs["id"].tolist() == ["7", "8"]
    assert qs["question_id"].tolist() == ["q1", "q1"]
    with pytest.raises(QuestionsError, match="several columns could be 'id'"):
        load_questions(_write(tmp_path / "b.csv", "qid,question_id,question\n1,2,q\n"))


@pytest.mark.parametrize(("name", "content"), [
    ("a.csv", b"question\n\"sem fim\n"),  # pandas' ParserError is a ValueError
    ("b.csv", "question\nolá\n".encode("utf-16")),
    ("c.jsonl", b"\xff\xfe{}"),
])
def test_an_unreadable_file_is_a_questions_error(tmp_path: Path, name: str,
                                                 content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(QuestionsError, match=name):
        load_questions(path)
