"""Questions written on Ray workers (``aula adapt --ray``): each worker holds a client to the
configured endpoint and asks for its batch's passages; rows come back as they are done and are
stored one by one, so an interrupted run keeps what came back. Worth it against an endpoint
that serves several requests at once (a GPU server, several llama.cpp slots); the embedded
server on 2 cores answers one at a time."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict
from typing import Any

from app.llm import LLMClient
from corpus.adapt.questions import (
    GeneratedQuestion,
    Passage,
    QuestionCache,
    chat_asker,
    written,
)
from corpus.ray_embed import WORKER_ENV, start_ray


class _AskActor:
    """One chat client per actor."""

    def __init__(self, endpoint: dict[str, Any], lang: str) -> None:
        self.model = str(endpoint["model"])
        self.ask = chat_asker(LLMClient(**endpoint), lang)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        rows = [Passage(*fields) for fields in zip(batch["key"], batch["lecture_id"],
                                                   batch["start"], batch["end"], batch["text"],
                                                   strict=True)]
        done = [written(p, self.ask(p), self.model) for p in rows]
        return {"row": [asdict(d) for d in done]}


def generate_on_ray(cache: QuestionCache, passages_todo: Sequence[Passage], llm: Any, lang: str,
                    *, address: str = "local", workers: int = 2, progress: bool = False) -> int:
    """As ``questions.generate``, with ``workers`` Ray actors asking at once."""
    from tqdm import tqdm

    start_ray(address, workers)
    import ray.data

    endpoint = llm.spec()
    ds = ray.data.from_items([asdict(p) for p in passages_todo])
    out = ds.map_batches(
        _AskActor, fn_constructor_kwargs={"endpoint": endpoint, "lang": lang}, batch_size=1,
        compute=ray.data.ActorPoolStrategy(size=max(1, workers)), num_cpus=0,
        runtime_env={"env_vars": WORKER_ENV},
    )

    def rows() -> Iterator[GeneratedQuestion]:
        for row in tqdm(out.iter_rows(), total=len(passages_todo), desc="questions",
                        unit="passage", disable=not progress):
            yield GeneratedQuestion(**row["row"])

    return sum(1 for row in cache.add(rows()) if row.question)
