"""WebVTT (.vtt): a ``WEBVTT`` header, then cues like SRT (optional ids, cue settings)."""

from __future__ import annotations

from pathlib import Path

from corpus.models import Cue
from corpus.readers.errors import TranscriptError
from corpus.readers.srt import parse_blocks
from corpus.readers.text import read_text


def read(path: Path) -> list[Cue]:
    lines = read_text(path).splitlines()
    if not lines or not lines[0].lstrip("\ufeff").startswith("WEBVTT"):
        if not "".join(lines).strip():
            return []
        raise TranscriptError(path, "missing the WEBVTT header", line=1)
    first = 1
    while first < len(lines) and lines[first].strip():  # header block (metadata lines)
        first += 1
    return parse_blocks(path, lines, first)
