"""Retrieval quality against questions with gold spans, and fitting the fusion weights.

A question set is JSON Lines with ``id``, ``question``, ``gold_lecture``, ``gold_start`` and
``gold_end`` (seconds); ``answerable: false`` rows are skipped, ``split`` and ``lang`` are
optional. Figures, per question averaged:

- ``span_hit@k``: a hit among the first k is a window of the gold lecture overlapping the span;
- ``video_hit@k``: a hit among the first k comes from the gold lecture;
- ``mrr@10``: 1 / rank of the first span hit in the first 10;
- ``start_in_span@1``: the first hit's link (``answer_start``) opens inside the gold span, with
  ``START_SLACK`` seconds of slack: where the student lands.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpus.errors import InputError
from corpus.fusion import Fusion, Ranking, fit
from corpus.jsonlines import read_objects
from corpus.models import Hit

START_SLACK = 10.0


class GoldSetError(InputError):
    """A question set that cannot be used, said with its file and line."""


@dataclass(frozen=True)
class GoldQuestion:
    id: str
    question: str
    lecture: str
    start: float
    end: float
    lang: str = ""
    split: str = ""

    def overlaps(self, lecture_id: str, start: float, end: float) -> bool:
        return lecture_id == self.lecture and start < self.end and end > self.start


def read_gold(path: Path, *, split: str | None = None, lang: str | None = None
              ) -> list[GoldQuestion]:
    """The answerable questions of ``path``; with ``split``, only those of that split (rows
    without a ``split`` field count as every split's); with ``lang``, of that language."""
    out: list[GoldQuestion] = []
    for n, row in read_objects(path, GoldSetError):
        if row.get("answerable") is False:
            continue
        for key in ("question", "gold_lecture", "gold_start", "gold_end"):
            if key not in row:
                raise GoldSetError(f"{path}: line {n}: missing field {key!r}")
        try:
            q = GoldQuestion(str(row.get("id", n)), str(row["question"]),
                             str(row["gold_lecture"]), float(row["gold_start"]),
                             float(row["gold_end"]), str(row.get("lang", "")),
                             str(row.get("split", "")))
        except (TypeError, ValueError) as exc:
            raise GoldSetError(
                f"{path}: line {n}: gold_start and gold_end must be seconds") from exc
        if q.end <= q.start:
            raise GoldSetError(f"{path}: line {n}: gold_end must come after gold_start")
        if (split is None or q.split in (split, "")) and (lang is None or q.lang == lang):
            out.append(q)
    return out


def known_lectures(questions: Sequence[GoldQuestion], lectures: dict[str, dict[str, str]]
                   ) -> tuple[list[GoldQuestion], list[str]]:
    """``questions`` whose gold lecture is one of the index's (named by id, title or video
    link: ``eval.questions.LectureNames``), with the id; and a message for each of the others,
    which no window of this index can answer (a set written for another index)."""
    from dataclasses import replace

    from eval.questions import LectureNames

    names = LectureNames(lectures)
    kept: list[GoldQuestion] = []
    problems: list[str] = []
    for q in questions:
        found = names.resolve(q.lecture)
        if found is None:
            problems.append(f"question {q.id}: {names.unknown(q.lecture)}")
        else:
            kept.append(q if found == q.lecture else replace(q, lecture=found))
    return kept, problems


def figures(questions: Sequence[GoldQuestion], results: Sequence[Sequence[Hit]], k: int = 5
            ) -> dict[str, float]:
    """The figures of the module docstring for each question's hits."""
    n = max(len(questions), 1)
    hit1 = hitk = video = rr = start = 0.0
    for q, hits in zip(questions, results, strict=True):
        first = next((r for r, h in enumerate(hits[:10], 1)
                      if q.overlaps(h.lecture_id, h.start, h.end)), None)
        hit1 += first == 1
        hitk += bool(first and first <= k)
        rr += 1.0 / first if first else 0.0
        video += any(h.lecture_id == q.lecture for h in hits[:k])
        if hits and hits[0].lecture_id == q.lecture:
            at = hits[0].link_start
            start += q.start - START_SLACK <= at <= q.end
    return {"span_hit@1": hit1 / n, f"span_hit@{k}": hitk / n, "mrr@10": rr / n,
            f"video_hit@{k}": video / n, "start_in_span@1": start / n}


def run(retriever: Any, questions: Sequence[GoldQuestion], *, k: int = 10,
        fusion: Fusion | None = None, mode: str | None = None, rerank: bool | None = None,
        links_at_window_start: bool = False) -> tuple[dict[str, float], list[float]]:
    """Search every question; the figures and each search's seconds (embed + search +
    rerank). ``links_at_window_start``: links open where windows start (the first slice)."""
    results, seconds = [], []
    for q in questions:
        t0 = time.perf_counter()
        res = retriever.search_timed(q.question, k, mode=mode, fusion=fusion, rerank=rerank,
                                     locate=not links_at_window_start)
        seconds.append(time.perf_counter() - t0)
        results.append(res.hits)
    return figures(questions, results), seconds


def fit_fusion(retriever: Any, questions: Sequence[GoldQuestion], *, fitted_on: str = ""
               ) -> Fusion:
    """Fusion weights fitted on ``questions`` with the retriever's own channels."""
    pools: list[dict[str, Ranking]] = [retriever.pools(q.question) for q in questions]

    def judge(qi: int, row: int) -> bool:
        return questions[qi].overlaps(*retriever.window(row))

    return fit(pools, judge, fitted_on=fitted_on)

