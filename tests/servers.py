"""Run an ASGI app with uvicorn on 127.0.0.1 in a background thread: a real HTTP server."""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Any

import uvicorn


class ServedApp:
    """``with ServedApp(app) as srv: httpx.get(srv.url + "/health")``; runs the lifespan."""

    def __init__(self, app: Any, *, lifespan: str = "on", start_timeout: float = 120,
                 **options: Any) -> None:
        self.app = app
        self.options = options  # more uvicorn.Config options (e.g. the proxy settings)
        self.lifespan = lifespan
        self.start_timeout = start_timeout
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServedApp:
        config = uvicorn.Config(
            self.app, host="127.0.0.1", port=0, log_level="warning", lifespan=self.lifespan,
            timeout_graceful_shutdown=2, **self.options,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self.start_timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.02)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> ServedApp:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
