"""Whisper JSON: ``{"text": ..., "segments": [{"start", "end", "text", ...}]}``."""

from __future__ import annotations

from pathlib import Path

from corpus.models import Cue
from corpus.readers.errors import TranscriptError
from corpus.readers.json_common import cue_from, load_json


def read(path: Path) -> list[Cue]:
    data = load_json(path)
    if data is None:
        return []
    segs = data.get("segments") if isinstance(data, dict) else None
    if not isinstance(segs, list):
        raise TranscriptError(path, "not Whisper JSON: no 'segments' list")
    cues = [cue_from(path, i, s, ("text",)) for i, s in enumerate(segs)]
    return [c for c in cues if c is not None]
