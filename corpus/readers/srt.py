"""SubRip (.srt) reader, plus the timestamp and block parsing WebVTT shares."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path

from corpus.models import Cue
from corpus.readers.errors import TranscriptError, make_cue
from corpus.readers.text import clean_caption, read_text

log = logging.getLogger(__name__)

_TIMESTAMP = re.compile(r"(?:(\d+):)?(\d{1,2}):(\d{1,2})(?:[.,](\d+))?")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_TIMEISH = re.compile(r"\s*\d+:\d")


def parse_timestamp(value: str) -> float:
    """Seconds from ``HH:MM:SS,mmm``, ``HH:MM:SS.mmm``, ``MM:SS.mmm`` (fraction optional).

    Raises ValueError with the reason ``bad timestamp '...'``.
    """
    m = _TIMESTAMP.fullmatch(value.strip())
    if not m or int(m[2]) >= 60 or int(m[3]) >= 60:
        raise ValueError(f"bad timestamp {value.strip()!r}")
    hours, minutes, seconds = int(m[1] or 0), int(m[2]), int(m[3])
    fraction = float(f"0.{m[4]}") if m[4] else 0.0
    return hours * 3600 + minutes * 60 + seconds + fraction


def parse_timing(line: str) -> tuple[float, float]:
    """``start --> end [settings]`` as seconds; cue settings after the end time are ignored."""
    parts = line.split("-->")
    if len(parts) != 2 or not parts[1].split():
        raise ValueError(f"bad timing line {line.strip()!r}")
    return parse_timestamp(parts[0]), parse_timestamp(parts[1].split()[0])


def blocks(text: str) -> Iterator[tuple[int, list[str]]]:
    """Runs of non-blank lines, each with the 1-based number of its first line."""
    current: list[str] = []
    first = 0
    for number, line in enumerate(_LINE_BREAK.split(text), start=1):
        if line.strip():
            if not current:
                first = number
            current.append(line.rstrip())
        elif current:
            yield first, current
            current = []
    if current:
        yield first, current


def timed_cue(path: Path, timing: str, line: int, body: list[str],
              previous_end: float | None = None) -> Cue | None:
    """A cue from its timing line (at ``line``) and text lines; errors name the timing line.

    A cue that ends before it starts, at the second the cue before it ends (``previous_end``),
    is read as an instant and logged: auto-generated captions write such cues ("00:04:28,420 -->
    00:04:28,020" after a cue ending at 00:04:28,020; 12 cues in 7 of the 189 Portuguese SRT
    files of 3b1b-pt), and each used to reject its whole lecture. Any other inverted cue is an
    error naming its line."""
    try:
        start, end = parse_timing(timing)
    except ValueError as exc:
        raise TranscriptError(path, str(exc), line=line) from exc
    if end < start and previous_end is not None and abs(end - previous_end) < 0.0005:
        log.warning("%s: line %d: cue ends at %g, before it starts, where the cue before it "
                    "ends; read as an instant at %g", path, line, end, start)
        end = start
    return make_cue(path, start, end, clean_caption("\n".join(body)), line=line)


def read(path: Path) -> list[Cue]:
    """Cues of an SRT file. A text block with no cue number or timing line continues the
    previous cue (some editors leave blank lines inside cue text)."""
    path = Path(path)
    raw: list[tuple[str, int, list[str]]] = []
    for number, lines in blocks(read_text(path)):
        if "-->" in lines[0]:
            raw.append((lines[0], number, lines[1:]))
        elif len(lines) > 1 and "-->" in lines[1]:
            raw.append((lines[1], number + 1, lines[2:]))
        elif raw and not lines[0].strip().isdigit() and not _TIMEISH.match(lines[0]):
            raw[-1][2].extend(lines)
        elif lines[0].strip().isdigit() and len(lines) > 1:
            raise TranscriptError(path, f"bad timing line {lines[1].strip()!r}", line=number + 1)
        else:
            raise TranscriptError(
                path,
                f"expected a cue number or timing line, got {lines[0].strip()[:40]!r}",
                line=number,
            )
    cues: list[Cue] = []
    previous_end: float | None = None
    for timing, line, body in raw:
        cue = timed_cue(path, timing, line, body, previous_end)
        if cue is not None:
            cues.append(cue)
            previous_end = cue.end
    return cues
