"""Reading transcript files as text: UTF-8 first, Latin-1 when that is clearly what it is."""

from __future__ import annotations

import re
from pathlib import Path

from corpus.readers.errors import TranscriptError

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def read_text(path: Path) -> str:
    raw = Path(path).read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    if _CONTROL.search(text):
        raise TranscriptError(path, "not text: neither UTF-8 nor Latin-1")
    return text
