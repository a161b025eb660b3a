"""Export as an evaluation question set and as report records; import all-or-nothing."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from app.db import exchange, store
from app.db.session import Database
from eval.questions import load_questions
from eval.record import parse_records
from tests.review.conftest import answer_body, seed
from tests.review.test_store import NOW


def annotated(db: Database) -> list[int]:
    ids = seed(db, 3)
    with db.write() as s:
        store.annotate(s, ids[0], label="C", comment=None, version=1, user="ana", now=NOW)
        store.annotate(s, ids[1], label="PC", comment="falta, \"isto\"\nnuma linha", version=1,
                       user="ana", now=NOW)
    return ids


def test_the_csv_is_a_question_set_aula_eval_reads(db: Database, tmp_path: Path) -> None:
    ids = annotated(db)
    with db.read() as s:
        items = store.export_items(s)
    path = tmp_path / "set.csv"
    path.write_text(exchange.to_csv(items))
    qs = load_questions(path)
    assert qs["id"].tolist() == [str(ids[0]), str(ids[1])]  # only annotated items
    assert qs["manual"].tolist() == ["C", "PC"]
    assert qs["answer"].tolist() == [it["answer"] for it in items]
    assert qs["contexts"][0] == [seg["text"] for seg in items[0]["segments"]]
    assert qs["comment"][1] == "falta, \"isto\"\nnuma linha"
    # the service wrote them: `aula judge` reads them as the service's judge did
    assert qs["origin"].tolist() == ["aula", "aula"]


def test_records_have_the_reference_shape_and_read_back(db: Database) -> None:
    ids = annotated(db)
    with db.read() as s:
        items = store.export_items(s)
    text = exchange.to_records(items)
    assert text.startswith(f"**Pergunta {ids[0]}**: ")
    records = parse_records(text)
    assert [r.manual for r in records] == ["C", "PC"]
    assert records[0].segments[0].text == items[0]["segments"][0]["text"]
    assert records[0].references[0].url.startswith("https://www.youtube.com/")


def test_a_csv_import_is_all_or_nothing_and_names_the_bad_row(db: Database) -> None:
    ids = annotated(db)
    text = (
        "id,manual,comment,version\n"
        f"{ids[2]},I,errada,1\n"
        f"{ids[0]},PC,,2\n"  # PC without a comment
        f"{ids[1]},X,,2\n"  # unknown label
        "999,C,,\n"
    )
    rows = exchange.parse_csv(text)
    with pytest.raises(store.ImportRejected) as caught, db.write() as s:
        store.import_annotations(s, rows, user="imp", now=NOW, source="import-csv")
    msg = str(caught.value)
    assert "row 2 (id 1): comment: required for PC" in msg
    assert "row 3 (id 2): label: unknown label 'X'" in msg
    assert "row 4 (id 999): id: no stored answer" in msg
    with db.read() as s:
        assert store.get_item(s, ids[2])["manual"] is None  # the good row was not applied
        assert store.get_item(s, ids[0])["version"] == 2


def test_a_stale_or_unversioned_import_does_not_overwrite(db: Database) -> None:
    ids = annotated(db)
    for text in (f"id,manual,comment,version\n{ids[0]},I,errada,1\n",
                 f"id,manual,comment\n{ids[0]},I,errada\n"):
        with pytest.raises(store.ImportRejected, match="version"), db.write() as s:
            store.import_annotations(s, exchange.parse_csv(text), user="imp", now=NOW,
                                     source="import-csv")
    with db.write() as s:
        res = store.import_annotations(
            s, exchange.parse_csv(f"id,manual,comment,version\n{ids[0]},I,errada,2\n"
                                  f"{ids[1]},PC,\"falta, \"\"isto\"\"\nnuma linha\",2\n"),
            user="imp", now=NOW, source="import-csv")
    assert (res.changed, res.unchanged) == (1, 1)
    with db.read() as s:
        hist = store.history(s, ids[0])
    assert (hist[-1]["user"], hist[-1]["old_label"], hist[-1]["new_label"],
            hist[-1]["source"]) == ("imp", "C", "I", "import-csv")


def test_records_import_their_manual_labels(db: Database) -> None:
    ids = seed(db, 2)
    with db.read() as s:
        items = [dict(it, manual=m) for it, m in zip(store.export_items(s, annotated_only=False),
                                                    ["I", "C"], strict=True)]
    rows = exchange.parse_md(exchange.to_records(items))
    with db.write() as s:
        res = store.import_annotations(s, rows, user="imp", now=NOW, source="import-md")
    assert res.changed == 2
    with db.read() as s:
        assert [store.get_item(s, i)["manual"] for i in ids] == ["I", "C"]


def test_a_file_that_is_not_an_export_is_refused() -> None:
    with pytest.raises(exchange.ImportFormatError, match="no 'id' column"):
        exchange.parse_csv("question,label\nq,C\n")
    with pytest.raises(exchange.ImportFormatError, match="version"):
        exchange.parse_csv("id,label,version\n1,C,dois\n")
    with pytest.raises(exchange.ImportFormatError, match="Pergunta"):
        exchange.parse_md("nada aqui")


FORMULAS = ["=HYPERLINK(\"http://evil.example\",\"ver\")", "+1+1", "-2+3", "@SUM(A1:A9)",
            "'=1+1"]


def test_csv_cells_that_start_like_formulas_are_neutralised_and_read_back(
    db: Database, tmp_path: Path
) -> None:
    with db.write() as s:
        ids = [store.save_answer(s, answer_body(f), NOW) for f in FORMULAS]
        for i, f in zip(ids, FORMULAS, strict=True):
            store.annotate(s, i, label="PC", comment=f, version=1, user="ana", now=NOW)
    with db.read() as s:
        items = store.export_items(s)
    text = exchange.to_csv(items)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["question"] for r in rows] == ["'" + f for f in FORMULAS]  # text, not a formula
    assert [r["comment"] for r in rows] == ["'" + f for f in FORMULAS]
    # aula eval and the import read back what was stored, character for character
    path = tmp_path / "set.csv"
    path.write_text(text)
    assert load_questions(path)["question"].tolist() == FORMULAS
    assert [r.comment for r in exchange.parse_csv(text)] == FORMULAS
    with db.write() as s:
        res = store.import_annotations(s, exchange.parse_csv(text), user="imp", now=NOW,
                                       source="import-csv")
    assert (res.changed, res.unchanged) == (0, len(FORMULAS))


# A question (stored before questions were normalised, or an answer as the LLM wrote it) with
# bare carriage returns, each starting a line that a spreadsheet reads as a formula.
CR_QUESTION = "o que é a derivada?\r=cmd|' /C calc'!A0\r@SUM(1+1)"


def _lines(cell: str) -> list[str]:
    return re.split(r"\r\n|\r|\n", cell)


def test_a_bare_cr_is_quoted_and_no_line_of_a_cell_starts_a_formula(
    db: Database, tmp_path: Path
) -> None:
    body = answer_body(CR_QUESTION)
    body["answer"] = "A derivada.\r-1 e +1\r\nfim"
    with db.write() as s:
        i = store.save_answer(s, body, NOW)
        store.annotate(s, i, label="PC", comment="falta\r=a regra", version=1, user="ana",
                       now=NOW)
    with db.read() as s:
        text = exchange.to_csv(store.export_items(s))
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert len(rows) == 2  # the CR stayed inside its (quoted) cell
    formulas = ("=", "+", "-", "@")
    assert not [line for cell in rows[1] for line in _lines(cell) if line.startswith(formulas)]
    path = tmp_path / "set.csv"
    path.write_bytes(text.encode())
    qs = load_questions(path)
    assert (qs["question"].tolist(), qs["answer"].tolist()) == ([CR_QUESTION], [body["answer"]])
    assert qs["comment"].tolist() == ["falta\n=a regra"]  # stored with one line ending


def test_importing_the_csv_export_of_a_question_with_a_bare_cr_changes_nothing(
    db: Database,
) -> None:
    with db.write() as s:
        i = store.save_answer(s, answer_body(CR_QUESTION), NOW)
        store.annotate(s, i, label="I", comment="errada\rde novo", version=1, user="ana",
                       now=NOW)
    with db.read() as s:
        text = exchange.to_csv(store.export_items(s))
    rows = exchange.parse_import(text, exchange.guess_format("aula-anotacoes.csv", text))
    assert [(r.answer_id, r.label, r.comment, r.version) for r in rows] == [
        (str(i), "I", "errada\nde novo", 2)]
    with db.write() as s:
        res = store.import_annotations(s, rows, user="imp", now=NOW, source="import-csv")
    assert (res.changed, res.unchanged) == (0, 1)


def test_a_csv_the_reader_cannot_read_is_refused_not_a_crash() -> None:
    with pytest.raises(exchange.ImportFormatError, match="CSV"):
        exchange.parse_csv("id,manual\n1,\"C\x00\"\n" + "2,\"" + "x" * 200_000 + "\"\n")
