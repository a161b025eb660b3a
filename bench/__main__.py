"""``python -m bench``: run every benchmark and print its figures (BENCH_ONLY=a,b to choose)."""

from __future__ import annotations

import importlib
import os
import time

ALL = [
    "answer_quality", "gate_decisions",
    "ingest_query", "ingest_scale", "retrieval_quality", "adapt_gain", "cross_language",
    "vector_stores",
    "faiss_scale", "gpu_embed", "asr",
    "ask_latency", "prompt_cache", "focus_cache", "search_load", "load_run",
    "judge_throughput", "judge_speed", "likelihood_engines", "judge_writers",
    "judge_across_writers", "eval_scale",
    "judge_agreement",
    "annotate", "summary_requests", "comparisons", "titled", "login_memory",
]


def main() -> None:
    chosen = [b for b in os.environ.get("BENCH_ONLY", ",".join(ALL)).split(",") if b]
    for name in chosen:
        t0 = time.perf_counter()
        importlib.import_module(f"bench.{name}").main()
        print(f"  ({name}: {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
