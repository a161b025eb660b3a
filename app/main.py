"""The FastAPI application: ``create_app()`` builds the heavy objects once, in the lifespan."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from app.config import Settings, get_settings
from app.schemas import error_responses
from app.services import Services, build_services

log = logging.getLogger("aula")


def create_app(settings: Settings | None = None) -> FastAPI:
    """The Aula service; ``settings`` defaults to the environment's. From here on, no log line
    of this process shows a credential (``app.redaction``)."""
    from app.config import set_process_env
    from app.redaction import install as redact_logs

    set_process_env()
    redact_logs()
    conf = settings or get_settings()
    app = FastAPI(
        title="Aula",
        description="Perguntas sobre aulas gravadas, respondidas com citações ao segundo.",
        version="0.1.0",
        lifespan=_lifespan(settings),
        docs_url="/docs" if conf.security.api_docs else None,
        redoc_url="/redoc" if conf.security.api_docs else None,
        responses=error_responses(400, 413, 422),
    )
    from app.security import SecurityMiddleware

    app.add_middleware(SecurityMiddleware, max_body=conf.security.max_body_bytes,
                       limits={"/api/review/import": conf.security.max_import_bytes})
    app.exception_handler(RequestValidationError)(_validation)
    _database_errors(app)
    _include_routers(app)
    return app


def _lifespan(settings: Settings | None) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Builds the services (model, index, LLM client, database) at startup, closes them at
    shutdown."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        from app.llm import redacted

        s = settings or get_settings()
        services = build_services(s)
        app.state.services = services
        _open_review(app, services)
        log.info("aula ready: %d segments, LLM %s", len(services.retriever.data.segments),
                 redacted(services.llm_endpoint))
        try:
            yield
        finally:
            services.close()

    return lifespan


async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
    """A request that fails validation: 422 with its first error in one line (``detail``)."""
    errors = exc.errors()
    first = errors[0] if errors else {}
    field = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    msg = str(first.get("msg", "invalid request")).removeprefix("Value error, ")
    return JSONResponse(
        status_code=422,
        content={"detail": f"{field}: {msg}" if field else msg, "field": field or None,
                 "errors": _plain(list(errors))},
    )


def _include_routers(app: FastAPI) -> None:
    """The API, the media and review pages, and the question page when it is installed."""
    from app.api import ask, media, review, search
    from app.pages import review as review_pages

    app.include_router(search.router)
    app.include_router(ask.router)
    app.include_router(review.router)
    app.include_router(media.router)
    app.include_router(review_pages.router)
    try:
        from app.pages import routes as pages
    except ModuleNotFoundError:
        pass
    else:
        app.include_router(pages.router)


def _open_review(app: FastAPI, services: Services) -> None:
    """The database (migrated to head), the answer recorder, the rate limits, the LLM's
    admission line and the password hashing bound."""
    from app.admission import Admission
    from app.auth import hashing
    from app.db.session import open_database
    from app.ratelimit import install_limiters
    from app.recorder import AnswerRecorder

    s = services.settings
    services.db = open_database(s.service.database_url, timeout=s.service.database_timeout)
    services.stack.callback(services.db.close)
    app.state.recorder = AnswerRecorder.from_settings(s, services.db, services.llm)
    services.stack.callback(app.state.recorder.close)
    install_limiters(app, s, services.db)
    app.state.admission = Admission.from_settings(s)
    services.stack.callback(app.state.admission.close)
    hashing.resize(s.security.password_hashes, s.security.password_hash_wait)


def _database_errors(app: FastAPI) -> None:
    """A database that is down, locked past the timeout or out of connections answers 503
    with Retry-After: the caller keeps what it sent and tries again; nothing half-saved."""
    from sqlalchemy.exc import DBAPIError
    from sqlalchemy.exc import TimeoutError as PoolTimeout

    from app.db.session import DatabaseUnavailable

    async def unavailable(_: Request, exc: Exception) -> JSONResponse:
        log.warning("database unavailable: %s", exc)
        return JSONResponse(
            status_code=503,
            content={"detail": "banco de dados indisponível agora; nada foi salvo, tente de "
                               "novo em alguns segundos"},
            headers={"Retry-After": "5"},
        )

    for kind in (DatabaseUnavailable, DBAPIError, PoolTimeout):
        app.add_exception_handler(kind, unavailable)


def _plain(errors: list) -> list:  # type: ignore[type-arg]
    return [{k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in errors]
