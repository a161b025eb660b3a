"""A fake OpenAI-compatible chat server over real HTTP on 127.0.0.1, for tests.

Deterministic: the reply is ``responder(messages)``. It streams (SSE, ending ``data: [DONE]``),
can fail the next N requests with a status code or answer slowly, and records every request.

    with FakeLLMServer(responder=lambda messages: "Resposta [1].") as srv:
        client = LLMClient(srv.base_url, model="fake")
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import threading
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from tests.servers import ServedApp

Messages = list[dict[str, Any]]
Responder = Callable[[Messages], str]

MODEL = "fake-model"


def cite_first(messages: Messages) -> str:
    """The default reply: one sentence citing segment 1."""
    return "Segundo a aula, a resposta está no primeiro trecho [1]."


class FakeLLMServer:
    """uvicorn serving a tiny FastAPI app in a background thread, on a free port."""

    def __init__(self, responder: Responder = cite_first) -> None:
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # each request's headers, in order
        self.delay = 0.0
        self.logprobs = True  # False: an endpoint that ignores the logprobs request
        self.stream_delay = 0.0  # extra wait before a streamed (generation) reply
        self._failures: list[int] = []
        self._lock = threading.Lock()
        self._served: ServedApp | None = None
        self.port = 0

    # --- controls -------------------------------------------------------------------------
    def fail_next(self, n: int, status: int = 500) -> None:
        """Answer the next ``n`` chat requests with ``status`` (500, 429, ...)."""
        with self._lock:
            self._failures.extend([status] * n)

    def slow(self, seconds: float) -> None:
        """Wait ``seconds`` before answering each chat request (0 turns it off)."""
        self.delay = seconds

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r.get("path", "").endswith("/chat/completions")]

    # --- app ------------------------------------------------------------------------------
    def _app(self) -> FastAPI:
        app = FastAPI()

        @app.get("/health")
        def health() -> dict[str, str]:
            return {"status": "ok"}

        @app.get("/v1/models")
        def models() -> dict[str, Any]:
            return {"object": "list", "data": [{"id": MODEL, "object": "model"}]}

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> Response:
            body = await request.json()
            self.requests.append({"path": request.url.path, **body})
            self.headers.append(dict(request.headers))
            with self._lock:
                status = self._failures.pop(0) if self._failures else None
            if self.delay:
                await asyncio.sleep(self.delay)
            if self.stream_delay and body.get("stream"):
                await asyncio.sleep(self.stream_delay)
            if status is not None:
                return JSONResponse(
                    {"error": {"message": f"injected failure {status}", "type": "fake"}},
                    status_code=status,
                    headers={"retry-after": "0"} if status == 429 else None,
                )
            reply = self.responder(body.get("messages", []))
            if body.get("stream"):
                return StreamingResponse(
                    self._sse(reply, body.get("model", MODEL)), media_type="text/event-stream"
                )
            completion = _completion(reply, body.get("model", MODEL))
            if body.get("logprobs") and self.logprobs:
                completion["choices"][0]["logprobs"] = _logprobs(reply)
            return JSONResponse(completion)

        return app

    async def _sse(self, reply: str, model: str) -> AsyncIterator[str]:
        pieces = re.findall(r"\S+\s*|\s+", reply)  # word by word; joined, they are the reply
        yield _event(_chunk(model, {"role": "assistant", "content": ""}, None))
        for piece in pieces:
            yield _event(_chunk(model, {"content": piece}, None))
            await asyncio.sleep(0)
        yield _event(_chunk(model, {}, "stop"))
        yield "data: [DONE]\n\n"

    # --- lifecycle ------------------------------------------------------------------------
    def start(self) -> FakeLLMServer:
        self._served = ServedApp(self._app(), lifespan="off", start_timeout=10).start()
        self.port = self._served.port
        return self

    def stop(self) -> None:
        if self._served is not None:
            self._served.stop()
        self._served = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _completion(reply: str, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def _logprobs(reply: str) -> dict[str, Any]:
    """The reply's first word as the first token, at probability 0.9, and "?" at 0.1; a reply
    ``"SIM@0.7"`` gives P(SIM) 0.7 and P(NÃO) 0.3 (for yes/no checks at a chosen level)."""
    token = (reply.split() or [""])[0]
    if "@" in token:
        word, p = token.split("@", 1)
        alts = [{"token": word, "logprob": math.log(float(p)), "bytes": None},
                {"token": "NÃO" if word == "SIM" else "SIM",
                 "logprob": math.log(max(1e-9, 1 - float(p))), "bytes": None}]
        return {"content": [{"token": word, "logprob": alts[0]["logprob"], "bytes": None,
                             "top_logprobs": alts}]}
    alts = [{"token": token, "logprob": math.log(0.9), "bytes": None},
            {"token": "?", "logprob": math.log(0.1), "bytes": None}]
    return {"content": [{"token": token, "logprob": math.log(0.9), "bytes": None,
                         "top_logprobs": alts}]}


def _chunk(model: str, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _event(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload)}\n\n"
