"""Questions in another language than the lectures': searched as typed, and
translated by the embedded LLM first (``answer/translate.py``, what the service does).

``bench/data/questions_cross_language.jsonl``: English questions over 3b1b-pt (15 of the
Portuguese retrieval bench's held-out questions, as a student would ask them in English, same
gold spans; and 8 course questions the lectures do not cover, checked with grep) and Portuguese
questions over karpathy-en (12 of the English bench's, the same way; and 5 uncovered ones).
Nothing was fitted on them.

Printed per direction, as typed and translated: span-hit@1/@5, MRR@10 and video-hit@5 on the
answerable questions; the evidence gate's decision (shipped ``answer/gate.json``, no LLM check):
the share of answerable questions it lets through and of uncovered ones it declines, alone and
after the course-question check (``*_with_course_check_*``: the default path, ``answer/course.py``);
and the translation's seconds (p50). For reference, the same answerable questions as the bench
has them, in the lectures' own language.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from typing import Any

from bench.common import CORPUS_3B1B, DATA, embedded_embedder, median, read_jsonl, ready, report
from bench.retrieval_quality import CORPUS_EN, INCLUDE, QUESTIONS, QUESTIONS_EN, _index

SET = DATA / "questions_cross_language.jsonl"


def _gold(row: dict[str, Any]) -> Any:
    from eval.retrieval import GoldQuestion

    return GoldQuestion(row["id"], row["question"], row["gold_lecture"],
                        float(row["gold_start"]), float(row["gold_end"]))


def _direction(name: str, rows: list[dict[str, Any]], originals: dict[str, Any],
               retriever: Any, answerer: Any, translator: Any, figures: dict[str, Any]) -> None:
    from eval.retrieval import figures as span_figures

    answerable = [r for r in rows if r["answerable"]]
    uncovered = [r for r in rows if not r["answerable"]]
    lang = retriever.language
    seconds: list[float] = []
    translated: dict[str, str] = {}
    for r in rows:
        t0 = time.perf_counter()
        translated[r["id"]] = translator(r["question"], lang)
        seconds.append(time.perf_counter() - t0)

    def passes(question: str) -> bool:
        hits = retriever.search(question, 10)
        feats = answerer.gate_signals(question, hits)[2]
        return answerer.gate.p_covered_of(feats) >= answerer.gate.min_p

    def course(question: str) -> bool:
        """A question the default path declines first as one about the course itself."""
        check = answerer.course
        return check is not None and answerer.embed is not None and check.read(
            [question], answerer.embed)[0][0]

    for how, text in (("as_typed", lambda r: r["question"]),
                      ("translated", lambda r: translated[r["id"]])):
        gold = [_gold({**r, "question": text(r)}) for r in answerable]
        figs = span_figures(gold, [retriever.search(q.question, 10) for q in gold])
        for key in ("span_hit@1", "span_hit@5", "mrr@10", "video_hit@5"):
            figures[f"{name}_{how}_{key}"] = round(figs[key], 3)
        figures[f"{name}_{how}_gate_answers_answerable"] = round(
            sum(passes(text(r)) for r in answerable) / len(answerable), 3)
        figures[f"{name}_{how}_gate_declines_uncovered"] = round(
            sum(not passes(text(r)) for r in uncovered) / max(len(uncovered), 1), 3)
        # the default path: the course-question check first, then the gate
        figures[f"{name}_{how}_with_course_check_answers_answerable"] = round(
            sum(passes(text(r)) and not course(text(r)) for r in answerable) / len(answerable), 3)
        figures[f"{name}_{how}_with_course_check_declines_uncovered"] = round(
            sum(course(text(r)) or not passes(text(r)) for r in uncovered)
            / max(len(uncovered), 1), 3)
    own = [originals[r["from"]] for r in answerable]
    figs = span_figures(own, [retriever.search(q.question, 10) for q in own])
    for key in ("span_hit@1", "span_hit@5", "mrr@10"):
        figures[f"{name}_lectures_language_{key}"] = round(figs[key], 3)
    figures[f"{name}_questions"] = f"{len(answerable)} answerable, {len(uncovered)} uncovered"
    figures[f"{name}_translate_s_p50"] = round(median(seconds), 2)
    figures[f"{name}_examples"] = [[r["question"], translated[r["id"]]] for r in rows[:2]]


def main() -> None:
    if not ready(CORPUS_3B1B, CORPUS_EN):
        return
    from answer.pipeline import Pipeline
    from answer.translate import QueryTranslator
    from app.config import Settings
    from app.services import build_llm, retriever_for
    from eval.retrieval import read_gold

    base = Settings()
    embedder = embedded_embedder(base)
    rows = read_jsonl(SET)
    figures: dict[str, Any] = {}
    with ExitStack() as stack:
        llm, _ = build_llm(base, stack)
        translator = QueryTranslator(llm)
        for name, corpus, include, questions, where in (
                ("en_over_pt", CORPUS_3B1B, [INCLUDE], QUESTIONS, "index-3b1b-enpt"),
                ("pt_over_en", CORPUS_EN, None, QUESTIONS_EN, "index-karpathy")):
            store = _index(where, corpus, include, embedder, figures)
            data = store.load()
            retriever = retriever_for(Settings(index_dir=store.root, rerank="off"), data,
                                      embedder)
            answerer = Pipeline.from_settings(base, llm, retriever,
                                              lambda t, k: embedder.embed(t, k),
                                              embedder.model_id)
            originals = {q.id: q for q in read_gold(questions)}
            part = [r for r in rows if r["corpus"] == ("3b1b-pt" if name == "en_over_pt"
                                                       else "karpathy-en")]
            _direction(name, part, originals, retriever, answerer, translator, figures)
    report("cross_language", figures)


if __name__ == "__main__":
    main()
