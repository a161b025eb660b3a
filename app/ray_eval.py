"""``aula eval --ray``: questions spread over Ray workers.

Each worker is a Ray actor that builds, once, what ``aula eval`` builds on one machine: the
index and retriever, the answerer and the judges against the configured endpoints
(``app.batch.eval_pipeline``). The driver hands out the questions not yet in the item
log, one at a time to whichever worker is free, and appends each item as it comes back, so a
killed run resumes as a local one does. Point the workers at an OpenAI-compatible endpoint
(``AULA_LLM_BASE_URL``, ``AULA_JUDGE_BASE_URL``): with the embedded default, every worker
starts an LLM of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import TracebackType
from typing import Any

from app.batch import eval_pipeline
from app.services import build_services
from corpus.ray_embed import start_ray


class _EvalWorker:
    def __init__(self, settings: Any, options: Any) -> None:
        self.services = build_services(settings)
        self.pipeline = eval_pipeline(settings, self.services, options)

    def evaluate(self, row: dict[str, Any]) -> dict[str, Any]:
        import os
        import socket

        from eval.run import evaluate_item

        item = evaluate_item(row, self.pipeline)
        item["worker"] = f"ray:{socket.gethostname()}:{os.getpid()}"  # where it ran
        return item

    def close(self) -> None:
        self.services.close()


class RayEvaluator:
    """``workers`` Ray actors evaluating questions; a context manager that stops them."""

    def __init__(self, settings: Any, options: Any, *, address: str = "local",
                 workers: int = 2) -> None:
        self._started = start_ray(address, workers)
        import ray

        from app.config import WORKER_ENV

        actor = ray.remote(num_cpus=1, runtime_env={"env_vars": WORKER_ENV})(_EvalWorker)
        self.actors: list[Any] = [actor.remote(settings, options)
                                  for _ in range(max(1, workers))]

    def evaluate_all(self, rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """Each row's item, as soon as any worker finishes it."""
        from ray.util import ActorPool

        pool = ActorPool(self.actors)
        for row in rows:
            pool.submit(lambda a, r: a.evaluate.remote(r), row)
        while pool.has_next():
            yield pool.get_next_unordered()

    def __enter__(self) -> RayEvaluator:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        import ray

        for a in self.actors:
            try:
                ray.get(a.close.remote(), timeout=30)
            except Exception:  # noqa: BLE001 - a worker that died has nothing to close
                pass
            ray.kill(a)
        if self._started:
            ray.shutdown()
