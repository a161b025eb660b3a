"""The question set of an evaluation, read from CSV, JSONL or XLSX into one normalised table.

Columns after ``load_questions`` (missing values are None, never NaN):

- ``id`` (str): from an ``id``/``qid`` column, else ``"1"``..``"n"``; must be unique.

A column named exactly as the target (``id``) wins over its aliases (``question_id``), which
are then kept as other columns; two aliases and no exact name are an error.
- ``question`` (str, required).
- ``manual``: C / PC / I from a ``manual``/``label``/``annotation`` column (also accepts
  "correct", "partially correct", "incorrect", any case).
- ``reference_answer``: a known good answer, for the correctness judge.
- ``gold_lecture``, ``gold_start``, ``gold_end``: where the answer is (seconds or HH:MM:SS).
- ``answer``: an answer already given (the run then only judges it).
- ``contexts``: list of segment texts (a JSON list, or texts separated by ``\\n---\\n``).

Other columns are kept as they are, after these. Errors name the 1-based data row.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pandas as pd

from corpus.errors import InputError
from corpus.jsonlines import read_objects
from corpus.metadata import web_url
from corpus.text import fold
from eval.labels import normalise_label
from eval.record import parse_timestamp

COLUMNS = (
    "id",
    "question",
    "manual",
    "reference_answer",
    "gold_lecture",
    "gold_start",
    "gold_end",
    "answer",
    "contexts",
)
ALIASES = {
    "id": ("id", "qid", "question_id"),
    "question": ("question", "pergunta", "query"),
    "manual": ("manual", "label", "annotation", "manual_label", "anotacao_manual"),
    "reference_answer": ("reference_answer", "reference", "ground_truth", "expected_answer"),
    "gold_lecture": ("gold_lecture", "gold_lecture_id"),
    "gold_start": ("gold_start",),
    "gold_end": ("gold_end",),
    "answer": ("answer", "response", "resposta"),
    "contexts": ("contexts", "context", "segments"),
}
CONTEXT_SEPARATOR = "\n---\n"


FORMULA_STARTS = frozenset("=+-@\t\r")
"""First characters that make a spreadsheet read a CSV cell as a formula (OWASP, "CSV
injection")."""
_ESCAPED = FORMULA_STARTS | {"'"}


_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")


def _neutral(text: str) -> str:
    if text[:1] in FORMULA_STARTS or (text[:1] == "'" and text[1:2] in _ESCAPED):
        return "'" + text
    return text


def _plain(text: str) -> str:
    return text[1:] if text[:1] == "'" and text[1:2] in _ESCAPED else text


def spreadsheet_text(cell: str) -> str:
    """``cell`` as a CSV cell a spreadsheet shows as text: one starting like a formula gets a
    leading ``'``, and so does one starting with ``'`` and then such a character (or another
    ``'``); so does every line after a line break inside the cell (a spreadsheet may start a
    formula there). :func:`from_spreadsheet_text` gives back exactly ``cell``."""
    pieces = _LINE_BREAK.split(cell)  # text, break, text, break, ...
    return _neutral("".join(p if i % 2 or i == 0 else _neutral(p)
                            for i, p in enumerate(pieces)))


def from_spreadsheet_text(cell: str) -> str:
    """The text :func:`spreadsheet_text` neutralised; other cells come back unchanged."""
    pieces = _LINE_BREAK.split(_plain(cell))
    return "".join(p if i % 2 or i == 0 else _plain(p) for i, p in enumerate(pieces))


class QuestionsError(InputError):
    """The question file cannot be used; the message says which row and why."""


def load_questions(path: str | Path) -> pd.DataFrame:
    """Read a question set (``.csv``, ``.jsonl``/``.ndjson``, ``.xlsx``) and normalise it."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".xlsx", ".xlsm"):
        try:
            import openpyxl  # noqa: F401
        except ImportError:
            raise QuestionsError(
                f"{path}: reading .xlsx needs openpyxl; install it with `pip install openpyxl`"
            ) from None
    elif suffix not in (".csv", ".jsonl", ".ndjson"):
        raise QuestionsError(
            f"{path}: unsupported question file type {suffix!r} (use .csv, .jsonl or .xlsx)"
        )
    try:
        if suffix == ".csv":
            raw = pd.read_csv(path, dtype=str, keep_default_na=False).map(from_spreadsheet_text)
        elif suffix in (".jsonl", ".ndjson"):
            raw = _read_jsonl(path)
        else:
            raw = pd.read_excel(path, dtype=str, keep_default_na=False)
    except QuestionsError:
        raise
    except (ValueError, UnicodeDecodeError) as exc:  # pandas' parser errors are ValueErrors
        raise QuestionsError(f"{path}: cannot be read: {exc}".splitlines()[0]) from None
    try:
        return normalise_questions(raw)
    except QuestionsError as exc:
        raise QuestionsError(f"{path}: {exc}") from None


def _read_jsonl(path: Path) -> pd.DataFrame:
    return pd.DataFrame([row for _, row in read_objects(path, QuestionsError)])


def is_blank(value: Any) -> bool:
    """None, NaN (an empty table cell) or a string of only whitespace."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def _column_key(name: Any) -> str:
    text = str(name).strip().lower().replace("ç", "c").replace("ã", "a")
    return "_".join(text.replace("-", " ").split())


def normalise_questions(raw: pd.DataFrame) -> pd.DataFrame:
    """The normalised table (see the module docstring) from any raw table of questions."""
    by_key: dict[str, Any] = {}
    for column in raw.columns:
        by_key.setdefault(_column_key(column), column)
    renames: dict[Any, str] = {}
    for target, aliases in ALIASES.items():
        found = [by_key[a] for a in aliases if a in by_key]
        if target in by_key:  # a column named exactly so wins; the others stay as they are
            found = [by_key[target]]
        if len(found) > 1:
            names = ", ".join(repr(f) for f in found)
            raise QuestionsError(f"several columns could be {target!r}: {names}")
        if found:
            renames[found[0]] = target
    if "question" not in renames.values():
        raise QuestionsError("no 'question' column")
    table = raw.rename(columns=renames).astype(object)
    table = table.where(table.notna(), None)

    records = []
    for number, row in enumerate(table.to_dict(orient="records"), start=1):
        records.append(_normalise_row(number, row))
    extras = [c for c in table.columns if c not in COLUMNS]
    out = pd.DataFrame(records, columns=[*COLUMNS, *extras]).astype(object)
    if "id" not in table.columns:
        out["id"] = [str(i) for i in range(1, len(out) + 1)]
    duplicated = out["id"][out["id"].duplicated()].tolist()
    if duplicated:
        raise QuestionsError(f"duplicate ids: {', '.join(map(str, duplicated[:5]))}")
    return out.where(out.notna(), None)


def _normalise_row(number: int, row: dict[str, Any]) -> dict[str, Any]:
    def fail(problem: str) -> QuestionsError:
        return QuestionsError(f"row {number}: {problem}")

    out = {c: (None if is_blank(v) else v) for c, v in row.items()}
    for name in ("id", "question", "reference_answer", "gold_lecture", "answer"):
        if out.get(name) is not None:
            out[name] = _id_text(out[name]) if name == "id" else str(out[name]).strip()
    if out.get("question") is None:
        raise fail("the question is empty")
    try:
        out["manual"] = normalise_label(out.get("manual"))
    except ValueError:
        raise fail(f"unknown manual label {row.get('manual')!r} (use C, PC or I)") from None
    for name in ("gold_start", "gold_end"):
        if out.get(name) is not None:
            try:
                out[name] = parse_timestamp(str(out[name]))
            except ValueError:
                raise fail(f"{name} {out[name]!r} is not seconds or HH:MM:SS") from None
    start, end = out.get("gold_start"), out.get("gold_end")
    if start is not None and end is not None and end < start:
        raise fail(f"gold_end {end:g} s is before gold_start {start:g} s")
    try:
        out["contexts"] = parse_contexts(out.get("contexts"))
    except ValueError as exc:
        raise fail(f"contexts: {exc}") from None
    return out


def _id_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def parse_contexts(value: Any) -> list[str] | None:
    """Segment texts from a list, a JSON list of strings, or text split on ``\\n---\\n``."""
    if is_blank(value):
        return None
    if isinstance(value, list | tuple):
        items = list(value)
    else:
        text = str(value).replace("\r\n", "\n").strip()
        if text.startswith("["):
            try:
                items = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"looks like JSON but is not: {exc.msg}") from None
            if not isinstance(items, list):
                raise ValueError("JSON value is not a list")
        else:
            items = text.split(CONTEXT_SEPARATOR)
    if not all(isinstance(item, str) for item in items):
        raise ValueError("every context must be a string")
    return [item.strip() for item in items if item.strip()] or None


def _folded(text: str) -> str:
    """Lower case, accents and punctuation dropped, spaces collapsed: how titles are compared."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", fold(text)).split())


def _video_key(url: str) -> str | None:
    """What identifies a video link whatever its form: the YouTube video id (``watch?v=``,
    ``youtu.be/``, ``/embed/``, ``/shorts/``), else the address without scheme, query and
    fragment; None for text that is no link (``corpus.metadata.web_url``)."""
    try:
        link = web_url(url)
    except ValueError:
        return None
    if not link:
        return None
    parsed = urlsplit(link)
    host = parsed.netloc.lower().removeprefix("www.").removeprefix("m.")
    if host == "youtu.be":
        return "yt:" + parsed.path.strip("/").split("/")[0]
    if host.endswith("youtube.com"):
        video = parse_qs(parsed.query).get("v")
        if video:
            return "yt:" + video[0]
        parts = parsed.path.strip("/").split("/")
        if len(parts) >= 2 and parts[0] in ("embed", "shorts", "live", "v"):
            return "yt:" + parts[1]
    return host + parsed.path.rstrip("/")


class LectureNames:
    """The index's lectures by the names instructors give them: the id itself, the title (or
    id) case, accents and punctuation aside, or the video link in any form."""

    def __init__(self, lectures: dict[str, dict[str, str]]) -> None:
        self.ids = list(lectures)
        self.known = set(self.ids)
        self.by_title: dict[str, set[str]] = {}
        self.by_video: dict[str, set[str]] = {}
        for lid, meta in lectures.items():
            self.by_title.setdefault(_folded(lid), set()).add(lid)
            if meta.get("title"):
                self.by_title.setdefault(_folded(meta["title"]), set()).add(lid)
            if meta.get("url") and (key := _video_key(meta["url"])):
                self.by_video.setdefault(key, set()).add(lid)

    def resolve(self, name: str) -> str | None:
        """The id of the one lecture ``name`` names; None when it names none (or several)."""
        if name in self.known:
            return name
        key = _video_key(name)
        found = self.by_video.get(key, set()) if key else self.by_title.get(_folded(name), set())
        return next(iter(found)) if len(found) == 1 else None

    def unknown(self, name: str) -> str:
        """What to say of a name that resolves to no lecture: it, and the closest ids."""
        from rapidfuzz import process

        closest = [m for m, score, _ in process.extract(name, self.ids, limit=3) if score >= 60]
        hint = f" (closest: {', '.join(closest)})" if closest else ""
        return f"gold_lecture {name!r} is no lecture of this index{hint}"


def resolve_gold_lectures(table: pd.DataFrame, lectures: dict[str, dict[str, str]]
                          ) -> tuple[pd.DataFrame, list[str]]:
    """``table`` with each ``gold_lecture`` given as a lecture's title or video link (as
    instructors name a lecture) replaced by that lecture's id in the index (``lectures``: id ->
    ``title``, ``url``), and one message per row whose gold lecture is none of the index's,
    naming the closest ids. Such a row is judged without its gold span, as if it gave none."""
    if "gold_lecture" not in table or not lectures:
        return table, []
    names = LectureNames(lectures)
    out = table.copy()
    problems: list[str] = []
    for i, given in enumerate(out["gold_lecture"].tolist()):
        if given is None:
            continue
        found = names.resolve(str(given))
        if found is None:
            problems.append(f"row {i + 1}: {names.unknown(str(given))}; judged without its "
                            "gold span")
        elif found != given:
            out.at[out.index[i], "gold_lecture"] = found
    return out, problems
