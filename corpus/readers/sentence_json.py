"""Sentence JSON: a list of ``{start, end, translatedText | text}`` or ``[text, start, end]``."""

from __future__ import annotations

from pathlib import Path

from corpus.models import Cue
from corpus.readers.errors import TranscriptError
from corpus.readers.json_common import cue_from, load_json


def read(path: Path) -> list[Cue]:
    data = load_json(path)
    if data is None:
        return []
    if not isinstance(data, list):
        raise TranscriptError(path, "expected a JSON list of sentences")
    cues = [cue_from(path, i, s, ("translatedText", "text")) for i, s in enumerate(data)]
    return [c for c in cues if c is not None]
