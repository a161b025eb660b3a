"""The store on SQLite: answers kept whole, the queue's filters, annotations with a version
check and history, and a schema that the migrations and the models agree on."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from app.db import store
from app.db.models import Base
from app.db.session import Database
from tests.review.conftest import answer_body, seed

NOW = datetime(2026, 6, 1, 9, 30, tzinfo=UTC)


def test_an_answer_is_kept_whole(db: Database) -> None:
    body = answer_body("O que a ReLU devolve?", n=3)
    with db.write() as s:
        answer_id = store.save_answer(s, body, NOW)
    with db.read() as s:
        it = store.get_item(s, answer_id)
    assert it["question"] == body["question"] and it["answer"] == body["answer"]
    assert it["segments"] == body["segments"] and it["citations"] == body["citations"]
    assert it["models"] == body["models"] and it["timings"] == body["timings"]
    assert it["created_at"] == NOW.isoformat() and it["version"] == 1
    assert it["lectures"] == ["redes-neurais"] and it["manual"] is None


def test_the_queue_filters(db: Database) -> None:
    ids = seed(db, 5)  # one a day from 2026-05-01; odd ones in "derivadas"
    with db.write() as s:
        store.annotate(s, ids[0], label="C", comment=None, version=1, user="ana", now=NOW)
        store.set_automated(s, ids[1], ar_score=1, label="PC", reasoning="r", model="m",
                            error=None, now=NOW)
        store.set_automated(s, ids[2], ar_score=3, label="C", reasoning="r", model="m",
                            error=None, now=NOW)

    def found(**kw: object) -> list[int]:
        with db.read() as s:
            rows, total = store.queue(s, store.QueueFilter(**kw))  # type: ignore[arg-type]
        assert total == len(rows)
        return [r["id"] for r in rows]

    assert found() == ids
    assert found(unreviewed=True) == ids[1:]
    assert found(manual="C") == [ids[0]] and found(manual="none") == ids[1:]
    assert found(automated="PC") == [ids[1]] and found(automated="none") == [ids[0], *ids[3:]]
    assert found(ar_min=0.5) == [ids[2]] and found(ar_max=0.5) == [ids[1]]
    assert found(lecture="derivadas") == [ids[1], ids[3]]
    assert found(lecture="deriv") == []  # whole lecture ids only
    assert found(date_from=date(2026, 5, 2), date_to=date(2026, 5, 3)) == ids[1:3]
    with db.read() as s:
        assert store.lectures(s) == ["derivadas", "redes-neurais"]


def test_the_least_sure_labels_come_first_when_asked(db: Database) -> None:
    ids = seed(db, 5)
    # ids[0] unjudged, ids[1] a rule's label (no P), ids[2..4] the model's at P 0.9, 0.45, 0.6
    with db.write() as s:
        for i, sure in ((1, None), (2, 0.9), (3, 0.45), (4, 0.6)):
            store.set_automated(s, ids[i], ar_score=2, label="PC", reasoning="r", model="m",
                                error=None, now=NOW,
                                signals={"label_by": "model" if sure else "thresholds",
                                         "label_confidence": sure})

    def order(name: str, **kw: object) -> list[int]:
        with db.read() as s:
            rows, _ = store.queue(s, store.QueueFilter(**kw), order=name)  # type: ignore[arg-type]
        return [r["id"] for r in rows]

    assert order("oldest") == ids
    assert order("least_sure") == [ids[3], ids[4], ids[2], ids[0], ids[1]]
    assert order("least_sure", lecture="derivadas") == [ids[3], ids[1]]  # filters still apply
    with db.read() as s:
        rows, _ = store.queue(s, order="least_sure", limit=1)
        assert rows[0]["label_confidence"] == 0.45  # the queue shows how sure
        with pytest.raises(ValueError, match="unknown queue order 'newest'"):
            store.queue(s, order="newest")


def test_annotations_keep_who_when_and_old_to_new(db: Database) -> None:
    [i] = seed(db, 1)
    with db.write() as s:
        first = store.annotate(s, i, label="pc", comment=" falta o exemplo ", version=1,
                               user="ana", now=NOW)
    assert (first["manual"], first["comment"], first["version"]) == ("PC", "falta o exemplo", 2)
    with db.write() as s:
        same = store.annotate(s, i, label="PC", comment="falta o exemplo", version=2,
                              user="bruno", now=NOW)
    assert same["version"] == 2 and same["annotated_by"] == "ana"  # a repeat is no change
    with db.write() as s:
        store.annotate(s, i, label="C", comment=None, version=2, user="bruno", now=NOW)
    with db.read() as s:
        hist = store.history(s, i)
    assert [(h["user"], h["old_label"], h["new_label"], h["version"]) for h in hist] == [
        ("ana", None, "PC", 2), ("bruno", "PC", "C", 3)]
    assert hist[1]["old_comment"] == "falta o exemplo" and hist[1]["new_comment"] is None
    assert hist[0]["at"] == NOW.isoformat()


def test_a_stale_version_is_a_conflict_that_carries_the_item_now(db: Database) -> None:
    [i] = seed(db, 1)
    with db.write() as s:
        store.annotate(s, i, label="I", comment="errada", version=1, user="ana", now=NOW)
    with pytest.raises(store.Conflict) as caught, db.write() as s:
        store.annotate(s, i, label="C", comment=None, version=1, user="bruno", now=NOW)
    assert caught.value.current["manual"] == "I" and caught.value.current["version"] == 2
    with db.read() as s:
        assert store.get_item(s, i)["manual"] == "I" and len(store.history(s, i)) == 1


@pytest.mark.parametrize(("label", "comment", "field"), [
    ("X", None, "label"), ("", None, "label"), ("PC", "  ", "comment"), ("I", None, "comment"),
    ("C", "x" * (store.MAX_COMMENT + 1), "comment"),
])
def test_bad_annotations_name_the_field(label: str, comment: str | None, field: str) -> None:
    with pytest.raises(store.InvalidAnnotation) as caught:
        store.check_annotation(label, comment)
    assert caught.value.field == field


def test_the_migrations_and_the_models_never_drift(db: Database) -> None:
    with db.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}),
                                Base.metadata)
        tables = set(inspect(conn).get_table_names())
    assert diff == []
    assert {"answers", "annotation_history", "users", "sessions", "api_tokens"} <= tables
    db.upgrade()  # idempotent: a second run at startup changes nothing
