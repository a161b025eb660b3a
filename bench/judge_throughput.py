"""Judge items per minute on the embedded LLM (AR + correctness judges), concurrency 1 and 2.

Items: the first BENCH_JUDGE_N (default 4) rows of tests/data/eval_3b1b.csv, judged with their
reference answer as the only context so retrieval is not part of the figure.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

from bench.common import ROOT, env_int, report


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from app.config import Settings
    from app.services import build_llm
    from eval.questions import load_questions
    from eval.run import Pipeline, evaluate_item

    settings = Settings(llm_base_url=None)
    rows = load_questions(ROOT / "tests" / "data" / "eval_3b1b.csv").to_dict("records")
    rows = rows[: env_int("BENCH_JUDGE_N", 4)]
    for r in rows:
        r["contexts"] = [r["reference_answer"]]
    figures: dict[str, float | int | str] = {"items": len(rows)}
    with ExitStack() as stack:
        llm, _ = build_llm(settings, stack)
        pipeline = Pipeline(judge=lambda m: llm.chat(m, temperature=0.0, max_tokens=400))
        pipeline.judge(  # warm-up: loads the model pages, not counted
            [{"role": "user", "content": "Diga ok."}]
        )
        for conc in (1, 2):
            t0 = time.perf_counter()
            with ThreadPoolExecutor(conc) as pool:
                items = list(pool.map(lambda r: evaluate_item(r, pipeline), rows))
            minutes = (time.perf_counter() - t0) / 60
            figures[f"items_per_min_concurrency_{conc}"] = len(rows) / minutes
            figures[f"missing_scores_concurrency_{conc}"] = sum(
                it.get("ar_score") is None or it.get("correctness_score") is None for it in items
            )
    report("judge_throughput", figures)


if __name__ == "__main__":
    main()
