"""``POST /ask`` and its streaming twin ``POST /ask/stream`` (server-sent events).

Both are async and wait on the LLM admission (``app.admission``), never on a server thread: 503
with ``Retry-After`` when the line is full, the LLM work on the admission's own workers, the
moments found so far and a line saying so when the question's deadline passes, and the LLM
work stopped when the client goes away.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from fastapi import APIRouter, HTTPException, Request, Response
from sse_starlette.sse import EventSourceResponse
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from answer.question import Question
from answer.replies import FAILED, Moment, Moments, Reply
from answer.retrieve import Retrieved
from app.admission import Admission, Busy, DeadlinePassed, Ticket
from app.deps import ServicesDep
from app.ratelimit import spend_async
from app.recorder import RecorderDep
from app.schemas import (
    SSE_EVENT,
    AskIn,
    AskOut,
    ask_out,
    error_responses,
    searched,
)
from app.services import Services

router = APIRouter(tags=["ask"])


def _retrieve(services: Services, body: AskIn) -> Retrieved:
    """The question read once at this edge, then the search stage."""
    return services.find(body.question, body.k, body.lectures)


def _stage_timings(timings: dict[str, float], reply: Any) -> None:
    timings.update({f"llm_{k}": v for k, v in reply.timings.items()})


@router.post(
    "/ask",
    response_model=AskOut,
    summary="Answer a question from the lectures, with citations",
    description=(
        "Answers 200 with the best moments: when the LLM fails or the question passes its "
        "deadline, `answer` is null, `note` says what happened and `error` why. 503 with "
        "`Retry-After` when too many questions already wait for the LLM."
    ),
    responses=error_responses(429, 503),
)
async def ask(body: AskIn, request: Request, services: ServicesDep,
              recorder: RecorderDep) -> Any:
    await spend_async(request, "ask")  # only a valid question spends the quota
    async with _admit(request) as ticket:
        t0 = time.perf_counter()
        found = await run_in_threadpool(_retrieve, services, body)
        timings = dict(found.timings)
        work = asyncio.ensure_future(_answer(ticket, services, found))
        gone = asyncio.ensure_future(_client_gone(request))
        try:
            await asyncio.wait({work, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            if not work.done():  # the client went away (or the server stops): stop the LLM
                work.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await work
        if work.cancelled():
            return Response(status_code=499)  # nobody is there to read it
        reply = work.result()
    _stage_timings(timings, reply)
    timings["total"] = time.perf_counter() - t0
    out = ask_out(found, reply, timings, services.models())
    if out.answer is not None or out.covered is False:
        # stored for review; a database failure is logged, never raised
        await run_in_threadpool(recorder.record, out)
    return out


@router.post(
    "/ask/stream",
    summary="Same as /ask, streamed as server-sent events",
    description=(
        "Events: `segments` (the retrieved segments, JSON list), `moments` (the best moments "
        "and the coverage decision, as soon as the evidence check is done: `{covered, reason, "
        "moments, search_query}`, the last null when the question was searched as typed), "
        "`delta` (answer text as it is written, JSON string), then `done` (the full "
        "/ask response; when the LLM failed its `answer` is null and `note` says so)."
    ),
    response_class=Response,
    responses={**error_responses(429, 503),
               200: {"description": "Server-sent events (see above)",
                     "content": {"text/event-stream": {"schema": SSE_EVENT}}}},
)
async def ask_stream(body: AskIn, request: Request, services: ServicesDep,
                     recorder: RecorderDep) -> EventSourceResponse:
    await spend_async(request, "ask")
    ticket = _admit(request)  # a full line answers 503 here, before the stream starts

    async def events() -> AsyncIterator[dict[str, str]]:
        async with ticket:
            t0 = time.perf_counter()
            found = await run_in_threadpool(_retrieve, services, body)
            timings = dict(found.timings)
            yield {"event": "segments", "data": json.dumps([h.to_dict() for h in found.hits])}
            t1 = time.perf_counter()
            first: float | None = None
            moments: list[Moment] = []
            reply: Reply | None = None
            try:
                async with contextlib.aclosing(
                        ticket.run(_events(services, found))) as pieces:
                    async for piece in pieces:
                        if isinstance(piece, Moments):
                            moments = piece.moments
                            timings["moments"] = time.perf_counter() - t0
                            yield {"event": "moments", "data": json.dumps({
                                "covered": piece.covered, "reason": piece.reason,
                                "moments": [m.to_dict() for m in piece.moments],
                                "search_query": searched(found)})}
                        elif isinstance(piece, str):
                            if first is None:
                                first = time.perf_counter() - t1
                            yield {"event": "delta", "data": json.dumps(piece)}
                        else:
                            reply = piece
            except DeadlinePassed:
                reply = late_reply(found.question, moments, ticket, services)
            if reply is None:
                return
            _stage_timings(timings, reply)
            timings["llm_first_token"] = first if first is not None else 0.0
            timings["llm"] = time.perf_counter() - t1
            timings["total"] = time.perf_counter() - t0
            out = ask_out(found, reply, timings, services.models())
            if out.answer is not None or out.covered is False:
                await run_in_threadpool(recorder.record, out)
            yield {"event": "done", "data": out.model_dump_json()}

    # the background task runs however the stream ends, even if it never started
    return EventSourceResponse(events(), background=BackgroundTask(ticket.close))


def _admit(request: Request) -> Ticket:
    """A place in the LLM's line, or 503 with Retry-After when it is full."""
    admission: Admission = request.app.state.admission
    try:
        return admission.enter()
    except Busy as exc:
        raise HTTPException(
            503, f"muitas perguntas ao mesmo tempo; tente de novo em {exc.retry_after} s",
            headers={"Retry-After": str(exc.retry_after)}) from exc


def _events(services: Services, found: Retrieved) -> Iterator[Any]:
    """The pipeline's events for the question as the search stage found it."""
    pipeline = services.pipeline
    return pipeline.events(found.question, pipeline.reads(found))


async def _answer(ticket: Ticket, services: Services, found: Retrieved) -> Reply:
    """The pipeline's reply, run on an LLM worker; at the deadline, the moments so far."""
    moments: list[Moment] = []
    try:
        async with contextlib.aclosing(ticket.run(_events(services, found))) as pieces:
            async for piece in pieces:
                if isinstance(piece, Moments):
                    moments = piece.moments
                elif isinstance(piece, Reply):
                    return piece
    except DeadlinePassed:
        pass
    return late_reply(found.question, moments, ticket, services)


def late_reply(question: Question, moments: Sequence[Moment], ticket: Ticket,
               services: Services) -> Reply:
    """What a student gets when the deadline passes: the moments found so far and a line
    saying the answer took too long (HTTP 200, like any other LLM fault)."""
    lang = question.language
    limit = f"{ticket.admission.deadline:g}"
    why = (f"a pergunta passou do limite de {limit} s" if lang == "pt"
           else f"the question went over its {limit} s limit")
    return Reply(question.text, lang, services.pipeline.strategy, list(moments), None, None,
                 note=FAILED[lang].format(why=why), error=f"no answer within {limit} s",
                 reason="deadline")


async def _client_gone(request: Request) -> None:
    """Returns once the client has closed the connection (its body has been read)."""
    while (await request.receive())["type"] != "http.disconnect":
        await asyncio.sleep(0.05)
