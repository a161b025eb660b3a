"""Lectures whose transcript repeats another lecture's, and which of the two it belongs to.

A transcript filed under the wrong lecture (3b1b-pt's ``2016/change-of-basis`` holds the
eigenvalues lecture's Portuguese sentences) or uploaded twice gives every window twice: search
returns each answer under two videos with the same score, the student's link opens the video
whose title the text does not fit half the time, and the duplicate fills a place of the top k.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from corpus.bm25 import stopwords
from corpus.text import fold

REPEAT_SHARE = 0.8
"""A lecture repeats another when this share of its distinct sentences is in the other."""

_WORD = re.compile(r"\w+", re.UNICODE)
_STEM = 5
"""Letters a title word and a text word share to count as one word ("autovetores",
"autovetor")."""


def _sentences(cues: pd.DataFrame) -> dict[str, set[str]]:
    texts = cues["text"].astype(str).str.lower().str.split().str.join(" ")
    sentences: dict[str, set[str]] = {}
    for lecture_id, text in zip(cues["lecture_id"].astype(str), texts, strict=True):
        if len(text) >= 20:  # "sim.", "ok" and the like repeat everywhere
            sentences.setdefault(lecture_id, set()).add(text)
    return sentences


def _shared(sentences: dict[str, set[str]]) -> dict[tuple[str, str], set[str]]:
    holders: dict[str, list[str]] = {}
    for lecture_id, own in sentences.items():
        for text in own:
            holders.setdefault(text, []).append(lecture_id)
    shared: dict[tuple[str, str], set[str]] = {}
    for text, ids in holders.items():
        if 1 < len(ids) <= 20:
            for i, a in enumerate(ids):
                for b in ids[i + 1:]:
                    shared.setdefault((a, b) if a < b else (b, a), set()).add(text)
    return shared


def _pairs(cues: pd.DataFrame, share: float) -> list[tuple[str, str, float, set[str]]]:
    sentences = _sentences(cues)
    out = []
    for (a, b), texts in sorted(_shared(sentences).items()):
        frac = len(texts) / min(len(sentences[a]), len(sentences[b]))
        if frac >= share:
            out.append((a, b, frac, texts))
    return out


def repeated_lectures(cues: pd.DataFrame, lectures: set[str], share: float = REPEAT_SHARE
                      ) -> list[dict[str, Any]]:
    """Pairs of lectures, one of them in ``lectures``, that share at least ``share`` of the
    smaller one's distinct sentences (compared lower-cased, spaces squeezed)."""
    out = []
    for a, b, frac, _ in _pairs(cues, share):
        if a in lectures or b in lectures:
            first, second = (a, b) if a in lectures else (b, a)
            out.append({"lecture_id": first, "repeats": second, "shared": round(frac, 3)})
    return out


SHINGLE = 5
"""Words in a row compared by ``text_share``."""


def _shingles(texts: list[str]) -> set[tuple[str, ...]]:
    words = [fold(w) for t in texts for w in _WORD.findall(t)]
    return {tuple(words[i:i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def text_share(texts: list[str], other: list[str]) -> float:
    """The share of ``texts``' runs of five words (accents folded) that ``other`` says too,
    whatever the cues' cuts: another file of a copied transcript (an SRT of a sentence JSON's
    text) 0.99, another translation of the same lecture 0.27, another lecture 0.01 (3b1b-pt)."""
    own = _shingles(texts)
    return len(own & _shingles(other)) / len(own) if own else 0.0


def title_fit(title: str, other_title: str, text: str) -> float:
    """How often ``text`` says the words of ``title`` that ``other_title`` does not have
    (accents folded, stop words and words under 4 letters left out, matched by their first
    five letters): the mean count per such word, 0 when the title has none."""
    stops = stopwords()

    def words(s: str) -> set[str]:
        return {fold(w)[:_STEM] for w in _WORD.findall(s)
                if len(w) >= 4 and fold(w) not in stops and not w.isdigit()}

    own = words(title) - words(other_title)
    if not own:
        return 0.0
    counts: dict[str, int] = dict.fromkeys(own, 0)
    for w in _WORD.findall(text):
        key = fold(w)[:_STEM]
        if key in counts:
            counts[key] += 1
    return sum(counts.values()) / len(own)


def misfiled(cues: pd.DataFrame, titles: dict[str, str], share: float = REPEAT_SHARE
             ) -> dict[str, str]:
    """For each pair of lectures that repeat each other (``repeated_lectures``): the one to
    leave out of search -> the one kept. The kept one is the lecture whose title the shared
    text fits better (``title_fit``: the eigenvalues lecture's title says "autovetores", which
    its text says dozens of times, the change-of-basis one says "mudança de base"); with no
    difference (the same lecture uploaded twice, or no titles), the one whose id sorts last is
    left out, so either way a student sees the text once."""
    out: dict[str, str] = {}
    for a, b, _, texts in _pairs(cues, share):
        if a in out or b in out:
            continue
        text = " ".join(texts)
        ta, tb = titles.get(a, ""), titles.get(b, "")
        fit_a, fit_b = title_fit(ta, tb, text), title_fit(tb, ta, text)
        keep, drop = (b, a) if fit_b > fit_a else (a, b)
        out[drop] = keep
    return out
