"""llama.cpp's own count of what each streamed reply's prompt cost: the tokens it read and the
tokens it took from its cache (``timings`` in the stream's last chunk), for the test and the
bench that check the embedded server's prompt cache."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class _Counted:
    """A streamed reply, iterated and closed as ``LLMClient.stream`` does, that records the
    counts of its last chunk."""

    def __init__(self, reply: Any, counts: list[tuple[int, int]]) -> None:
        self.reply = reply
        self.counts = counts

    def __iter__(self) -> Iterator[Any]:
        for chunk in self.reply:
            timings = (chunk.model_extra or {}).get("timings")
            if timings:
                self.counts.append((int(timings.get("prompt_n", 0)),
                                    int(timings.get("cache_n", 0))))
            yield chunk

    def close(self) -> None:
        self.reply.close()


@contextmanager
def prompt_counts(llm: Any) -> Iterator[list[tuple[int, int]]]:
    """While open, each streamed reply of ``llm`` (an ``LLMClient``: the answers) appends
    (prompt tokens read, prompt tokens taken from the cache) to the list it yields."""
    completions = llm._client.chat.completions
    create = completions.create
    counts: list[tuple[int, int]] = []

    def counting(**kw: Any) -> Any:
        reply = create(**kw)
        return _Counted(reply, counts) if kw.get("stream") else reply

    completions.create = counting
    try:
        yield counts
    finally:
        completions.create = create
