"""The FastAPI application: ``create_app()`` builds the heavy objects once, in the lifespan."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from app.config import Settings, get_settings
from app.services import build_services

log = logging.getLogger("aula")


def create_app(settings: Settings | None = None) -> FastAPI:
    """The Aula service; ``settings`` defaults to the environment's."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        s = settings or get_settings()
        services = build_services(s)
        app.state.services = services
        log.info("aula ready: %d segments, LLM %s", len(services.retriever.data.segments),
                 services.llm_endpoint)
        try:
            yield
        finally:
            services.close()

    app = FastAPI(
        title="Aula",
        description="Perguntas sobre aulas gravadas, respondidas com citações ao segundo.",
        version="0.1.0",
        lifespan=lifespan,
    )

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first = errors[0] if errors else {}
        field = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        msg = str(first.get("msg", "invalid request")).removeprefix("Value error, ")
        return JSONResponse(
            status_code=422,
            content={"detail": f"{field}: {msg}" if field else msg, "errors": _plain(errors)},
        )

    from app.api import ask, search

    app.include_router(search.router)
    app.include_router(ask.router)
    try:
        from app.pages import routes as pages
    except ModuleNotFoundError:
        pass
    else:
        app.include_router(pages.router)
    return app


def _plain(errors: list) -> list:  # type: ignore[type-arg]
    return [{k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in errors]
