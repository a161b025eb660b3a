"""Transcript tables (.csv / .parquet) with columns ``lecture, start, end, text``: several
lectures in one file, times in seconds or ``HH:MM:SS(.mmm)``."""

from __future__ import annotations

import csv
import io
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

from corpus.models import Cue
from corpus.readers.errors import TranscriptError, make_cue
from corpus.readers.srt import parse_timestamp
from corpus.readers.text import read_text

COLUMNS = ("lecture", "start", "end", "text")


def table_columns(path: Path) -> list[str]:
    """Column names of a CSV or Parquet file, lower-cased and stripped (header only)."""
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        try:
            names = pq.read_schema(path).names
        except Exception as exc:  # pyarrow raises several types for a broken file
            raise TranscriptError(path, f"unreadable Parquet file: {exc}") from exc
    else:
        names = next(csv.reader(io.StringIO(read_text(path))), [])
    return [str(n).strip().lower() for n in names]


def is_table(path: Path) -> bool:
    """Whether a CSV/Parquet file has the transcript table columns."""
    return set(COLUMNS) <= set(table_columns(path))


def read_table(path: Path) -> dict[str, list[Cue]]:
    """Cues per lecture id, in the order lectures first appear in the table."""
    path = Path(path)
    stat = path.stat()
    cached = _read_table(str(path), stat.st_mtime_ns, stat.st_size)
    return {lecture: list(cues) for lecture, cues in cached.items()}


def read(path: Path) -> list[Cue]:
    """Cues of a table holding exactly one lecture (use :func:`read_table` for several)."""
    tables = read_table(path)
    if len(tables) > 1:
        raise TranscriptError(path, f"holds {len(tables)} lectures; read it with read_table")
    return next(iter(tables.values()), [])


@lru_cache(maxsize=8)
def _read_table(name: str, mtime_ns: int, size: int) -> dict[str, tuple[Cue, ...]]:
    path = Path(name)
    rows, location = _rows(path)
    out: dict[str, list[Cue]] = {}
    for i, row in enumerate(rows):
        where = {location: i + 2 if location == "line" else i}
        lecture = _cell(row.get("lecture"))
        if not lecture:
            raise TranscriptError(path, "missing 'lecture'", **where)
        start = _seconds(row.get("start"), path, "start", where)
        end = _seconds(row.get("end"), path, "end", where)
        cue = make_cue(path, start, end, _cell(row.get("text")), **where)
        cues = out.setdefault(lecture, [])
        if cue is not None:
            cues.append(cue)
    return {lecture: tuple(cues) for lecture, cues in out.items()}


def _rows(path: Path) -> tuple[list[dict[str, Any]], str]:
    """Rows as dicts keyed by lower-cased column, and whether errors cite a line or an entry."""
    if path.suffix.lower() == ".parquet":
        import pandas as pd

        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several types for a broken file
            raise TranscriptError(path, f"unreadable Parquet file: {exc}") from exc
        frame.columns = [str(c).strip().lower() for c in frame.columns]
        _check_columns(path, list(frame.columns))
        frame = frame.astype(object).where(frame.notna(), None)
        return frame.to_dict("records"), "entry"
    reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
    _check_columns(path, [str(n).strip().lower() for n in reader.fieldnames or []])
    rows: list[dict[str, Any]] = []
    try:
        for row in reader:
            rows.append({str(k).strip().lower(): v for k, v in row.items()})
    except csv.Error as exc:
        raise TranscriptError(path, f"bad CSV: {exc}", line=reader.line_num) from exc
    return rows, "line"


def _check_columns(path: Path, names: list[str]) -> None:
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        raise TranscriptError(
            path,
            f"not a transcript table: missing column(s) {', '.join(missing)} "
            f"(needs {', '.join(COLUMNS)})",
        )


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value).strip()


def _seconds(value: Any, path: Path, key: str, where: dict[str, int]) -> float:
    if hasattr(value, "total_seconds"):  # pandas / datetime timedelta
        return float(value.total_seconds())
    if isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value):
        return float(value)
    text = _cell(value)
    if not text:
        raise TranscriptError(path, f"missing {key!r}", **where)
    try:
        return float(text) if ":" not in text else parse_timestamp(text)
    except ValueError as exc:
        raise TranscriptError(path, f"bad {key} time {text!r}", **where) from exc
