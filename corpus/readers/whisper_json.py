"""Whisper JSON reader (``{"text": ..., "segments": [{"start", "end", "text", ...}]}``), plus
the JSON loading and field checks the sentence reader shares."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from corpus.models import Cue
from corpus.readers.errors import TranscriptError, make_cue
from corpus.readers.text import read_text


def load_json(path: Path) -> Any:
    """The parsed JSON of a transcript file; None for an empty file."""
    text = read_text(path)
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(path, f"invalid JSON: {exc.msg}", line=exc.lineno) from exc


def is_whisper(data: Any) -> bool:
    """Whether parsed JSON has the Whisper shape (an object with ``segments``)."""
    return isinstance(data, dict) and "segments" in data


def seconds(value: Any, path: Path, entry: int, key: str) -> float:
    """A time field as float seconds (numbers or numeric strings)."""
    if value is None:
        raise TranscriptError(path, f"missing {key!r}", entry=entry)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TranscriptError(path, f"{key!r} is not a number: {value!r}", entry=entry)
    try:
        number = float(value)
    except ValueError as exc:
        raise TranscriptError(path, f"{key!r} is not a number: {value!r}", entry=entry) from exc
    if not math.isfinite(number):
        raise TranscriptError(path, f"{key!r} is not a number: {value!r}", entry=entry)
    return number


def text_field(value: Any, path: Path, entry: int, key: str) -> str:
    """A text field, which must be a string."""
    if not isinstance(value, str):
        raise TranscriptError(path, f"{key!r} is not text: {value!r}"[:120], entry=entry)
    return value


def cues_from(data: Any, path: Path) -> list[Cue]:
    """Cues from parsed Whisper JSON; each segment needs ``start``, ``end`` and ``text``."""
    if data is None:
        return []
    if not is_whisper(data):
        raise TranscriptError(path, "not Whisper JSON (expected an object with 'segments')")
    segments = data["segments"]
    if not isinstance(segments, list):
        raise TranscriptError(path, "'segments' is not a list")
    cues: list[Cue] = []
    for i, seg in enumerate(segments):
        if not isinstance(seg, dict):
            raise TranscriptError(path, "segment is not an object", entry=i)
        for key in ("start", "end", "text"):
            if key not in seg:
                raise TranscriptError(path, f"missing {key!r}", entry=i)
        start = seconds(seg["start"], path, i, "start")
        end = seconds(seg["end"], path, i, "end")
        cue = make_cue(path, start, end, text_field(seg["text"], path, i, "text"), entry=i)
        if cue is not None:
            cues.append(cue)
    return cues


def read(path: Path) -> list[Cue]:
    """Cues of a Whisper JSON file (the top-level ``text`` is ignored)."""
    return cues_from(load_json(Path(path)), Path(path))
