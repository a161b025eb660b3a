"""Word error rate of a transcript against the text that was spoken (pure functions)."""

from __future__ import annotations

import re
import unicodedata

_PUNCT = re.compile(r"[^\w\s]")


def words(text: str) -> list[str]:
    """Lower-case words without punctuation (accents kept: "é" and "e" are different words)."""
    text = unicodedata.normalize("NFC", text).lower().replace("-", " ")
    return _PUNCT.sub(" ", text).split()


def word_error_rate(reference: str, hypothesis: str) -> float:
    """(substitutions + deletions + insertions) / reference words, by word-level edit distance."""
    ref, hyp = words(reference), words(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1] / len(ref)
