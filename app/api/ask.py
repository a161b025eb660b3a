"""``POST /ask`` and its streaming twin ``POST /ask/stream`` (server-sent events)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from fastapi import APIRouter, Depends
from sse_starlette.sse import EventSourceResponse

from app.deps import ServicesDep
from app.ratelimit import limit_ask
from app.recorder import RecorderDep
from app.schemas import AskIn, AskOut, CitationOut, HitOut, MomentOut, SentenceOut
from app.services import Services

router = APIRouter(tags=["ask"])


def _out(
    services: Services, body: AskIn, hits: list, reply: Any, timings: dict[str, float],
) -> AskOut:
    return ask_response(services, body.question, hits, reply, timings)


def ask_response(
    services: Services, question: str, hits: list, reply: Any, timings: dict[str, float],
) -> AskOut:
    """The ``/ask`` body for a reply of ``app.answerer`` (the CLI prints the same)."""
    answer = reply.answer
    return AskOut(
        question=question,
        answer=None if answer is None else answer.text,
        covered=reply.covered,
        citations=[] if answer is None else [CitationOut(**c.to_dict()) for c in answer.citations],
        segments=[HitOut(**h.to_dict()) for h in hits],
        moments=[MomentOut(**m.to_dict()) for m in reply.moments],
        confidence=reply.confidence,
        sentences=[SentenceOut(**c.to_dict()) for c in reply.sentences],
        strategy=reply.strategy,
        note=reply.note,
        timings=timings,
        models={
            "embedding": services.retriever.data.model_id,
            "llm": getattr(services.llm, "model_id", "") or "",
        },
        error=reply.error,
    )


def _retrieve(services: Services, body: AskIn) -> tuple[list, dict[str, float]]:
    res = services.retriever.search_timed(body.question, body.k, lectures=body.lectures)
    return res.hits, {"embedding": res.timings.embed_s, "search": res.timings.search_s}


def _stage_timings(timings: dict[str, float], reply: Any) -> None:
    timings.update({f"llm_{k}": v for k, v in reply.timings.items()})


@router.post(
    "/ask",
    response_model=AskOut,
    summary="Answer a question from the lectures, with citations",
    description=(
        "Always answers 200 with the best moments: when the LLM fails, `answer` is null, "
        "`note` says what happened and `error` why."
    ),
    responses={429: {"description": "Too many questions from this address (Retry-After)"}},
    dependencies=[Depends(limit_ask)],
)
def ask(body: AskIn, services: ServicesDep, recorder: RecorderDep) -> Any:
    t0 = time.perf_counter()
    hits, timings = _retrieve(services, body)
    reply = services.answerer.run(body.question, hits)
    _stage_timings(timings, reply)
    timings["total"] = time.perf_counter() - t0
    out = _out(services, body, hits, reply, timings)
    if out.answer is not None or out.covered is False:
        recorder.record(out)  # stored for review; a database failure is logged, never raised
    return out


@router.post(
    "/ask/stream",
    summary="Same as /ask, streamed as server-sent events",
    description=(
        "Events: `segments` (the retrieved segments, JSON list), `moments` (the best moments "
        "and the coverage decision, as soon as the evidence check is done: `{covered, reason, "
        "moments}`), `delta` (answer text as it is written, JSON string), then `done` (the full "
        "/ask response; when the LLM failed its `answer` is null and `note` says so)."
    ),
    dependencies=[Depends(limit_ask)],
)
def ask_stream(body: AskIn, services: ServicesDep, recorder: RecorderDep) -> EventSourceResponse:
    from app.answerer import Moments

    def events() -> Iterator[dict[str, str]]:
        t0 = time.perf_counter()
        hits, timings = _retrieve(services, body)
        yield {"event": "segments", "data": json.dumps([h.to_dict() for h in hits])}
        t1 = time.perf_counter()
        first: float | None = None
        for piece in services.answerer.events(body.question, hits):
            if isinstance(piece, Moments):
                timings["moments"] = time.perf_counter() - t0
                yield {"event": "moments", "data": json.dumps({
                    "covered": piece.covered, "reason": piece.reason,
                    "moments": [m.to_dict() for m in piece.moments]})}
            elif isinstance(piece, str):
                if first is None:
                    first = time.perf_counter() - t1
                yield {"event": "delta", "data": json.dumps(piece)}
            else:
                _stage_timings(timings, piece)
                timings["llm_first_token"] = first if first is not None else 0.0
                timings["llm"] = time.perf_counter() - t1
                timings["total"] = time.perf_counter() - t0
                out = _out(services, body, hits, piece, timings)
                if out.answer is not None or out.covered is False:
                    recorder.record(out)
                yield {"event": "done", "data": out.model_dump_json()}

    return EventSourceResponse(events())
