"""A table (CSV or Parquet) of ``lecture, start, end, text`` rows: several lectures per file."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from corpus.models import Cue
from corpus.readers.errors import TranscriptError
from corpus.readers.srt import parse_ts

COLUMNS = ("lecture", "start", "end", "text")


def _frame(path: Path) -> pd.DataFrame:
    try:
        if path.suffix.lower() == ".parquet":
            return pd.read_parquet(path)
        return pd.read_csv(path, dtype={"lecture": str, "text": str}, keep_default_na=False)
    except Exception as exc:  # pandas raises many kinds
        raise TranscriptError(path, f"cannot read table: {exc}") from exc


def is_table(path: Path) -> bool:
    """True when the file has the transcript-table columns."""
    try:
        head = (pd.read_parquet(path) if path.suffix.lower() == ".parquet"
                else pd.read_csv(path, nrows=1))
    except Exception:  # noqa: BLE001 - not a readable table, so not ours
        return False
    return set(COLUMNS) <= {str(c).strip().lower() for c in head.columns}


def _seconds(path: Path, line: int, value: object) -> float:
    if isinstance(value, int | float) and not pd.isna(value):
        return float(value)
    text = str(value).strip()
    try:
        return float(text)
    except ValueError:
        ts = parse_ts(text)
        if ts is None:
            raise TranscriptError(path, f"bad time {text!r}", line=line) from None
        return ts


def read_table(path: Path) -> dict[str, list[Cue]]:
    df = _frame(path)
    df.columns = [str(c).strip().lower() for c in df.columns]
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise TranscriptError(path, f"missing column(s) {', '.join(missing)}")
    out: dict[str, list[Cue]] = {}
    for i, row in enumerate(df.itertuples(index=False), start=2):  # line 1 is the header
        lecture = str(row.lecture).strip()
        if not lecture:
            raise TranscriptError(path, "empty lecture", line=i)
        start, end = _seconds(path, i, row.start), _seconds(path, i, row.end)
        if end < start:
            raise TranscriptError(path, "end before start", line=i)
        text = " ".join(str(row.text).split()) if not pd.isna(row.text) else ""
        out.setdefault(lecture, [])
        if text:
            out[lecture].append(Cue(start, end, text))
    return out
