"""Finer units inside the windows: short overlapping spans of whole cues that locate answers.

A two-minute window is the right amount of context for an answer but too coarse to say where
in it the answer is. Units are short windows cut from the same cues (``UNIT_SECONDS`` long,
consecutive ones sharing ``UNIT_OVERLAP_SECONDS``); each is embedded and indexed for BM25 too.
A window is then scored by its best unit as well as by its own text, and a hit's
``answer_start`` is where its best unit starts. Pure functions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from corpus.models import Cue, Window
from corpus.segment import segment_by_time

UNIT_SECONDS = 30.0
UNIT_OVERLAP_SECONDS = 15.0


def make_units(
    cues: Sequence[Cue], seconds: float = UNIT_SECONDS, overlap: float = UNIT_OVERLAP_SECONDS
) -> list[Window]:
    """The units of one lecture's cues (empty cues left out)."""
    kept = [c for c in cues if c.text.strip()]
    return segment_by_time(kept, seconds, overlap) if kept else []


def members(
    win_lecture: np.ndarray, win_start: np.ndarray, win_end: np.ndarray,
    unit_lecture: np.ndarray, unit_start: np.ndarray, unit_end: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Which units belong to which window: a unit belongs to every window of its lecture that
    holds at least half of its duration. Returns parallel arrays (window row, unit row), sorted
    by window row."""
    pairs_w: list[np.ndarray] = []
    pairs_u: list[np.ndarray] = []
    order = np.argsort(unit_lecture, kind="stable")
    lec_sorted = unit_lecture[order]
    for lecture in np.unique(win_lecture):
        wrows = np.flatnonzero(win_lecture == lecture)
        lo, hi = np.searchsorted(lec_sorted, lecture), np.searchsorted(lec_sorted, lecture, "right")
        urows = order[lo:hi]
        if len(urows) == 0:
            continue
        us, ue = unit_start[urows], unit_end[urows]
        dur = np.maximum(ue - us, 1e-6)
        for w in wrows:
            overlap = np.minimum(ue, win_end[w]) - np.maximum(us, win_start[w])
            inside = urows[overlap >= 0.5 * dur]
            pairs_w.append(np.full(len(inside), w, dtype=np.int64))
            pairs_u.append(inside.astype(np.int64))
    if not pairs_w:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    w_all, u_all = np.concatenate(pairs_w), np.concatenate(pairs_u)
    order = np.argsort(w_all, kind="stable")
    return w_all[order], u_all[order]


def best_per_window(
    n_windows: int, pair_w: np.ndarray, pair_u: np.ndarray, unit_scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each window, its best unit's score (-inf without units) and that unit's row (-1)."""
    best = np.full(n_windows, -np.inf)
    which = np.full(n_windows, -1, dtype=np.int64)
    if len(pair_w) == 0:
        return best, which
    s = unit_scores[pair_u]
    # sort pairs by (window, score descending): the first of each window is its best unit
    order = np.lexsort((-s, pair_w))
    w_sorted = pair_w[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = w_sorted[1:] != w_sorted[:-1]
    rows = order[first]
    best[pair_w[rows]] = unit_scores[pair_u[rows]]
    which[pair_w[rows]] = pair_u[rows]
    return best, which
