"""Admission for LLM work: a bounded line per LLM slot, a deadline per question, 503 when full.

The LLM answers ``slots`` questions at a time (on 2 cores the embedded model writes one). A question
takes a place in line (``Admission.enter``), which fails at once with ``Busy`` (503 and
``Retry-After``) when ``slots × (1 + queue)`` questions are already running or waiting. Admitted,
it waits for a slot and then runs on one of the admission's own ``slots`` worker threads, never
on the server's request threads, so ``/health``, ``/search``, the pages and the review API keep
answering however many students ask at once.

Each question has ``deadline`` seconds in all, the wait in line included; when they pass
(``DeadlinePassed``), or when its reader stops (the client went away), the worker stops at the
next step or token of the answer and closes the LLM stream, which ends the generation there. A
slot is freed only when its worker has stopped, so the LLM never runs more than ``slots``
questions, not even abandoned ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
import time
from collections import deque
from collections.abc import AsyncGenerator, Iterator
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")

_ITEM, _END, _ERROR = range(3)


class Busy(Exception):
    """The line is full: try again in ``retry_after`` seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"the line for the language model is full; retry in {retry_after} s")
        self.retry_after = retry_after


class DeadlinePassed(Exception):
    """The question used its whole deadline (waiting in line or being answered)."""


class Admission:
    """The line and the workers in front of the LLM; one per app, used from its event loop."""

    def __init__(self, slots: int = 1, queue: int = 3, deadline: float = 120.0) -> None:
        if slots < 1 or queue < 0 or deadline <= 0:
            raise ValueError("admission: slots >= 1, queue >= 0 and deadline > 0")
        self.slots = slots
        self.queue = queue
        self.deadline = deadline
        self._free = slots
        self._line: deque[asyncio.Future[None]] = deque()
        self._waiting = 0  # admitted questions that hold no slot yet
        self._typical = min(deadline, 20.0)  # seconds a slot stays busy (moving average)
        self._executor = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="aula-llm")

    @classmethod
    def from_settings(cls, settings: Any) -> Admission:
        return cls(settings.scale.llm_slots, settings.scale.ask_queue, settings.scale.ask_deadline)

    @property
    def busy(self) -> int:
        """Slots in use (abandoned questions whose LLM call has not returned included)."""
        return self.slots - self._free

    @property
    def waiting(self) -> int:
        return self._waiting

    def retry_after(self) -> int:
        """Seconds until a place is likely free: the work ahead at the typical pace."""
        ahead = (self.busy + self._waiting) / self.slots
        return max(1, min(math.ceil(ahead * self._typical), math.ceil(self.deadline)))

    def enter(self) -> Ticket:
        """A place in line for one question, or ``Busy`` when the line is full."""
        if self.busy + self._waiting >= self.slots * (1 + self.queue):
            raise Busy(self.retry_after())
        self._waiting += 1
        return Ticket(self, time.monotonic() + self.deadline)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    # --- slots (event loop only) ----------------------------------------------------------
    async def _acquire(self, timeout: float) -> None:
        if self._free > 0 and not self._line:
            self._free -= 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._line.append(turn)
        try:
            await asyncio.wait_for(asyncio.shield(turn), max(0.0, timeout))
        except BaseException:
            if turn.done() and not turn.cancelled():
                self._release()  # the slot came as we gave up: hand it on
            else:
                turn.cancel()
                with contextlib.suppress(ValueError):
                    self._line.remove(turn)
            raise

    def _release(self) -> None:
        while self._line:
            turn = self._line.popleft()
            if not turn.done():
                turn.set_result(None)  # the slot passes straight to the next in line
                return
        self._free += 1

    def _finished(self, seconds: float) -> None:
        self._typical = 0.7 * self._typical + 0.3 * seconds
        self._release()


class Ticket:
    """One question's place in line; ``async with`` it so the place is given back."""

    def __init__(self, admission: Admission, deadline: float) -> None:
        self.admission = admission
        self.deadline = deadline
        self._in_line = True
        self._stop = threading.Event()

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def release(self) -> None:
        """Give the place in line back (idempotent; a running worker keeps its slot)."""
        if self._in_line:
            self._in_line = False
            self.admission._waiting -= 1

    def close(self) -> None:
        """The question is over (answered, or its client is gone): give the place back and
        stop its worker at the next item."""
        self._stop.set()
        self.release()

    async def __aenter__(self) -> Ticket:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    async def run(self, work: Iterator[T]) -> AsyncGenerator[T, None]:
        """Wait for a slot, then drive ``work`` on an LLM worker, yielding its items as they
        come; ``DeadlinePassed`` when the deadline comes first. Leaving the loop early (or
        being cancelled) stops the worker at its next item and closes ``work``."""
        adm = self.admission
        try:
            await adm._acquire(self.left())
        except TimeoutError:
            raise DeadlinePassed from None
        finally:
            self.release()
        loop = asyncio.get_running_loop()
        inbox: asyncio.Queue[tuple[int, Any]] = asyncio.Queue()
        stop = self._stop
        started = time.monotonic()

        def post(kind: int, item: Any) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody reads
                loop.call_soon_threadsafe(inbox.put_nowait, (kind, item))

        def drive() -> None:
            try:
                for item in work:
                    post(_ITEM, item)
                    if stop.is_set():
                        break
            except BaseException as exc:  # handed to the reader, who raises it
                post(_ERROR, exc)
            else:
                post(_END, None)
            finally:
                close = getattr(work, "close", None)
                if close is not None:
                    close()  # a generator's finally closes the LLM stream

        try:
            job = loop.run_in_executor(adm._executor, drive)
        except BaseException:
            adm._release()
            raise
        job.add_done_callback(lambda _: adm._finished(time.monotonic() - started))
        try:
            while True:
                try:
                    kind, item = await asyncio.wait_for(inbox.get(), max(0.0, self.left()))
                except TimeoutError:
                    raise DeadlinePassed from None
                if kind == _END:
                    return
                if kind == _ERROR:
                    raise item
                yield item
        finally:
            stop.set()
