"""The two vector stores side by side on the Portuguese retrieval bench.

The 3b1b-pt index of ``bench/retrieval_quality.py`` (built once under bench/out/) is searched
through the index folder (FAISS + BM25 in this process) and through Milvus (milvus-lite; the
collection is synced from the same catalogue). Printed in one run: span-hit@1/@5, MRR@10 and
video-hit@5 of the fitted fusion on each store, Milvus' own hybrid (its RRF ranker over the
dense and sparse window fields, no units) beside the folder's first-slice RRF hybrid, the query
latency p50 (embed + search, interleaved so that machine load falls on both alike) and what a
full sync of the collection costs. ``BENCH_MILVUS_URI`` points at a Milvus server instead of
milvus-lite in bench/out/.
"""

from __future__ import annotations

import os
import time
from typing import Any

from bench.common import CORPUS_3B1B, OUT, embedded_embedder, median, ready, report


def _windows(retriever: Any, ids: Any) -> list[Any]:
    return [h for h in (retriever.segment(int(c)) for c in ids) if h is not None]


def main() -> None:
    if not ready(CORPUS_3B1B):
        return
    from app.services import retriever_for
    from bench.retrieval_quality import QUESTIONS, _settings, index_3b1b
    from corpus.fusion import FIRST_SLICE
    from corpus.retrieve import Retriever
    from corpus.vector_store import MilvusStore
    from eval.retrieval import figures as span_figures
    from eval.retrieval import read_gold, run

    embedder = embedded_embedder()
    out: dict[str, Any] = {}
    store, data = index_3b1b(embedder, out)
    uri = os.environ.get("BENCH_MILVUS_URI") or str(OUT / "milvus-3b1b.db")
    milvus = MilvusStore(uri, "bench_3b1b", texts=data.segments["text"].tolist())
    milvus.drop()
    t0 = time.perf_counter()
    milvus.sync(data)
    out["milvus_full_sync_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    again = milvus.sync(data)  # what every later ingest pays: the whole collection rewritten
    out["milvus_resync_s"] = time.perf_counter() - t0
    out["milvus_rows"] = again["written"]
    settings = _settings(store)
    folder = retriever_for(settings, data, embedder)
    shared = Retriever(data, embedder, settings.search.mode, fusion=folder.fusion,
                       rewriter=folder.rewriter, store=milvus)
    questions = read_gold(QUESTIONS)
    out["pt_questions"] = len(questions)
    for name, retriever in (("faiss", folder), ("milvus", shared)):
        fig, _ = run(retriever, questions)
        for key, value in fig.items():
            out[f"{name}_fused_{key}"] = value
    first, _ = run(folder, questions, fusion=FIRST_SLICE, links_at_window_start=True)
    for key in ("span_hit@1", "span_hit@5", "mrr@10"):
        out[f"faiss_first_slice_rrf_{key}"] = first[key]
    own = []
    for q in questions:
        query = folder.rewrite(q.question)
        ids, _ = milvus.hybrid(embedder.embed([query], "query")[0], query, 10)
        own.append(_windows(folder, ids))
    for key, value in span_figures(questions, own).items():
        if key != "start_in_span@1":
            out[f"milvus_own_rrf_{key}"] = value
    times: dict[str, list[float]] = {"faiss": [], "milvus": []}
    for turn in range(3):  # each store goes first in alternate rounds
        for q in questions:
            order = [("faiss", folder), ("milvus", shared)]
            for name, retriever in (order if turn % 2 == 0 else order[::-1]):
                t0 = time.perf_counter()
                retriever.search_timed(q.question, 10)
                times[name].append(time.perf_counter() - t0)
    out["faiss_query_p50_ms"] = median(times["faiss"]) * 1000
    out["milvus_query_p50_ms"] = median(times["milvus"]) * 1000
    out["milvus_vs_faiss_query_ratio"] = median(times["milvus"]) / median(times["faiss"])
    out["milvus_uri"] = "milvus-lite file" if uri.endswith(".db") else uri
    milvus.close()
    report("vector_stores", out)


if __name__ == "__main__":
    main()
