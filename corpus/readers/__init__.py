"""Transcript readers by format, and the order in which formats are preferred."""

from __future__ import annotations

import json
from pathlib import Path

from corpus.models import Cue
from corpus.readers import sentence_json, srt, vtt, whisper_json
from corpus.readers.errors import TranscriptError
from corpus.readers.text import read_text

__all__ = ["RICHNESS", "TRANSCRIPT_SUFFIXES", "TranscriptError", "read_cues", "sniff"]

# Richer first: word-level/ASR timings and full text beat subtitle cues.
RICHNESS = ["whisper_json", "sentence_json", "vtt", "srt", "table"]
TRANSCRIPT_SUFFIXES = {".json", ".srt", ".vtt", ".csv", ".parquet"}
READERS = {
    "whisper_json": whisper_json.read,
    "sentence_json": sentence_json.read,
    "vtt": vtt.read,
    "srt": srt.read,
}


def sniff(path: Path) -> str | None:
    """The format of a file, or None when it is not a transcript we know."""
    suffix = path.suffix.lower()
    if suffix == ".srt":
        return "srt"
    if suffix == ".vtt":
        return "vtt"
    if suffix in (".csv", ".parquet"):
        from corpus.readers.table import is_table

        return "table" if is_table(path) else None
    if suffix == ".json":
        try:
            head = read_text(path).lstrip()[:1]
        except (TranscriptError, OSError):
            return None
        if head == "[":
            return "sentence_json"
        if head == "{":
            try:
                data = json.loads(read_text(path))
            except json.JSONDecodeError:
                return "whisper_json"  # let the reader report where it breaks
            return "whisper_json" if isinstance(data, dict) and "segments" in data else None
        return None
    return None


def read_cues(path: Path, fmt: str | None = None) -> tuple[str, list[Cue]]:
    """Read one single-lecture transcript file: (format, cues)."""
    fmt = fmt or sniff(path)
    if fmt is None or fmt not in READERS:
        raise TranscriptError(path, "not a transcript format Aula reads")
    return fmt, READERS[fmt](path)
