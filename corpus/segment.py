"""Time-window segmentation: overlapping windows of whole cues (pure functions)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from corpus.errors import InputError
from corpus.models import Cue, Window

MIN_WINDOW_WORDS = 30
"""A window of fewer words is joined to its neighbour (``segment_by_time``'s ``min_words``)."""

STRETCHED_AFTER_SECONDS = 30.0
STRETCHED_SECONDS_PER_WORD = 2.0
SPOKEN_SECONDS_PER_WORD = 0.75
"""A cue lasting over ``STRETCHED_AFTER_SECONDS`` at more than ``STRETCHED_SECONDS_PER_WORD``
is not believable: it ends ``SPOKEN_SECONDS_PER_WORD`` a word after its start instead (2.5x
the median pace of 3b1b-pt's 18,246 translated sentences, 0.30 s a word; their 99.9th
percentile is 6 s a word, on cues of a few seconds)."""


def believable_ends(cues: Sequence[Cue]) -> tuple[list[Cue], list[Cue]]:
    """``cues`` with each stretched cue's end cut to the time its words take, and the stretched
    cues as they were.

    Captions of live streams end with one short sentence stretched to the end of the video (a
    sentence of 74 words lasting from 18:47 to 1:22:10, the rest of the stream untranslated)
    or open with a greeting lasting the minutes of music before it (7 words, 0:00 to 9:30).
    Taken as they are, a window holding such a cue spans up to an hour, a citation of it links
    an hour of video, and its few words rank first for questions they do not answer.
    """
    kept: list[Cue] = []
    stretched: list[Cue] = []
    for c in cues:
        words = max(1, len(c.text.split()))
        length = c.end - c.start
        if length > STRETCHED_AFTER_SECONDS and length > STRETCHED_SECONDS_PER_WORD * words:
            stretched.append(c)
            c = Cue(c.start, c.start + SPOKEN_SECONDS_PER_WORD * words, c.text)
        kept.append(c)
    return kept, stretched


def _join_sparse(spans: list[tuple[int, int]], words: Sequence[int], min_words: int
                 ) -> list[tuple[int, int]]:
    """Cue ranges with fewer than ``min_words`` words joined to the next range (the last to
    the one before it): a greeting alone between minutes of silence is not a window."""
    prefix = [0]
    for w in words:
        prefix.append(prefix[-1] + w)
    out = list(spans)
    k = 0
    while len(out) > 1 and k < len(out):
        i, j = out[k]
        if prefix[j + 1] - prefix[i] >= min_words:
            k += 1
            continue
        m = k + 1 if k + 1 < len(out) else k - 1
        a, b = sorted((k, m))
        out[a:b + 1] = [(min(out[a][0], out[b][0]), max(out[a][1], out[b][1]))]
        k = a
    return out


def _windows_by(
    cues: Sequence[Cue], size: Callable[[int, int], float], window: float, overlap: float,
    min_words: int = 0,
) -> list[Window]:
    """Greedy windows over cue indices, where ``size(i, j)`` measures cues i..j inclusive.

    A window grows while it stays within ``window``; it always holds at least one cue, so a cue
    is never cut. The next window starts at the earliest cue whose tail up to the previous
    window's end fits within ``overlap`` and that can still reach the cue after that end: a
    window is never a slice of the one before it. (Before a cue too long to join, such as a
    Whisper segment spanning minutes of music, each later start used to give another window
    ending at the same cue, down to a few seconds and a few words.)
    """
    spans: list[tuple[int, int]] = []
    n = len(cues)
    i = 0
    while i < n:
        j = i
        while j + 1 < n and size(i, j + 1) <= window:
            j += 1
        spans.append((i, j))
        if j == n - 1:
            break
        k = i + 1
        while k <= j and (size(k, j) > overlap or size(k, j + 1) > window):
            k += 1
        i = k
    if min_words > 0:
        spans = _join_sparse(spans, [len(c.text.split()) for c in cues], min_words)
    return [Window(start=cues[i].start, end=max(c.end for c in cues[i : j + 1]),
                   text=" ".join(c.text.strip() for c in cues[i : j + 1] if c.text.strip()))
            for i, j in spans]


def segment_by_time(
    cues: Sequence[Cue], window_s: float = 120.0, overlap_s: float = 30.0, min_words: int = 0
) -> list[Window]:
    """Windows of about ``window_s`` seconds, consecutive windows sharing about ``overlap_s``;
    a window of fewer than ``min_words`` words is joined to its neighbour."""
    if overlap_s >= window_s:
        raise InputError("overlap must be shorter than the window")
    ordered = sorted(cues, key=lambda c: (c.start, c.end))
    return _windows_by(
        ordered, lambda i, j: ordered[j].end - ordered[i].start, window_s, overlap_s, min_words
    )


def segment_by_tokens(
    cues: Sequence[Cue],
    count_tokens: Callable[[str], int],
    window_tokens: int = 400,
    overlap_tokens: int = 100,
    min_words: int = 0,
) -> list[Window]:
    """Windows of about ``window_tokens`` tokens (as the embedder counts them) with overlap;
    a window of fewer than ``min_words`` words is joined to its neighbour."""
    if overlap_tokens >= window_tokens:
        raise InputError("overlap must be shorter than the window")
    ordered = sorted(cues, key=lambda c: (c.start, c.end))
    prefix = [0]
    for c in ordered:
        prefix.append(prefix[-1] + count_tokens(c.text))
    return _windows_by(
        ordered, lambda i, j: prefix[j + 1] - prefix[i], window_tokens, overlap_tokens, min_words
    )
