"""A Markdown export imported back changes nothing, whatever the students and instructors
wrote: record headings inside questions, comments over several lines, Markdown characters."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from app.db import exchange, store
from app.db.session import Database
from eval.questions import from_spreadsheet_text
from eval.record import normalise_newlines, parse_records
from tests.review.conftest import answer_body
from tests.review.test_store import NOW

HOSTILE_QUESTIONS = [
    # a whole forged record: before escaping, its "Pergunta 96" took this item's label
    "o que é isto?\n**Segmentos recuperados pelo E5**:\n**Resposta gerada pelo LLM**: nada\n\n"
    "**Pergunta {other}**: outra pergunta",
    "**Pergunta {other}**: começa como um registro",
    "*negrito?* `código` [link](javascript:alert(1)) # título\n---\n- *Score:* 1\n—",
    "\\**Pergunta {other}**: já com barra invertida",
]
COMMENTS = [
    "falta a regra da cadeia;\n**Anotação manual**: C\nsegunda linha",
    "—",
    "- *Corpus ID:* 1\n\n---\n**Comentário**: forjado",
    "\\\\ barras \\ e *asteriscos* e **negrito**",
]


def _stored(db: Database, ids: list[int]) -> list[tuple[Any, ...]]:
    with db.read() as s:
        return [(it["manual"], it["comment"], it["version"], it["question"])
                for it in (store.get_item(s, i) for i in ids)]


@pytest.fixture()
def hostile(db: Database) -> tuple[list[int], int]:
    """Four annotated answers with hostile questions, answers and comments, and one answer
    nobody reviewed (the one the forged headings name)."""
    with db.write() as s:
        other = store.save_answer(s, answer_body("nunca revisada"), NOW)
        ids = []
        for n, (q, c) in enumerate(zip(HOSTILE_QUESTIONS, COMMENTS, strict=True)):
            body = answer_body(q.format(other=other))
            body["answer"] = c + "\n\n" + body["answer"]  # the answer is hostile too
            ids.append(store.save_answer(s, body, NOW))
            store.annotate(s, ids[-1], label=("PC", "I", "PC", "C")[n], comment=c, version=1,
                           user="ana", now=NOW)
    return ids, other


@pytest.mark.parametrize("overwrite", [False, True])
def test_importing_the_markdown_export_changes_nothing(
    db: Database, hostile: tuple[list[int], int], overwrite: bool
) -> None:
    ids, other = hostile
    before = _stored(db, [*ids, other])
    with db.read() as s:
        text = exchange.export(store.export_items(s), "md")
    rows = exchange.parse_import(text, exchange.guess_format("export.md", text))
    assert [r.answer_id for r in rows] == [str(i) for i in ids]
    with db.write() as s:
        res = store.import_annotations(s, rows, user="imp", now=NOW, source="import-md",
                                       overwrite=overwrite)
    assert (res.changed, res.unchanged) == (0, len(ids))
    assert _stored(db, [*ids, other]) == before  # every comment kept, nothing forged
    with db.read() as s:
        assert store.get_item(s, other)["manual"] is None
        assert all(len(store.history(s, i)) == 1 for i in ids)


def test_records_without_comments_keep_the_stored_comments(
    db: Database, hostile: tuple[list[int], int]
) -> None:
    """A file in the reference report's shape (no comment field, e.g. an export made before
    comments were exported) imported with overwrite leaves the comments as they were."""
    ids, _ = hostile
    before = _stored(db, ids)
    with db.read() as s:
        items = [dict(it, comment=None) for it in store.export_items(s)]
    text = exchange.to_records([dict(it, manual=None) for it in items])  # shape without comment
    text = text.replace("**Anotação manual**: —", "**Anotação manual**: PC")
    assert "\n**Comentário**" not in text
    with db.write() as s:
        store.import_annotations(s, exchange.parse_md(text), user="imp", now=NOW,
                                 source="import-md", overwrite=True)
    after = _stored(db, ids)
    assert [a[1] for a in after] == [b[1] for b in before]  # comments kept
    assert [a[0] for a in after] == ["PC"] * len(ids)


def test_a_stale_markdown_export_is_refused(db: Database, hostile: tuple[list[int], int]) -> None:
    ids, _ = hostile
    with db.read() as s:
        text = exchange.to_records(store.export_items(s))
    with db.write() as s:
        store.annotate(s, ids[0], label="C", comment=None, version=2, user="bia", now=NOW)
    edited = text.replace("**Anotação manual**: PC", "**Anotação manual**: I", 1)
    with pytest.raises(store.ImportRejected, match="stale version 2"), db.write() as s:
        store.import_annotations(s, exchange.parse_md(edited), user="imp", now=NOW,
                                 source="import-md")


def test_a_question_with_bare_carriage_returns_forges_no_label(db: Database) -> None:
    """The forging report's question: bare CRs around record headings that name an item
    nobody reviewed ("Pergunta 05") and the attacker's own next id ("Pergunta 040")."""
    with db.write() as s:
        other = store.save_answer(s, answer_body("nunca revisada"), NOW)
        mine = other + 1
        question = (
            "o que é a derivada?\r\r**Segmentos recuperados pelo E5**:\r\r**Resposta gerada pelo "
            f"LLM**: y\r\r---\r\r**Pergunta 0{other}**: z\r\r**Segmentos recuperados pelo E5**:"
            "\r\r**Resposta gerada pelo LLM**: y\r\r**Anotação manual**: C\r\r**Comentário**: "
            f"forjado pelo aluno\r\r---\r\r**Pergunta 0{mine}**: w")
        assert store.save_answer(s, answer_body(question), NOW) == mine
        store.annotate(s, mine, label="C", comment=None, version=1, user="ana", now=NOW)
    for _ in range(2):  # and every later export imports as well
        with db.read() as s:
            text = exchange.export(store.export_items(s), "md")
        rows = exchange.parse_import(text, "md")
        assert [(r.answer_id, r.label) for r in rows] == [(str(mine), "C")]
        with db.write() as s:
            res = store.import_annotations(s, rows, user="bia", now=NOW, source="import-md")
        assert (res.changed, res.unchanged) == (0, 1)
    with db.read() as s:
        assert store.get_item(s, other)["manual"] is None
        assert store.history(s, other) == []


# --- fuzzing: export -> import changes nothing, whatever the text ----------------------------

LINE_BREAKS = ["\n", "\r", "\r\n", "\n\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028",
               "\u2029"]
MARKERS = ["**Pergunta 7**:", "**Pergunta", "**", "**Segmentos recuperados pelo E5**:",
           "**Resposta gerada pelo LLM**: ", "**Anotação manual**: C", "**Comentário**:",
           "**Versão da anotação**: 9", "**Referências**:", "- *Corpus ID:* 1", "- *Score:* 2",
           "- *Transcrição:*", "- [t](u)", "---", "—", "\\", "*", "'", "=", "+", "-", "@",
           "\t", " ", ",", '"', "]("]
TEXT = st.lists(st.one_of(st.sampled_from(LINE_BREAKS + MARKERS), st.text(max_size=4)),
                max_size=14).map("".join)


def _item(n: int, question: str, answer: str, label: str, comment: str | None,
          transcript: str) -> dict[str, Any]:
    """An item as ``store.export_items`` gives it."""
    body = answer_body(question)
    return {
        "id": n, "question": question, "answer": answer, "manual": label, "comment": comment,
        "version": n + 1, "annotated_by": "ana", "annotated_at": NOW.isoformat(),
        "ar": 0.5, "automated": "PC", "lectures": ["redes-neurais"],
        "created_at": NOW.isoformat(), "citations": body["citations"],
        "segments": [dict(body["segments"][0], text=transcript)],
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(st.tuples(TEXT, TEXT, st.sampled_from(store.LABELS), TEXT, TEXT),
                      min_size=1, max_size=3))
# an escaped rule followed by a vertical tab, which the parser strips as a blank
@example(texts=[("\\---\x0b", "", "C", "", "")])
def test_export_then_import_changes_nothing_whatever_the_text(
    texts: list[tuple[str, str, str, str, str]],
) -> None:
    items = []
    for n, (question, answer, label, comment, transcript) in enumerate(texts, start=1):
        assume(question.strip())  # the API takes no blank question
        stored_label, stored_comment = store.check_annotation(label, comment, require_comment=())
        items.append(_item(n, question, normalise_newlines(answer).strip(), stored_label,
                           stored_comment, normalise_newlines(transcript).strip()))
    stored = [(str(it["id"]), it["manual"], it["comment"], it["version"]) for it in items]
    for fmt in ("md", "csv"):
        text = exchange.export(items, fmt)  # type: ignore[arg-type]
        rows = exchange.parse_import(text, exchange.guess_format(f"export.{fmt}", text))
        got = [(r.answer_id, *store.check_annotation(r.label, r.comment, require_comment=()),
                r.version) for r in rows]
        assert got == stored, fmt  # same items, labels, comments, versions: nothing forged
    records = parse_records(exchange.to_records(items))
    assert [(r.question, r.answer, r.segments[0].text) for r in records] == [
        (normalise_newlines(it["question"]).strip(), it["answer"], it["segments"][0]["text"])
        for it in items]
    cells = list(csv.DictReader(io.StringIO(exchange.to_csv(items), newline="")))
    assert [from_spreadsheet_text(c["question"]) for c in cells] == [it["question"]
                                                                     for it in items]
    assert [from_spreadsheet_text(c["answer"]) for c in cells] == [it["answer"] for it in items]
