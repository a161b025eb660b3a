"""The one error a transcript reader raises, and the cue checks every reader shares."""

from __future__ import annotations

import math
from pathlib import Path

from corpus.errors import InputError
from corpus.models import Cue


class TranscriptError(InputError):
    """A transcript that cannot be read, naming the file and the line or JSON entry at fault.

    ``str()`` is one line, e.g. ``lectures/a.srt: line 14: bad timestamp '00:01:xx,000'``.
    """

    def __init__(
        self, path: Path | str, reason: str, *, line: int | None = None, entry: int | None = None
    ) -> None:
        self.path = Path(path)
        self.line = line
        self.entry = entry
        self.reason = reason
        super().__init__(self._message())

    def _message(self) -> str:
        where = [str(self.path)]
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.entry is not None:
            where.append(f"entry {self.entry}")
        return ": ".join([*where, self.reason])


def make_cue(
    path: Path,
    start: float,
    end: float,
    text: str,
    *,
    line: int | None = None,
    entry: int | None = None,
) -> Cue | None:
    """A checked cue with whitespace collapsed, or None when the text is empty.

    Times must be finite, not negative, and ``end`` not before ``start``.
    """
    for name, value in (("start", start), ("end", end)):
        if not math.isfinite(value) or value < 0:
            raise TranscriptError(path, f"bad {name} time {value!r}", line=line, entry=entry)
    if end < start:
        raise TranscriptError(
            path, f"cue ends before it starts ({end:g} < {start:g})", line=line, entry=entry
        )
    text = " ".join(text.split())
    return Cue(float(start), float(end), text) if text else None
