"""WebVTT (.vtt) reader: header, NOTE/STYLE/REGION blocks and cue settings skipped, tags
stripped."""

from __future__ import annotations

from pathlib import Path

from corpus.models import Cue
from corpus.readers.errors import TranscriptError
from corpus.readers.srt import blocks, timed_cue
from corpus.readers.text import read_text

_SKIPPED_BLOCKS = ("NOTE", "STYLE", "REGION")


def read(path: Path) -> list[Cue]:
    """Cues of a WebVTT file (a missing ``WEBVTT`` header is tolerated)."""
    path = Path(path)
    cues: list[Cue] = []
    previous_end: float | None = None
    for i, (number, lines) in enumerate(blocks(read_text(path))):
        head = lines[0].strip()
        if i == 0 and _starts_with_word(head, "WEBVTT"):
            continue
        if any(_starts_with_word(head, word) for word in _SKIPPED_BLOCKS):
            continue
        if "-->" in lines[0]:
            cue = timed_cue(path, lines[0], number, lines[1:], previous_end)
        elif len(lines) > 1 and "-->" in lines[1]:
            cue = timed_cue(path, lines[1], number + 1, lines[2:], previous_end)
        else:
            at = 1 if len(lines) > 1 else 0
            raise TranscriptError(
                path,
                f"expected a cue timing line, got {lines[at].strip()[:40]!r}",
                line=number + at,
            )
        if cue is not None:
            cues.append(cue)
            previous_end = cue.end
    return cues


def _starts_with_word(line: str, word: str) -> bool:
    return line == word or line.startswith((word + " ", word + "\t"))
