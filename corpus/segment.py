"""Time-window segmentation: overlapping windows of whole cues (pure functions)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from corpus.errors import InputError
from corpus.models import Cue, Window


def _windows_by(
    cues: Sequence[Cue], size: Callable[[int, int], float], window: float, overlap: float
) -> list[Window]:
    """Greedy windows over cue indices, where ``size(i, j)`` measures cues i..j inclusive.

    A window grows while it stays within ``window``; it always holds at least one cue, so a cue
    is never cut. The next window starts at the earliest cue whose tail up to the previous
    window's end fits within ``overlap`` and that can still reach the cue after that end: a
    window is never a slice of the one before it. (Before a cue too long to join, such as a
    Whisper segment spanning minutes of music, each later start used to give another window
    ending at the same cue, down to a few seconds and a few words.)
    """
    out: list[Window] = []
    n = len(cues)
    i = 0
    while i < n:
        j = i
        while j + 1 < n and size(i, j + 1) <= window:
            j += 1
        text = " ".join(c.text.strip() for c in cues[i : j + 1] if c.text.strip())
        out.append(Window(start=cues[i].start, end=max(c.end for c in cues[i : j + 1]), text=text))
        if j == n - 1:
            break
        k = i + 1
        while k <= j and (size(k, j) > overlap or size(k, j + 1) > window):
            k += 1
        i = k
    return out


def segment_by_time(
    cues: Sequence[Cue], window_s: float = 120.0, overlap_s: float = 30.0
) -> list[Window]:
    """Windows of about ``window_s`` seconds, consecutive windows sharing about ``overlap_s``."""
    if overlap_s >= window_s:
        raise InputError("overlap must be shorter than the window")
    ordered = sorted(cues, key=lambda c: (c.start, c.end))
    return _windows_by(
        ordered, lambda i, j: ordered[j].end - ordered[i].start, window_s, overlap_s
    )


def segment_by_tokens(
    cues: Sequence[Cue],
    count_tokens: Callable[[str], int],
    window_tokens: int = 400,
    overlap_tokens: int = 100,
) -> list[Window]:
    """Windows of about ``window_tokens`` tokens (as the embedder counts them) with overlap."""
    if overlap_tokens >= window_tokens:
        raise InputError("overlap must be shorter than the window")
    ordered = sorted(cues, key=lambda c: (c.start, c.end))
    prefix = [0]
    for c in ordered:
        prefix.append(prefix[-1] + count_tokens(c.text))
    return _windows_by(
        ordered, lambda i, j: prefix[j + 1] - prefix[i], window_tokens, overlap_tokens
    )
