"""Transcript readers, one module per format, and the dispatcher that picks one by file.

Each reader is ``read(path) -> list[Cue]``; malformed input raises
:class:`~corpus.readers.errors.TranscriptError` naming the file and line or entry, cues with
empty text are dropped, and a file without cues gives ``[]``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from corpus.models import Cue
from corpus.readers import sentence_json, srt, table, vtt, whisper_json
from corpus.readers.errors import TranscriptError

#: Format by file extension; ``"json"`` is sniffed into ``whisper_json`` or ``sentence_json``.
FORMATS: dict[str, str] = {
    ".srt": "srt",
    ".vtt": "vtt",
    ".json": "json",
    ".csv": "table",
    ".parquet": "table",
}

#: How much a format keeps (timing precision, clean text): higher wins when the same lecture
#: exists in several formats.
RICHNESS: dict[str, int] = {
    "whisper_json": 5,
    "sentence_json": 4,
    "vtt": 3,
    "srt": 2,
    "table": 1,
    "media": 0,  # a recording: transcribed only when no transcript of it is beside it
}

READERS: dict[str, Callable[[Path], list[Cue]]] = {
    "whisper_json": whisper_json.read,
    "sentence_json": sentence_json.read,
    "vtt": vtt.read,
    "srt": srt.read,
    "table": table.read,
}


def json_format(data: object) -> str | None:
    """``whisper_json`` for an object with ``segments``, ``sentence_json`` for a list (or an
    empty file, parsed as None), else None."""
    if whisper_json.is_whisper(data):
        return "whisper_json"
    return "sentence_json" if data is None or isinstance(data, list) else None


def sniff(path: Path) -> str | None:
    """The format name of a transcript file, or None when it is not one we read.

    ``.json`` is sniffed by :func:`json_format`; ``.csv``/``.parquet`` must have the table
    columns. Raises TranscriptError when the file cannot be decoded or parsed at all.
    """
    path = Path(path)
    kind = FORMATS.get(path.suffix.lower())
    if kind == "json":
        return json_format(whisper_json.load_json(path))
    if kind == "table":
        return "table" if table.is_table(path) else None
    return kind


def read_cues(path: Path) -> tuple[str, list[Cue]]:
    """Read one transcript file: (format name, cues)."""
    path = Path(path)
    if FORMATS.get(path.suffix.lower()) == "json":  # parse once: Whisper files can be large
        data = whisper_json.load_json(path)
        fmt = json_format(data)
        if fmt == "whisper_json":
            return fmt, whisper_json.cues_from(data, path)
        if fmt == "sentence_json":
            return fmt, sentence_json.cues_from(data, path)
    else:
        fmt = sniff(path)
    if fmt is None:
        known = ", ".join(FORMATS)
        raise TranscriptError(
            path,
            f"not a transcript we can read (formats: {known}; JSON must be Whisper "
            "segments or a sentence list; tables need lecture, start, end, text)",
        )
    return fmt, READERS[fmt](path)


__all__ = ["FORMATS", "READERS", "RICHNESS", "TranscriptError", "json_format", "read_cues", "sniff"]
