"""Context selection, one module for every reader of segments: the answerer, the judges, ragas.

Two jobs, pure functions over plain data:

- **Budget** (``share``, ``cut``, ``fit_texts``): segments cut so that together they fit one
  character budget (``Settings.llm.context_chars``), water-filling: every text gets an equal share,
  short ones hand what they don't use to the long ones, a cut one ends at a word boundary with
  ``…``. The judge therefore reads the same amount of each segment as the answerer did.
- **Focus** (``focus``): a two-minute window trimmed to the few sentences around the answer.
  The window's timed cues (sentences) are scored against the question with E5 in short groups;
  the best group, widened to about ``chars`` characters, is the passage, and the second its
  first sentence starts is ``answer_start``, where a citation link opens the video.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from corpus.bm25 import tokenize
from corpus.models import Cue, Hit

EmbedFn = Callable[[list[str], str], np.ndarray]
"""``embed(texts, kind)`` with kind "query" or "passage" -> L2-normalised rows (E5)."""

CONTEXT_CHARS = 6000
"""The default budget of segment text in one prompt (``Settings.llm.context_chars``): about 1,700
tokens of spoken Portuguese, which the embedded 1.5B model reads in ~17 s on 2 CPU threads."""

PASSAGE_CHARS = 450
"""A focused passage: the best sentences and their neighbours, about this many characters."""

FOCUS_REACH = 0.0
"""Seconds past a window's edges where the answer's focus looks too (``focus``'s ``reach``,
``Settings.answer.focus_reach``). 40 s gave more right answers on the answer sets' fitting
halves and fewer on the lecture captions' test half, where the focus moved off sentences it had
found: off by default (docs/answers.md)."""

GROUP = 3
"""Sentences scored together when looking for the answer (one cue is often half a sentence)."""


# --- budget ---------------------------------------------------------------------------------


def share(total: int, sizes: Sequence[int]) -> list[int]:
    """Water-filling: each item gets min(size, equal share of what is left)."""
    budgets = [0] * len(sizes)
    left, open_items = max(0, total), sorted(range(len(sizes)), key=lambda i: sizes[i])
    while open_items:
        part = left // len(open_items)
        i = open_items[0]
        if sizes[i] <= part:
            budgets[i] = sizes[i]
            left -= sizes[i]
            open_items.pop(0)
        else:
            for j in open_items:
                budgets[j] = part
            break
    return budgets


def cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, ending at a word boundary with ``…``."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return "…"
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space > limit // 2:
        head = head[:space]
    return head.rstrip() + "…"


def squash(text: str) -> str:
    return " ".join(text.split())


def fit_texts(texts: Sequence[str], budget: int = CONTEXT_CHARS, min_chars: int = 0) -> list[str]:
    """``texts`` cut to share ``budget`` characters, in order.

    When a share would drop below ``min_chars``, the last texts are left out instead, so the
    result can be shorter than ``texts`` (always a prefix: numbering holds).
    """
    flat = [squash(t) for t in texts]
    for keep in range(len(flat), 0, -1):
        sizes = [len(t) for t in flat[:keep]]
        budgets = share(budget, sizes)
        if budgets == sizes:
            return flat[:keep]
        if min(b for b, s in zip(budgets, sizes, strict=True) if b < s) >= min_chars or keep == 1:
            return [cut(t, b) for t, b in zip(flat[:keep], budgets, strict=True)]
    return []


def numbered(texts: Sequence[str], budget: int = CONTEXT_CHARS) -> str:
    """Texts numbered ``[1] ...`` in rank order, cut to share ``budget`` (a judge's block)."""
    if not texts:
        return "(no segments)"
    fitted = [cut(squash(t), b) for t, b in
              zip(texts, share(budget, [len(squash(t)) for t in texts]), strict=True)]
    return "\n\n".join(f"[{i}] {t}" for i, t in enumerate(fitted, start=1))


# --- focus ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Passage:
    """The part of a retrieved window that answers: its text, span and where the answer starts."""

    hit: Hit
    text: str
    start: float
    end: float
    answer_start: float
    similarity: float = 0.0
    """E5 cosine of the question with the passage's best sentence group (0 when unscored)."""
    cues: tuple[Cue, ...] = ()
    """The timed sentences the passage is made of (``said_at`` finds an answer's sentence in
    them)."""

    def as_hit(self) -> Hit:
        """The passage as a hit (same corpus id, the passage's span and text)."""
        h = self.hit
        return Hit(h.corpus_id, h.score, h.lecture_id, h.title, h.url, self.start, self.end,
                   self.text)


def _sentences_of(hit: Hit, cues: Sequence[Cue]) -> list[Cue]:
    """The window's cues, or, for an index without cues, its text cut at full stops with times
    spread by character offset."""
    inside = [c for c in cues if c.end > hit.start and c.start < hit.end and c.text.strip()]
    if inside:
        return inside
    parts = [p for p in re.split(r"(?<=[.!?])\s+", squash(hit.text)) if p]
    total = max(1, sum(len(p) + 1 for p in parts))
    span, out, pos = hit.end - hit.start, [], 0
    for p in parts:
        a = hit.start + span * pos / total
        pos += len(p) + 1
        out.append(Cue(a, hit.start + span * pos / total, p))
    return out


def _widen(cues: Sequence[Cue], lo: int, hi: int, chars: int) -> tuple[int, int]:
    """Grow [lo, hi] by whole cues, one before for each two after, up to ``chars``."""
    size = sum(len(c.text) + 1 for c in cues[lo : hi + 1])
    turn = 0
    while size < chars and (lo > 0 or hi < len(cues) - 1):
        if (turn % 3 == 0 and lo > 0) or hi == len(cues) - 1:
            lo -= 1
            size += len(cues[lo].text) + 1
        else:
            hi += 1
            size += len(cues[hi].text) + 1
        turn += 1
    return lo, hi


def focus(
    question: str,
    hits: Sequence[Hit],
    cues_of: Callable[[Hit], Sequence[Cue]],
    embed: EmbedFn | None,
    *,
    chars: int = PASSAGE_CHARS,
    group: int = GROUP,
    reach: float = 0.0,
) -> list[Passage]:
    """Each hit trimmed to about ``chars`` characters around its sentences closest to
    ``question`` (E5 over groups of ``group`` cues), looked for in the hit's span and
    ``reach`` seconds either side of it (the answer a window holds by its edge is often said
    mostly in the next one). Without ``embed`` a passage keeps the window's first ``chars``
    characters. Hits keep their order."""
    out: list[Passage] = []
    per_hit: list[tuple[Hit, Hit, list[Cue], list[str]]] = []
    for hit in hits:
        # the span looked in: the window, widened by ``reach`` when the window has cues of its
        # own (without any, its text is cut into sentences over its own seconds)
        span = (replace(hit, start=max(0.0, hit.start - reach), end=hit.end + reach)
                if reach > 0 else hit)
        cues = cues_of(span)
        if span is not hit and not any(c.end > hit.start and c.start < hit.end for c in cues):
            span = hit
        sents = _sentences_of(span, cues)
        groups = [" ".join(c.text.strip() for c in sents[i : i + group])
                  for i in range(max(1, len(sents) - group + 1))]
        per_hit.append((hit, span, sents, groups))
    sims: list[np.ndarray] = []
    if embed is not None and per_hit:
        qv = np.asarray(embed([question], "query"))[0]
        flat = [g for _, _, _, gs in per_hit for g in gs]
        vecs = np.asarray(embed(flat, "passage")) if flat else np.zeros((0, len(qv)))
        scores, i = vecs @ qv, 0
        for _, _, _, gs in per_hit:
            sims.append(scores[i : i + len(gs)])
            i += len(gs)
    for n, (hit, span, sents, _) in enumerate(per_hit):
        if not sents:
            out.append(Passage(hit, cut(squash(hit.text), chars), hit.start, hit.end, hit.start))
            continue
        if sims:
            best = int(np.argmax(sims[n]))
            sim = float(sims[n][best])
        else:
            best, sim = 0, 0.0
        lo, hi = best, min(len(sents) - 1, best + group - 1)
        lo, hi = _widen(sents, lo, hi, chars)
        chosen = sents[lo : hi + 1]
        text = squash(" ".join(c.text for c in chosen))
        start = max(span.start, chosen[0].start)
        end = min(span.end, max(c.end for c in chosen))
        out.append(Passage(hit, text, start, end, max(start, sents[best].start), sim,
                           tuple(chosen)))
    return out


SAID_MIN_WORDS = 2
"""Content words an answer's sentence must share with a passage's cues to be placed in them."""
SAID_MIN_SHARE = 0.5
"""...and the share of its content words they must say. With two words alone, an English
sentence over a Portuguese passage was placed at the cue that shares "fractal" and "real" with
it, 21 s after the one that says it (answer bench a16)."""


def said_at(sentence: str, passage: Passage, span: int = 2) -> float | None:
    """The second where ``passage`` says what ``sentence`` (an answer's) says: the start of
    the run of ``span`` cues holding the most of its content words (BM25's tokens: stems,
    accents folded, stop words dropped), of those the one whose first cue says the most, the
    earliest of equals; None when no run holds ``SAID_MIN_WORDS`` of them and
    ``SAID_MIN_SHARE`` of them, or the passage has no cues (the citation's link then holds).

    A citation's link opened where the passage's sentences closest to the *question* start;
    an answer of three sentences drawn from one passage linked all three there, up to half a
    minute before the words a sentence repeats."""
    words = set(tokenize(sentence))
    if not words or not passage.cues:
        return None
    said = [set(tokenize(c.text)) & words for c in passage.cues]
    best, at = (0, 0), None
    for i in range(len(said)):
        # the run's words, then its first cue's: a run starts where the sentence does, not
        # at the cue before that shares one word with it
        n = (len(set().union(*said[i : i + span])), len(said[i]))
        if said[i] and n > best:
            best, at = n, i
    if at is None or best[0] < max(SAID_MIN_WORDS, SAID_MIN_SHARE * len(words)):
        return None
    return max(passage.start, passage.cues[at].start)


def rank_passages(passages: Sequence[Passage]) -> list[Passage]:
    """Passages in their windows' order, which is the retriever's (the fitted fusion of dense and
    BM25 over windows and units, then the reranker when one is on); a passage that overlaps a
    better one of the same lecture (windows overlap), or repeats a better one's words in another
    lecture (a transcript uploaded twice), is left out.

    Passages used to be re-ranked by their best sentence group's E5 similarity plus half the
    window's E5 cosine: dense signals alone, overriding BM25, the fusion and any reranker. On
    the 74 fitting questions (``questions_3b1b_dev``, the fitting half of ``answers_3b1b``) the
    first passage overlapped the gold span for 41 questions in the retriever's order against 35
    re-ranked (the first two: 43 both); ``BENCH_ONLY=retrieval_quality make bench`` prints both
    there and on the held-out questions (``*_passages_*``)."""
    chosen: list[tuple[Passage, set[str]]] = []
    for p in passages:
        words = set(re.findall(r"\w+", p.text.lower()))
        if not any((c.hit.lecture_id == p.hit.lecture_id and p.start < c.end and p.end > c.start)
                   or _same_words(words, w) for c, w in chosen):
            chosen.append((p, words))
    return [p for p, _ in chosen]


REPEAT_JACCARD = 0.8
"""Two passages whose word sets overlap this much (Jaccard) say the same thing."""


def _same_words(a: set[str], b: set[str]) -> bool:
    return bool(a and b) and len(a & b) / len(a | b) >= REPEAT_JACCARD
