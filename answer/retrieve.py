"""Search stage: the hits for a ``Question``, as the service, the CLI and a batch run search.

The question is searched as ``Question.search`` reads it, translated first when it is in
another language than the lectures' and a translator is configured; a comparison's two
subjects are searched too and their best windows come up beside the first hit; a question
whose words all name one lecture's title (or two or three) gets that lecture's best hit
first (``corpus.titles``). The answer stages read a fixed number of hits (``DECISION_HITS``),
whatever ``k`` the student asked for: the gate was fitted on that many, and its signals read
them all.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from answer.question import Question
from answer.translate import needs_translation
from corpus.compare import with_sides
from corpus.models import Hit
from corpus.retrieve import SearchResult, SearchTimings
from corpus.titles import titled_first

DECISION_HITS = 10
"""Hits the focus, the evidence check and the gate read (the shipped gate's fitting k)."""

Translate = Callable[[str, str], str]


@dataclass(frozen=True)
class Retrieved:
    """What the search stage hands on: the question as searched, the ``k`` hits shown, the
    hits the answer stages read, and the seconds each step took."""

    question: Question
    hits: list[Hit]
    read: list[Hit]
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def query(self) -> str:
        return self.question.search


def search(retriever: Any, question: Question, k: int = 10,
           lectures: list[str] | None = None) -> SearchResult:
    """The hits for ``question`` (its ``search`` text). A comparison's subjects are searched
    too (with the rewriter on), and each one's best window comes up beside the whole
    question's first, its scores held to the whole question's: the gate reads them. Any other
    question whose words all name one lecture's title gets that lecture's best hit first
    (``corpus.titles``; with the rewriter on)."""
    res = retriever.search_timed(question.search, k, lectures=lectures)
    sides = question.sides if question.rewrite else None
    if sides is None and question.rewrite and res.hits:
        titled = titled_first(res.hits, retriever.titled_lectures(res.query),
                              lambda h: h.lecture_id)
        return replace(res, hits=titled)
    if sides is None or not res.hits:
        return res
    found = [retriever.search_timed(side, 1, lectures=lectures) for side in sides]
    timings = SearchTimings(
        embed_s=res.timings.embed_s + sum(f.timings.embed_s for f in found),
        search_s=res.timings.search_s + sum(f.timings.search_s for f in found),
        rerank_s=res.timings.rerank_s + sum(f.timings.rerank_s for f in found))
    return SearchResult(with_sides(res.hits, [_held(f.hits, res.hits) for f in found],
                                   lambda h: h.corpus_id, k), timings, res.query)


def _held(side: Sequence[Hit], hits: Sequence[Hit]) -> list[Hit]:
    """A side's hits with scores no higher than the whole question's (the window's to the
    first hit's, the best unit's to the best of the question's own hits)."""
    top = hits[0].score
    top_unit = max((h.unit_score for h in hits if h.unit_score is not None), default=None)
    return [replace(h, score=min(h.score, top),
                    unit_score=(None if top_unit is None or h.unit_score is None
                                else min(h.unit_score, top_unit))) for h in side]


def translated(question: Question, lectures: str, translate: Translate | None) -> Question:
    """``question`` searched in the lectures' language when it is in another one and a
    translator is configured; as it is otherwise."""
    if translate is None or not needs_translation(question.search, lectures):  # type: ignore[arg-type]
        return question
    return question.searched_as(translate(question.search, lectures))


def retrieve(retriever: Any, question: Question, k: int = 10,
             lectures: list[str] | None = None, translate: Translate | None = None
             ) -> Retrieved:
    """The search stage: translate when needed, then search ``max(k, DECISION_HITS)`` hits
    (the first ``k`` of them are the same as a search for ``k``)."""
    t0 = time.perf_counter()
    asked = translated(question, retriever.language, translate)
    translate_s = time.perf_counter() - t0
    res = search(retriever, asked, max(k, DECISION_HITS), lectures)
    timings = {"embedding": res.timings.embed_s, "search": res.timings.search_s}
    if asked.translated:
        timings["translate"] = translate_s
    return Retrieved(asked, list(res.hits[:k]), list(res.hits[:DECISION_HITS]), timings)
