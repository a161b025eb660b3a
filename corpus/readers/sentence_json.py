"""Sentence JSON reader (the 3b1b captions shape): a list of ``{"start", "end",
"translatedText" | "text"}`` objects or of ``[text, start, end]`` triples."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from corpus.models import Cue
from corpus.readers.errors import TranscriptError, make_cue
from corpus.readers.whisper_json import load_json, seconds, text_field

log = logging.getLogger(__name__)


def cues_from(data: Any, path: Path) -> list[Cue]:
    """Cues from a parsed sentence list; ``translatedText`` is preferred over ``text``.

    A sentence whose ``end`` is before its ``start`` gets the two swapped: the 3b1b captions
    have such entries, and the swapped times fit exactly between their neighbours.
    """
    if data is None:
        return []
    swapped = 0
    if not isinstance(data, list):
        raise TranscriptError(path, "not sentence JSON (expected a list of sentences)")
    cues: list[Cue] = []
    for i, item in enumerate(data):
        if isinstance(item, dict):
            key = "translatedText" if "translatedText" in item else "text"
            for needed in ("start", "end", key):
                if needed not in item:
                    missing = "'translatedText' or 'text'" if needed == key else repr(needed)
                    raise TranscriptError(path, f"missing {missing}", entry=i)
            text = text_field(item[key], path, i, key)
            start, end = item["start"], item["end"]
        elif isinstance(item, list) and len(item) == 3:
            text = text_field(item[0], path, i, "text")
            start, end = item[1], item[2]
        else:
            raise TranscriptError(
                path,
                "expected an object with start/end/text or a [text, start, end] triple",
                entry=i,
            )
        begin, finish = seconds(start, path, i, "start"), seconds(end, path, i, "end")
        if finish < begin:
            begin, finish = finish, begin
            swapped += 1
        cue = make_cue(path, begin, finish, text, entry=i)
        if cue is not None:
            cues.append(cue)
    if swapped:
        log.info("%s: %d sentences ended before they started; times swapped", path, swapped)
    return cues


def read(path: Path) -> list[Cue]:
    """Cues of a sentence JSON file."""
    return cues_from(load_json(Path(path)), Path(path))
