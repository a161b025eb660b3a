"""Search adapted to the course (``aula adapt``): how span-hit grows with the number of generated
questions.

The questions are those ``aula adapt`` wrote for the bench's 3b1b-pt index
(``bench/out/index-3b1b-enpt/adapted/questions.jsonl``; written with
``aula adapt --index bench/out/index-3b1b-enpt --questions N --no-train``, hours on 2 cores, so
the bench does not write them: it reads what is there). For each size in ``BENCH_ADAPT_SIZES``
(default ``100,200,400,all``; the first N questions in the order they were written, which
covers the lectures in turn) a model is fine-tuned as ``aula adapt`` does (kept under
``bench/out/adapt-models/`` and reused while its number of questions is the same), and the
fitted fusion's first 10 hits are reranked by it, with the weights of the fused order in
``BENCH_ADAPT_PRIORS`` beside its cosine. The base model's cosine reranks the same hits too, to
tell what the adaptation adds from what reranking by cosine does. With ``BENCH_ADAPT_DENSE=1``
each adapted model is also tried as search's own embedder (the index embedded again by it, the
fusion unchanged, no rerank).

Measured on the fitting questions (``questions_3b1b_dev.jsonl`` and the fitting half of
``answers_3b1b.jsonl``: 74): span-hit@1 / @5, MRR@10, against the fusion alone in the same run.
The 60 held-out questions of ``questions_3b1b.jsonl`` are read only with
``BENCH_ADAPT_HELD_OUT=1`` (once, for the model and weight chosen on the fitting questions: the
largest size, at its best weight there, or ``BENCH_ADAPT_PRIOR``). None of these questions is
training data: the training questions are written by the LLM from the index's passages.

``BENCH_ADAPT_CORPORA`` (``pt,live``) chooses the corpora; ``BENCH_ADAPT_NEGATIVES=S,O`` mines
S negatives from the same lecture and O from others (2,2); ``BENCH_ADAPT_GAP`` keeps the
same-lecture ones that many seconds away from the question's passage (``aula adapt``'s
default, 90).

The live classes (``index-fastapi``, when ``aula adapt`` wrote questions for it): the same over
the fitting half of ``answers_fastapi.jsonl`` (its test half with ``BENCH_ADAPT_HELD_OUT=1``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from bench.common import CORPUS_3B1B, DATA, OUT, SHARED, embedded_embedder, ready, report

KEYS = ("span_hit@1", "span_hit@5", "mrr@10")


def _sizes(total: int) -> list[int]:
    raw = os.environ.get("BENCH_ADAPT_SIZES", "100,200,400,all").split(",")
    sizes = sorted({total if s.strip() == "all" else min(int(s), total) for s in raw if s.strip()})
    return [n for n in sizes if n >= 20]


def _priors() -> list[float]:
    return [float(p) for p in
            os.environ.get("BENCH_ADAPT_PRIORS", "0,0.02,0.05,0.08,0.12").split(",")]


def _fused(retriever: Any, questions: list[Any]) -> list[list[Any]]:
    """Each question's first 10 hits as search finds them before any rerank."""
    return [retriever.search_timed(q.question, 10, rerank=False).hits for q in questions]


def _put(prefix: str, figs: dict[str, float], figures: dict[str, Any]) -> None:
    for key in KEYS:
        figures[f"{prefix}_{key}"] = round(figs[key], 3)


def _adapted_search(data: Any, index: Path, model: Any, questions: list[Any]) -> list[list[Any]]:
    """Each question's first 10 hits when the adapted model is search's own embedder: the
    index's windows and units embedded again by it (exact cosines), the fusion unchanged."""
    from dataclasses import replace

    from app.config import Settings
    from app.services import retriever_for

    vectors = model.embed(data.segments["text"].astype(str).tolist(), "passage")
    units = (None if data.units is None else
             model.embed(data.units["text"].astype(str).tolist(), "passage"))
    swapped = replace(data, vectors=vectors, unit_vectors=units, faiss_index=None)
    retriever = retriever_for(
        Settings().model_copy(update={"index_dir": index, "rerank": "off"}), swapped, model)
    return _fused(retriever, questions)


def _reranked(prefix: str, questions: list[Any], fused: list[list[Any]], model: Any,
              priors: list[float], figures: dict[str, Any]) -> dict[float, float]:
    """The hits reranked by ``model``'s cosine at each prior (scored once a question); the
    span-hit@1 + MRR@10 of each prior."""
    from corpus.adapt.rerank import AdaptedReranker
    from corpus.rerank import reorder, with_prior
    from eval.retrieval import figures as retrieval_figures

    reranker = AdaptedReranker(model, {})
    t0 = time.perf_counter()
    scores = [reranker.scores(q.question, hits) for q, hits in zip(questions, fused,
                                                                   strict=True)]
    figures[f"{prefix}_rerank_s_per_question"] = round(
        (time.perf_counter() - t0) / max(len(questions), 1), 3)
    out: dict[float, float] = {}
    for prior in priors:
        results = [reorder(hits, with_prior(list(sc), prior))
                   for hits, sc in zip(fused, scores, strict=True)]
        figs = retrieval_figures(questions, results)
        _put(f"{prefix}_prior{prior:g}", figs, figures)
        out[prior] = figs["span_hit@1"] + figs["mrr@10"]
    return out


def corpus_gain(name: str, index: Path, fitting: list[Any], held_out: list[Any],
                embedder: Any, figures: dict[str, Any]) -> None:
    from app.config import Settings
    from app.services import retriever_for
    from corpus.adapt.questions import QUESTIONS_FILE, QuestionCache
    from corpus.adapt.store import MANIFEST, adapted_dir
    from corpus.adapt.train import GAP, train_model
    from corpus.embed import E5Embedder
    from corpus.index import IndexStore

    cache = QuestionCache(adapted_dir(index) / QUESTIONS_FILE)
    questions = cache.questions()
    figures[f"{name}_generated_questions"] = len(questions)
    figures[f"{name}_passages_without_question"] = len(cache.rows) - len(questions)
    data = IndexStore(index).load()
    retriever = retriever_for(
        Settings().model_copy(update={"index_dir": index, "rerank": "off"}), data, embedder)
    from eval.retrieval import figures as retrieval_figures

    figures[f"{name}_fitting_questions"] = len(fitting)
    fused = _fused(retriever, fitting)
    _put(f"{name}_fit_fused", retrieval_figures(fitting, fused), figures)
    priors = _priors()
    # the base model's cosine as the reranker: what adapting adds to reranking by cosine
    _reranked(f"{name}_fit_base_cosine", fitting, fused, embedder, priors, figures)
    best: tuple[float, int, float] | None = None
    largest: dict[float, float] = {}
    models: dict[int, Any] = {}
    same, other = (int(x) for x in os.environ.get("BENCH_ADAPT_NEGATIVES", "2,2").split(","))
    gap = float(os.environ.get("BENCH_ADAPT_GAP", GAP))
    tag = ("" if (same, other) == (2, 2) else f"_neg{same}-{other}") + (
        "" if gap == GAP else f"_gap{gap:g}")
    negatives = {"same_lecture": same, "other_lectures": other, "gap_s": gap}
    work = OUT / "adapt-models" / f"{name}{tag}"
    for n in _sizes(len(questions)):
        out = work / f"n{n}"
        manifest_file = out / MANIFEST
        earlier = json.loads(manifest_file.read_text()) if manifest_file.exists() else {}
        if earlier.get("questions") == n and earlier.get("negatives") == negatives:
            manifest = earlier  # trained by an earlier run
        else:
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            manifest = train_model(embedder, data, questions[:n], out, same_lecture=same,
                                   other_lectures=other, gap=gap, progress=True)
        figures[f"{name}{tag}_n{n}_train_s"] = manifest["trained_s"]
        figures[f"{name}{tag}_n{n}_generated_held_out_hit@1"] = (
            f"{manifest['before_hit@1']:.3f} -> {manifest['after_hit@1']:.3f}")
        models[n] = E5Embedder(str(out), f"adapted-n{n}")
        largest = _reranked(f"{name}_fit_adapted{tag}_n{n}", fitting, fused, models[n], priors,
                            figures)
        if os.environ.get("BENCH_ADAPT_DENSE") == "1":
            _put(f"{name}_fit_dense_adapted{tag}_n{n}", retrieval_figures(
                fitting, _adapted_search(data, index, models[n], fitting)), figures)
        for prior, score in largest.items():
            if best is None or score > best[0]:
                best = (score, n, prior)
        report("adapt_gain", figures)
    if best is not None:
        figures[f"{name}_chosen"] = f"n{best[1]} prior {best[2]:g}"
    if held_out and os.environ.get("BENCH_ADAPT_HELD_OUT") == "1" and models:  # read once
        n = max(models)
        prior = float(os.environ.get("BENCH_ADAPT_PRIOR",
                                     max(largest, key=lambda p: largest[p])))
        figures[f"{name}_held_out_questions"] = len(held_out)
        fused = _fused(retriever, held_out)
        _put(f"{name}_held_out_fused", retrieval_figures(held_out, fused), figures)
        _reranked(f"{name}_held_out_adapted{tag}_n{n}", held_out, fused, models[n], [prior],
                  figures)


def main() -> None:
    from eval.retrieval import read_gold

    if not ready(CORPUS_3B1B):
        return
    embedder = embedded_embedder()
    figures: dict[str, Any] = {}
    corpora = os.environ.get("BENCH_ADAPT_CORPORA", "pt,live").split(",")
    pt_index = OUT / "index-3b1b-enpt"
    fitting = read_gold(DATA / "questions_3b1b_dev.jsonl") + read_gold(
        DATA / "answers_3b1b.jsonl", split="fit")
    if "pt" in corpora:
        corpus_gain("pt", pt_index, fitting, read_gold(DATA / "questions_3b1b.jsonl"),
                    embedder, figures)
    live = OUT / "index-fastapi"
    if "live" in corpora and (live / "adapted" / "questions.jsonl").exists() and (
            SHARED / "corpora" / "fastapi-zero-pt-dev").exists():
        corpus_gain("live", live, read_gold(DATA / "answers_fastapi.jsonl", split="fit"),
                    read_gold(DATA / "answers_fastapi.jsonl", split="test"), embedder, figures)
    report("adapt_gain", figures)


if __name__ == "__main__":
    main()
