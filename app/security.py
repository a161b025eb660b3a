"""Security headers on every response and a bound on request bodies, as one ASGI middleware.

Headers: a Content-Security-Policy that allows only this origin's scripts, styles and fetches
(the pages carry no inline script or style) and no framing, ``nosniff`` and a Referrer-Policy
that sends no address to the video sites the pages link to. The API docs page, when turned on
(``AULA_API_DOCS``), gets the looser policy FastAPI's Swagger UI needs.

Bodies: a request whose ``Content-Length`` is over the limit answers 413 before anything reads
it; a chunked body is counted as it streams and stopped with 413 as soon as it passes the limit,
so no route ever parses or stores more than the limit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Recordings play from this origin (media-src); a YouTube lecture plays in YouTube's
# privacy-enhanced embed, the only frame a page may hold.
YOUTUBE_EMBED = "https://www.youtube-nocookie.com"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    f"media-src 'self'; frame-src {YOUTUBE_EMBED}; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
# FastAPI's /docs page loads Swagger UI from jsDelivr and starts it with an inline script.
DOCS_CSP = (
    "default-src 'none'; script-src 'self' https://cdn.jsdelivr.net 'unsafe-inline'; "
    "style-src 'self' https://cdn.jsdelivr.net; img-src 'self' data: https://fastapi.tiangolo.com; "
    "connect-src 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}
DOCS_PATHS = ("/docs", "/docs/oauth2-redirect", "/redoc")


class BodyTooLarge(HTTPException):
    """A request body over the limit (413); raised while the body is being read."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body over the limit of {limit} bytes")


class SecurityMiddleware:
    """Adds the security headers and enforces ``max_body`` bytes (``limits`` overrides it for
    paths that take larger bodies, e.g. the review import)."""

    def __init__(
        self, app: ASGIApp, *, max_body: int, limits: Mapping[str, int] | None = None
    ) -> None:
        self.app = app
        self.max_body = max_body
        self.limits = dict(limits or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        limit = self.limits.get(path, self.max_body)
        csp = DOCS_CSP if path in DOCS_PATHS else CSP
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = list(message.get("headers", []))
                present = {k.decode("latin-1").lower() for k, _ in headers}
                extra = {**HEADERS, "content-security-policy": csp}
                headers += [(k.encode(), v.encode()) for k, v in extra.items() if k not in present]
                message = {**message, "headers": headers}
            await send(message)

        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _too_large(send_with_headers, limit)
            return

        seen = 0

        async def counted_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
            return message

        try:
            await self.app(scope, counted_receive, send_with_headers)
        except BodyTooLarge:
            if started:
                raise
            await _too_large(send_with_headers, limit)


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers", []):
        if key.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _too_large(send: Any, limit: int) -> None:
    body = json.dumps({"detail": f"request body over the limit of {limit} bytes"}).encode()
    await send({"type": "http.response.start", "status": 413, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
