"""``POST /ask`` and its streaming twin ``POST /ask/stream`` (server-sent events)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from sse_starlette.sse import EventSourceResponse

from app.deps import ServicesDep
from app.ratelimit import limit_ask
from app.recorder import RecorderDep
from app.schemas import AskIn, AskOut, CitationOut, HitOut
from app.services import Services

router = APIRouter(tags=["ask"])


def _embed_fn(services: Services) -> Any:
    return lambda texts, kind: services.embedder.embed(texts, kind)


def _answer_opts(services: Services) -> dict[str, Any]:
    s = services.settings
    return {"embed": _embed_fn(services), "max_tokens": s.llm_max_tokens,
            "budget": s.llm_context_chars}


def _out(
    services: Services, body: AskIn, hits: list, answer: Any, timings: dict[str, float],
    error: str | None = None,
) -> AskOut:
    return AskOut(
        question=body.question,
        answer=None if answer is None else answer.text,
        covered=None if answer is None else answer.covered,
        citations=[] if answer is None else [CitationOut(**c.to_dict()) for c in answer.citations],
        segments=[HitOut(**h.to_dict()) for h in hits],
        timings=timings,
        models={
            "embedding": services.retriever.data.model_id,
            "llm": getattr(services.llm, "model_id", "") or "",
        },
        error=error,
    )


def _retrieve(services: Services, body: AskIn) -> tuple[list, dict[str, float]]:
    res = services.retriever.search_timed(body.question, body.k, lectures=body.lectures)
    return res.hits, {"embedding": res.timings.embed_s, "search": res.timings.search_s}


@router.post(
    "/ask",
    response_model=AskOut,
    summary="Answer a question from the lectures, with citations",
    responses={502: {"model": AskOut, "description": "LLM failed; segments still returned"},
               429: {"description": "Too many questions from this address (Retry-After)"}},
    dependencies=[Depends(limit_ask)],
)
def ask(body: AskIn, services: ServicesDep, recorder: RecorderDep) -> Any:
    from app.answer import answer
    from app.llm import LLMError

    t0 = time.perf_counter()
    hits, timings = _retrieve(services, body)
    t1 = time.perf_counter()
    try:
        result = answer(body.question, hits, services.llm, **_answer_opts(services))
    except LLMError as exc:
        timings["total"] = time.perf_counter() - t0
        out = _out(services, body, hits, None, timings, error=str(exc))
        return JSONResponse(status_code=502, content=out.model_dump())
    timings.update({f"llm_{k}": v for k, v in result.timings.items()})
    timings.setdefault("llm", time.perf_counter() - t1)
    timings["total"] = time.perf_counter() - t0
    out = _out(services, body, hits, result, timings)
    recorder.record(out)  # stored for review; a database failure is logged, never raised
    return out


@router.post(
    "/ask/stream",
    summary="Same as /ask, streamed as server-sent events",
    description=(
        "Events: `segments` (the retrieved segments, JSON list), `delta` (answer text as it is "
        "written, JSON string), then `done` (the full /ask response) or `error` "
        "(the /ask response with `error` set)."
    ),
    dependencies=[Depends(limit_ask)],
)
def ask_stream(body: AskIn, services: ServicesDep, recorder: RecorderDep) -> EventSourceResponse:
    from app.answer import answer_stream
    from app.llm import LLMError

    def events() -> Iterator[dict[str, str]]:
        t0 = time.perf_counter()
        hits, timings = _retrieve(services, body)
        yield {"event": "segments", "data": json.dumps([h.to_dict() for h in hits])}
        t1 = time.perf_counter()
        first: float | None = None
        final = None
        try:
            for piece in answer_stream(body.question, hits, services.llm, **_answer_opts(services)):
                if isinstance(piece, str):
                    if first is None:
                        first = time.perf_counter() - t1
                    yield {"event": "delta", "data": json.dumps(piece)}
                else:
                    final = piece
        except LLMError as exc:
            timings["total"] = time.perf_counter() - t0
            out = _out(services, body, hits, None, timings, error=str(exc))
            yield {"event": "error", "data": out.model_dump_json()}
            return
        timings["llm_first_token"] = first if first is not None else 0.0
        timings["llm"] = time.perf_counter() - t1
        timings["total"] = time.perf_counter() - t0
        out = _out(services, body, hits, final, timings)
        recorder.record(out)
        yield {"event": "done", "data": out.model_dump_json()}

    return EventSourceResponse(events())
