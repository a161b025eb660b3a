"""SubRip (.srt): numbered cues, ``HH:MM:SS,mmm --> HH:MM:SS,mmm``, text lines."""

from __future__ import annotations

import re
from pathlib import Path

from corpus.models import Cue
from corpus.readers.errors import TranscriptError
from corpus.readers.text import read_text

_TS = re.compile(r"^\s*(?:(\d+):)?(\d{1,2}):(\d{1,2})(?:[,.](\d{1,3}))?\s*$")
_TAG = re.compile(r"<[^>]+>|\{\\[^}]*\}")


def parse_ts(value: str) -> float | None:
    """``[HH:]MM:SS[,.mmm]`` to seconds, None when malformed."""
    m = _TS.match(value)
    if not m:
        return None
    h, mnt, s, ms = m.groups()
    if int(mnt) >= 60 or int(s) >= 60:
        return None
    return int(h or 0) * 3600 + int(mnt) * 60 + int(s) + (int(ms.ljust(3, "0")) / 1000 if ms else 0)


def clean(text: str) -> str:
    return " ".join(_TAG.sub("", text).split())


def parse_timing(path: Path, line_no: int, line: str) -> tuple[float, float]:
    left, _, right = line.partition("-->")
    right = right.strip().split()[0] if right.strip() else ""
    start, end = parse_ts(left), parse_ts(right)
    if start is None or end is None:
        bad = left.strip() if start is None else right
        raise TranscriptError(path, f"bad timestamp {bad!r}", line=line_no)
    return start, max(start, end)  # a slightly inverted cue is kept, zero-length


def parse_blocks(path: Path, lines: list[str], first: int = 0) -> list[Cue]:
    """Cues from blocks separated by blank lines; each block has a ``-->`` timing line."""
    cues: list[Cue] = []
    i = first
    n = len(lines)
    while i < n:
        if not lines[i].strip():
            i += 1
            continue
        start_block = i
        block: list[tuple[int, str]] = []
        while i < n and lines[i].strip():
            block.append((i + 1, lines[i]))
            i += 1
        timing = next((k for k, (_, ln) in enumerate(block) if "-->" in ln), None)
        if timing is None:
            head = block[0][1].strip()
            if head.startswith(("NOTE", "STYLE", "REGION")):
                continue
            raise TranscriptError(path, f"cue without a timing line: {head[:40]!r}",
                                  line=start_block + 1)
        line_no, line = block[timing]
        start, end = parse_timing(path, line_no, line)
        text = clean(" ".join(ln for _, ln in block[timing + 1 :]))
        if text:
            cues.append(Cue(start, end, text))
    return cues


def read(path: Path) -> list[Cue]:
    return parse_blocks(path, read_text(path).splitlines())
