"""Annotated items out as an evaluation question set (CSV) or as records in the reference
report's shape, and annotations back in from either. Pure: text in, text or rows out.

The CSV has the columns ``eval.questions.load_questions`` reads (``id, question, answer,
manual, contexts``) so ``aula eval`` / ``aula judge`` take it as it is, plus ``comment`` and
``version`` (what an import needs to change an annotation safely) and a few for people.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any, Literal

from app.db.store import ImportRow
from corpus.errors import InputError
from corpus.models import Hit
from eval.questions import from_spreadsheet_text, spreadsheet_text
from eval.record import Record as ReportRecord
from eval.record import (
    RecordParseError,
    Reference,
    normalise_newlines,
    parse_records,
    render_records,
)
from eval.signals import AULA

Format = Literal["csv", "md"]
CSV_COLUMNS = (
    "id",
    "question",
    "answer",
    "manual",
    "comment",
    "version",
    "annotated_by",
    "annotated_at",
    "ar",
    "automated",
    "lectures",
    "created_at",
    "contexts",
    "origin",
)
_ID = ("id", "qid", "question_id")
_LABEL = ("manual", "label", "annotation", "manual_label")


class ImportFormatError(InputError):
    """The import file cannot be read at all (not a bad row: a bad file)."""


def to_csv(items: Sequence[dict[str, Any]]) -> str:
    """The items as an evaluation question set; ``contexts`` is a JSON list of the segments'
    texts in retrieval order. A cell, or a line inside a cell, that starts like a spreadsheet
    formula (``=``, ``+``, ``-``, ``@``, tab, CR) gets a leading ``'``
    (``eval.questions.spreadsheet_text``); ``aula eval`` and the import read it back unchanged.
    Rows end in CR LF, so every field holding a CR, a LF, a comma or a quote is quoted."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\r\n")
    w.writeheader()
    for it in items:
        row = {
            "id": it["id"],
            "question": it["question"],
            "answer": it["answer"],
            "manual": it.get("manual") or "",
            "comment": it.get("comment") or "",
            "version": it["version"],
            "annotated_by": it.get("annotated_by") or "",
            "annotated_at": it.get("annotated_at") or "",
            "ar": "" if it.get("ar") is None else f"{it['ar']:.4f}",
            "automated": it.get("automated") or "",
            "lectures": " ".join(it.get("lectures") or []),
            "created_at": it["created_at"],
            "contexts": json.dumps([s["text"] for s in it.get("segments") or []],
                                   ensure_ascii=False),
            # the service wrote these answers: `aula judge` reads them with the label
            # model's submodels for its own answers, as the service's judge did
            "origin": AULA,
        }
        w.writerow({k: spreadsheet_text(str(v)) for k, v in row.items()})
    return buf.getvalue()


def to_record(it: dict[str, Any]) -> ReportRecord:
    """One item as a record of the reference report."""
    return ReportRecord(
        qid=str(it["id"]),
        question=it["question"],
        segments=[Hit(**{k: s[k] for k in Hit.__dataclass_fields__ if k in s})
                  for s in it["segments"]],
        answer=it["answer"],
        references=[
            Reference(title=c.get("title") or c.get("lecture_id", ""), url=c.get("url", ""),
                      start=c.get("start"), end=c.get("end"))
            for c in it.get("citations") or []
        ],
        manual=it.get("manual"),
        ar=it.get("ar"),
        automated=it.get("automated"),
        reasoning=it.get("reasoning"),
        comment=(it.get("comment") or "") if it.get("manual") else None,
        version=it.get("version") if it.get("manual") else None,
    )


def to_records(items: Sequence[dict[str, Any]], *, hide_urls: bool = False) -> str:
    """The items as Markdown records in the reference report's shape; an annotated item also
    carries its comment and version, so importing the export back changes nothing."""
    return render_records([to_record(it) for it in items], hide_urls=hide_urls)


def export(items: Sequence[dict[str, Any]], fmt: Format) -> str:
    return to_csv(items) if fmt == "csv" else to_records(items)


def guess_format(name: str, text: str) -> Format:
    """``md`` for ``.md``/``.markdown`` files or text that starts like a record, else ``csv``."""
    lower = name.lower()
    if lower.endswith((".md", ".markdown")):
        return "md"
    if lower.endswith(".csv"):
        return "csv"
    return "md" if text.lstrip().startswith("**") else "csv"


def parse_import(text: str, fmt: Format) -> list[ImportRow]:
    """The annotations in an import file. Rows with no label are skipped (nothing to import);
    a file that cannot be read raises ``ImportFormatError``. Line endings are normalised here,
    where an import enters, as comments are when they are stored."""
    text = normalise_newlines(text)
    return parse_csv(text) if fmt == "csv" else parse_md(text)


def parse_csv(text: str) -> list[ImportRow]:
    """Rows of a CSV with an ``id`` column, a ``manual`` (or ``label``) column, and optionally
    ``comment`` and ``version``. Row numbers count data rows from 1, as ``aula eval`` does."""
    try:
        return _parse_csv(text)
    except csv.Error as exc:
        raise ImportFormatError(f"CSV: {exc}") from None


def _parse_csv(text: str) -> list[ImportRow]:
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff"), newline=""))
    fields = {(f or "").strip().lower(): f for f in reader.fieldnames or []}
    id_col = next((fields[c] for c in _ID if c in fields), None)
    label_col = next((fields[c] for c in _LABEL if c in fields), None)
    if id_col is None:
        raise ImportFormatError("CSV: no 'id' column")
    if label_col is None:
        raise ImportFormatError("CSV: no 'manual' (or 'label') column")
    comment_col, version_col = fields.get("comment"), fields.get("version")
    rows = []
    for number, cells in enumerate(reader, start=1):
        raw = {k: from_spreadsheet_text(v) if isinstance(v, str) else v
               for k, v in cells.items()}
        label = (raw.get(label_col) or "").strip()
        if not label:
            continue
        ident = (raw.get(id_col) or "").strip()
        where = f"row {number} (id {ident or '?'})"
        version_text = (raw.get(version_col) or "").strip() if version_col else ""
        try:
            version = int(version_text) if version_text else None
        except ValueError:
            raise ImportFormatError(
                f"{where}: version: {version_text!r} is not a whole number"
            ) from None
        rows.append(ImportRow(
            where=where,
            answer_id=ident,
            label=label,
            comment=(raw.get(comment_col) or "") if comment_col else None,
            version=version,
        ))
    return rows


def parse_md(text: str) -> list[ImportRow]:
    """The manual labels of report records (``**Anotação manual**``), with the comment and
    version when the record has them (an export does). A record without a comment field (the
    reference report's shape) keeps the stored comment; one without a version replaces an
    existing annotation only when the import is told to overwrite. A comment is not required:
    the file may predate the rule."""
    try:
        records = parse_records(text)
    except RecordParseError as exc:
        raise ImportFormatError(str(exc)) from None
    return [
        ImportRow(where=f"record {n} (Pergunta {r.qid})", answer_id=r.qid, label=r.manual,
                  comment=r.comment, version=r.version, needs_comment=False,
                  keep_comment=r.comment is None)
        for n, r in enumerate(records, start=1)
        if r.manual
    ]
