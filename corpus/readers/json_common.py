"""Shared checks for the JSON transcript shapes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from corpus.models import Cue
from corpus.readers.errors import TranscriptError
from corpus.readers.text import read_text


def load_json(path: Path) -> Any:
    text = read_text(path)
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(path, f"invalid JSON: {exc.msg}", line=exc.lineno) from exc


def cue_from(path: Path, idx: int, item: Any, text_keys: tuple[str, ...]) -> Cue | None:
    """A cue from one JSON entry (dict with start/end/text, or a [text, start, end] triple)."""
    if isinstance(item, list | tuple) and len(item) == 3:
        text, start, end = item
    elif isinstance(item, dict):
        for key in ("start", "end"):
            if key not in item:
                raise TranscriptError(path, f"missing {key!r}", entry=idx)
        start, end = item["start"], item["end"]
        text = next((item[k] for k in text_keys if item.get(k) is not None), None)
        if text is None:
            raise TranscriptError(path, f"missing {' or '.join(map(repr, text_keys))}", entry=idx)
    else:
        raise TranscriptError(path, "expected an object with start, end and text", entry=idx)
    try:
        s, e = float(start), float(end)
    except (TypeError, ValueError):
        raise TranscriptError(
            path, f"start/end not numbers: {start!r}, {end!r}", entry=idx
        ) from None
    e = max(e, s)  # real captions have small inversions; keep the cue, zero-length
    if not isinstance(text, str):
        raise TranscriptError(path, "text is not a string", entry=idx)
    text = " ".join(text.split())
    return Cue(s, e, text) if text else None
