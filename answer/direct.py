"""The ``direct`` strategy (for a strong remote model): the top windows go to the generator,
which answers from them with ``[n]`` citations, or with one fixed sentence when they don't cover
the question, which ``is_not_covered`` then detects.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from answer.check import without_foreign_links
from answer.citations import EmbedFn, cite
from answer.prompts import NOT_COVERED, build_messages
from answer.question import Question
from answer.replies import Answer, Moments, Reply, failed, hit_moment
from app.llm import ChatModel, LLMError
from corpus.context import CONTEXT_CHARS  # one default budget for every prompt
from corpus.language import Lang, detect_language
from corpus.models import Hit
from corpus.text import fold

MAX_TOKENS = 512

_REFUSALS = (
    r"\bnao (cobrem|cobre|abordam|aborda|tratam|trata|mencionam|menciona|explicam|explica|"
    r"respondem|responde|contem|falam|fala)\b",
    r"\bnao (ha|existe|encontrei|foi encontrad\w*) (nenhuma )?(informac|mencao|referenc)",
    r"\b(don't|do not|does not|doesn't) (cover|address|mention|discuss|answer|contain)\b",
    r"\b(no|not enough) (information|mention)\b",
    r"\bnot covered\b",
)


def is_not_covered(text: str) -> bool:
    """Whether the reply says the lectures don't cover the question (and cites nothing)."""
    folded = fold(text).strip()
    if not folded:
        return True
    if any(fold(s).rstrip(".") in folded for s in NOT_COVERED.values()):
        return not re.search(r"\[\d", folded) or len(folded) < 80
    return len(folded) < 300 and not re.search(r"\[\d", folded) and any(
        re.search(r, folded) for r in _REFUSALS
    )


def _finish(
    raw: str, hits: Sequence[Hit], used: int, llm: ChatModel, lang: Lang,
    embed: EmbedFn | None, timings: dict[str, float],
) -> Answer:
    shown = list(hits[:used])
    if is_not_covered(raw):
        text = raw.strip() or NOT_COVERED[lang]
        return Answer(text, [], False, llm.model_id, lang, timings, used)
    t0 = time.perf_counter()
    text, citations = cite(raw.strip(), shown, embed)
    timings["citations"] = time.perf_counter() - t0
    return Answer(text, citations, True, llm.model_id, lang, timings, used)


@dataclass(frozen=True)
class DirectOptions:
    """How the ``direct`` answer is written: its token limit, the prompt's character budget,
    and its language (None: the question's)."""

    max_tokens: int = MAX_TOKENS
    budget: int = CONTEXT_CHARS
    lang: Lang | None = None


def _written(question: str, hits: Sequence[Hit], llm: ChatModel, embed: EmbedFn | None,
             o: DirectOptions, *, streamed: bool) -> Iterator[str | Answer]:
    """The answer's text (all at once, or its deltas when ``streamed``), then the ``Answer``;
    with no hits, the not-covered answer and no LLM call."""
    lang = o.lang or detect_language(question)
    if not hits:
        final = Answer(NOT_COVERED[lang], [], False, llm.model_id, lang, {}, 0)
        yield final.text
        yield final
        return
    messages, used = build_messages(question, hits, budget=o.budget, lang=lang)
    t0 = time.perf_counter()
    if not streamed:
        raw = llm.chat(messages, temperature=0.0, max_tokens=o.max_tokens)
        yield raw
        yield _finish(raw, hits, used, llm, lang, embed, {"generate": time.perf_counter() - t0})
        return
    first: float | None = None
    parts: list[str] = []
    for delta in llm.stream(messages, temperature=0.0, max_tokens=o.max_tokens):
        if first is None:
            first = time.perf_counter() - t0
        parts.append(delta)
        yield delta
    timings = {"generate": time.perf_counter() - t0, "first_token": first or 0.0}
    yield _finish("".join(parts), hits, used, llm, lang, embed, timings)


def answer(question: str, hits: Sequence[Hit], llm: ChatModel, embed: EmbedFn | None = None,
           **options: Any) -> Answer:
    """Answer ``question`` from ``hits`` with ``llm``; ``embed`` (the E5 model) lets citations
    be added to sentences the model left uncited. No hits: the not-covered answer, no LLM call.
    ``options``: ``DirectOptions``'s fields."""
    *_, final = _written(question, hits, llm, embed, DirectOptions(**options), streamed=False)
    assert isinstance(final, Answer)
    return final


def answer_stream(question: str, hits: Sequence[Hit], llm: ChatModel,
                  embed: EmbedFn | None = None, **options: Any) -> Iterator[str | Answer]:
    """Like ``answer``, streamed: the model's text deltas (``str``), then the final ``Answer``.

    The final text can differ from the concatenated deltas (bad markers dropped, citations
    added), so a client should show ``Answer.text`` once it arrives.
    """
    return _written(question, hits, llm, embed, DirectOptions(**options), streamed=True)


def direct_events(question: Question, hits: Sequence[Hit], llm: ChatModel,
                  embed: EmbedFn | None, *, max_tokens: int = MAX_TOKENS,
                  budget: int = CONTEXT_CHARS) -> Iterator[Moments | str | Reply]:
    """The ``direct`` strategy's events: the hits as moments, the answer as it is written,
    then the reply, without the sentences that carry a link its passages do not say."""
    lang = question.language
    moments = [hit_moment(h) for h in hits]
    yield Moments(moments, None if hits else False)
    t0 = time.perf_counter()
    final: Answer | None = None
    try:
        for piece in answer_stream(question.text, hits, llm, embed, max_tokens=max_tokens,
                                   budget=budget, lang=lang):
            if isinstance(piece, str):
                yield piece
            else:
                final = piece
    except LLMError as exc:
        yield failed(question.text, lang, "direct", moments, exc,
                     {"generate": time.perf_counter() - t0})
        return
    assert final is not None
    kept = without_foreign_links(final.text, [h.text for h in hits])
    if kept != final.text:
        text, citations = cite(kept, hits)
        final = replace(final, text=text, citations=citations)
    yield Reply(question.text, lang, "direct", moments, final, final.covered,
                timings=dict(final.timings), contexts=[h.text for h in hits])
