"""``aula eval`` throughput here and on Ray with 1 and 2 workers.

Against a remote endpoint the evaluation waits on the network: each question is an answer, a
relevance judge, a coverage check and two readings per claim. The endpoint here is a fake
OpenAI-compatible server over loopback that takes BENCH_EVAL_LLM_DELAY (0.5) seconds a call,
like a busy hosted model; the questions (BENCH_EVAL_QUESTIONS, 12) run over the sample lectures.
Printed: questions per second run here one at a time, on 1 and 2 Ray workers (start-up of the
workers included), and the speed-up of 2 workers over 1.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import embedded_embedder, env_int, report

QUESTIONS = [
    "O que a ReLU devolve?", "Qual a derivada de x ao quadrado?",
    "Para que serve a taxa de aprendizado?", "Por que a sigmoide saiu de moda?",
    "O que é a regra da cadeia?", "O que um neurônio calcula?",
]


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import pandas as pd

    from app.batch import EvalOptions, eval_pipeline
    from app.config import Settings
    from app.ray_eval import RayEvaluator
    from app.services import build_services
    from bench.ask_latency import sample_index
    from eval.run import run_batch
    from tests.app.fake_llm import FakeLLMServer
    from tests.eval.test_run_cli import judge_or_answer

    embedder = embedded_embedder()
    index = sample_index(embedder)
    n = env_int("BENCH_EVAL_QUESTIONS", 12)
    qs = pd.DataFrame([{"id": f"q{i}", "question": QUESTIONS[i % len(QUESTIONS)]}
                       for i in range(n)])
    out: dict[str, Any] = {"questions": n}
    with FakeLLMServer(judge_or_answer) as llm, tempfile.TemporaryDirectory() as tmp:
        llm.slow(float(os.environ.get("BENCH_EVAL_LLM_DELAY", "0.5")))
        out["llm_delay_s"] = llm.delay
        s = Settings(index_dir=index, llm_base_url=llm.base_url, llm_model="fake-model",
                     answer_strategy="direct", database_url=f"sqlite:///{tmp}/aula.db")
        options = EvalOptions()
        services = build_services(s)
        with services.stack:
            t0 = time.perf_counter()
            run_batch(qs, eval_pipeline(s, services, options), Path(tmp) / "here",
                      progress=False)
            out["here_questions_per_s"] = n / (time.perf_counter() - t0)
        for workers in (1, 2):
            t0 = time.perf_counter()
            with RayEvaluator(s, options, address="local", workers=workers) as pool:
                run_batch(qs, None, Path(tmp) / f"ray{workers}", progress=False,
                          evaluate_all=pool.evaluate_all)
            out[f"ray_{workers}_questions_per_s"] = n / (time.perf_counter() - t0)
    out["ray_2_vs_1_speedup"] = out["ray_2_questions_per_s"] / out["ray_1_questions_per_s"]
    report("eval_scale", out)


if __name__ == "__main__":
    main()
