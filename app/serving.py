"""How uvicorn serves the app: the options ``aula serve`` and the integration tests share."""

from __future__ import annotations

from typing import Any

from app.config import Settings
from app.ratelimit import server_options
from app.schemas import MAX_REQUEST_HEAD


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The proxy options (``X-Forwarded-For`` only from ``AULA_TRUSTED_PROXIES``) and a parser
    that reads every request head the API's limits allow, however it is split on the wire."""
    return {**server_options(settings), "h11_max_incomplete_event_size": MAX_REQUEST_HEAD}
