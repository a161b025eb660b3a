"""A Markdown export imported back changes nothing, whatever the students and instructors
wrote: record headings inside questions, comments over several lines, Markdown characters."""

from __future__ import annotations

from typing import Any

import pytest

from app.db import exchange, store
from app.db.session import Database
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
