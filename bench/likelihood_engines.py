"""The judge's likelihood gains read two ways from the embedded GGUF, on the same answers: quantised
through llama.cpp (the judge's default) and de-quantised into float32 through transformers
(what the shipped label model was fitted on). Prints how closely the gains agree (Pearson
correlation, mean difference in nats), each engine's load time, seconds an answer and the
process's peak memory after each.

Answers: every 12th answer of ``bench/data/judge_3b1b.jsonl`` (``BENCH_LIKELIHOOD_N``, default
16), each with its reference answer (``reference_gain`` and ``reference_gain_low``).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from bench.common import DATA, env_int, peak_rss_mb, read_jsonl, report


def _read(scorer: Any, rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], float, float]:
    """Each row's gains; the load and the per-answer seconds."""
    from eval.likelihood import reference_gains

    t0 = time.perf_counter()
    scorer.load()
    loaded = time.perf_counter() - t0
    t0 = time.perf_counter()
    gains = [reference_gains(scorer, r["question"], r["answer"], r["reference_answer"])
             for r in rows]
    return [g or {} for g in gains], loaded, (time.perf_counter() - t0) / max(1, len(rows))


def main() -> None:
    from app.config import Settings
    from app.lm_scorer import scorer_for

    rows = read_jsonl(DATA / "judge_3b1b.jsonl")[::12][: env_int("BENCH_LIKELIHOOD_N", 16)]
    cache = Settings().service.cache_dir
    figures: dict[str, Any] = {"answers": len(rows)}
    read: dict[str, list[dict[str, Any]]] = {}
    for engine in ("llama.cpp", "transformers"):
        scorer = scorer_for("embedded", cache, engine=engine, dtype="float32")
        read[engine], loaded, each = _read(scorer, rows)
        figures[f"{engine}_load_s"] = loaded
        figures[f"{engine}_s_per_answer"] = each
        figures[f"{engine}_peak_rss_mb_after"] = peak_rss_mb()
    for name in ("reference_gain", "reference_gain_low"):
        a = [g[name] for g in read["llama.cpp"]]
        b = [g[name] for g in read["transformers"]]
        figures[f"{name}_correlation"] = statistics.correlation(a, b)
        diffs = [x - y for x, y in zip(a, b, strict=True)]
        figures[f"{name}_mean_difference"] = statistics.fmean(diffs)
    report("likelihood_engines", figures)


if __name__ == "__main__":
    main()
