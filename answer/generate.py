"""Generate stage of the ``gated`` strategy: the answer written from the passages that passed
the gate only (``answer.prompts.gated_messages``), streamed as it is written."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from answer.prompts import gated_messages
from answer.question import Question
from corpus.context import Passage

SUMMARY_TOKENS_FACTOR = 2
"""A summary of a lecture may be this many times longer than an answer."""


@dataclass
class Draft:
    """What the generator wrote, and how long it took (filled as ``write`` streams)."""

    text: str = ""
    first_token: float = 0.0
    seconds: float = 0.0


def write(llm: Any, question: Question, chosen: Sequence[Passage], draft: Draft, *,
          max_tokens: int) -> Iterator[str]:
    """Stream the answer to ``question`` from ``chosen``, each delta as it comes; ``draft``
    holds the whole text and the timings when it ends (an ``LLMError`` passes through)."""
    messages = gated_messages(question.text, chosen, question.language,
                              summary=question.summary,
                              compare=question.sides if len(chosen) > 1 else None)
    t0 = time.perf_counter()
    first: float | None = None
    parts: list[str] = []
    try:
        for delta in llm.stream(messages, temperature=0.0, max_tokens=max_tokens * (
                SUMMARY_TOKENS_FACTOR if question.summary else 1)):
            if first is None:
                first = time.perf_counter() - t0
            parts.append(delta)
            yield delta
    finally:
        draft.text = "".join(parts).strip()
        draft.first_token = first or 0.0
        draft.seconds = time.perf_counter() - t0
