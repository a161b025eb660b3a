"""Text normal forms shared by search, the answer path and the judges."""

from __future__ import annotations

import re
import unicodedata

SENTENCE_BREAK = re.compile(r"(?<=[.!?…])\s+")
"""The space after a sentence's end: where a transcript's text is cut into sentences."""


def fold(text: str) -> str:
    """Lower case without accents (and with a typographic apostrophe as a plain one), for
    matching words however a transcript, a translation or a student spells their accents."""
    decomposed = unicodedata.normalize("NFKD", text.lower().replace("\u2019", "'"))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))
