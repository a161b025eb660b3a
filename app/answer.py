"""The answerer: a grounded, cited answer from the retrieved segments, in the question's language.

The prompt numbers the segments ``[1]..[n]`` (lecture title and time span each), asks for an
answer only from them with ``[n]`` citations, and for one fixed sentence when they don't cover
the question, which ``is_not_covered`` then detects.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.citations import Citation, EmbedFn, cite
from app.llm import ChatModel, Message
from corpus.context import CONTEXT_CHARS, fit_texts  # one default budget for every prompt
from corpus.language import Lang, detect_language
from corpus.models import Hit

MIN_SEGMENT_CHARS = 1000
"""A segment shorter than this after truncation is left out rather than shown as a stub."""

MAX_TOKENS = 512

NOT_COVERED: dict[Lang, str] = {
    "pt": "As aulas não cobrem esta pergunta.",
    "en": "The lectures don't cover this question.",
}

_PROMPTS: dict[Lang, dict[str, str]] = {
    "pt": {
        "system": (
            "Você é um assistente que responde perguntas de estudantes usando SOMENTE trechos "
            "de transcrições de aulas gravadas.\n"
            "Regras:\n"
            "1. Responda em português, de forma clara e direta, em poucos parágrafos.\n"
            "2. Use apenas a informação dos trechos numerados. Não invente nada.\n"
            "3. Depois de cada afirmação, cite o trecho de onde ela veio com o número entre "
            "colchetes, por exemplo [1] ou [2, 3].\n"
            "4. Só se NENHUM trecho tiver informação sobre a pergunta, responda apenas: "
            "{not_covered}"
        ),
        "segments": "Trechos das aulas:",
        "segment": "[{n}] Aula: {title} ({span})",
        "question": "Pergunta: {question}",
        # Ending on the escape sentence made the 1.5B model refuse answerable questions.
        "reminder": "Responda à pergunta usando os trechos acima e cite-os como [n].",
    },
    "en": {
        "system": (
            "You are an assistant that answers students' questions using ONLY excerpts of "
            "recorded lecture transcripts (which may be in Portuguese).\n"
            "Rules:\n"
            "1. Answer in English, clearly and directly, in a few paragraphs.\n"
            "2. Use only the information in the numbered excerpts. Do not make anything up.\n"
            "3. After each statement, cite the excerpt it comes from with its number in square "
            "brackets, for example [1] or [2, 3].\n"
            "4. Only if NO excerpt has information about the question, reply only: {not_covered}"
        ),
        "segments": "Lecture excerpts:",
        "segment": "[{n}] Lecture: {title} ({span})",
        "question": "Question: {question}",
        "reminder": "Answer the question using the excerpts above and cite them as [n].",
    },
}

_REFUSALS = (
    r"\bnao (cobrem|cobre|abordam|aborda|tratam|trata|mencionam|menciona|explicam|explica|"
    r"respondem|responde|contem|falam|fala)\b",
    r"\bnao (ha|existe|encontrei|foi encontrad\w*) (nenhuma )?(informac|mencao|referenc)",
    r"\b(don't|do not|does not|doesn't) (cover|address|mention|discuss|answer|contain)\b",
    r"\b(no|not enough) (information|mention)\b",
    r"\bnot covered\b",
)


@dataclass
class Answer:
    """The answer text (with ``[n]`` markers), what it cites, and whether the lectures cover it."""

    text: str
    citations: list[Citation]
    covered: bool
    model: str
    language: Lang
    timings: dict[str, float] = field(default_factory=dict)
    segments_used: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "citations": [c.to_dict() for c in self.citations],
            "covered": self.covered,
            "model": self.model,
            "language": self.language,
            "timings": dict(self.timings),
            "segments_used": self.segments_used,
        }


def fold(text: str) -> str:
    """Lower case without accents, for matching."""
    decomposed = unicodedata.normalize("NFKD", text.lower().replace("\u2019", "'"))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def fmt_clock(seconds: float) -> str:
    """``mm:ss``, or ``h:mm:ss`` from the first hour on."""
    s = max(0, int(seconds))
    if s >= 3600:
        return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"{s // 60:02d}:{s % 60:02d}"


def fit_segments(
    hits: Sequence[Hit], budget: int = CONTEXT_CHARS, min_chars: int = MIN_SEGMENT_CHARS
) -> list[str]:
    """Segment texts cut so that together they fit ``budget`` characters (``corpus.context``:
    the judges and ragas cut the same way). When a share would drop below ``min_chars``, the
    lowest-ranked segments are left out instead (always a prefix: numbering holds)."""
    return fit_texts([h.text for h in hits], budget, min_chars)


def build_messages(
    question: str, hits: Sequence[Hit], *, budget: int = CONTEXT_CHARS, lang: Lang | None = None
) -> tuple[list[Message], int]:
    """The chat messages for ``question`` and how many of ``hits`` they show (numbered 1..n)."""
    lang = lang or detect_language(question)
    p = _PROMPTS[lang]
    texts = fit_segments(hits, budget)
    blocks = []
    for n, (hit, text) in enumerate(zip(hits, texts, strict=False), start=1):
        span = f"{fmt_clock(hit.start)}–{fmt_clock(hit.end)}"
        head = p["segment"].format(n=n, title=hit.title or hit.lecture_id, span=span)
        blocks.append(f"{head}\n{text}")
    user = "\n\n".join(
        [
            p["segments"],
            *blocks,
            p["question"].format(question=question.strip()),
            p["reminder"],
        ]
    )
    system = p["system"].format(not_covered=NOT_COVERED[lang])
    return [{"role": "system", "content": system}, {"role": "user", "content": user}], len(texts)


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


def _no_hits(lang: Lang, llm: ChatModel) -> Answer:
    return Answer(NOT_COVERED[lang], [], False, llm.model_id, lang, {}, 0)


def answer(
    question: str,
    hits: Sequence[Hit],
    llm: ChatModel,
    embed: EmbedFn | None = None,
    *,
    max_tokens: int = MAX_TOKENS,
    budget: int = CONTEXT_CHARS,
) -> Answer:
    """Answer ``question`` from ``hits`` with ``llm``; ``embed`` (the E5 model) lets citations
    be added to sentences the model left uncited. No hits: the not-covered answer, no LLM call.
    """
    lang = detect_language(question)
    if not hits:
        return _no_hits(lang, llm)
    messages, used = build_messages(question, hits, budget=budget, lang=lang)
    t0 = time.perf_counter()
    raw = llm.chat(messages, temperature=0.0, max_tokens=max_tokens)
    timings = {"generate": time.perf_counter() - t0}
    return _finish(raw, hits, used, llm, lang, embed, timings)


def answer_stream(
    question: str,
    hits: Sequence[Hit],
    llm: ChatModel,
    embed: EmbedFn | None = None,
    *,
    max_tokens: int = MAX_TOKENS,
    budget: int = CONTEXT_CHARS,
) -> Iterator[str | Answer]:
    """Like ``answer``, streamed: the model's text deltas (``str``), then the final ``Answer``.

    The final text can differ from the concatenated deltas (bad markers dropped, citations
    added), so a client should show ``Answer.text`` once it arrives.
    """
    lang = detect_language(question)
    if not hits:
        final = _no_hits(lang, llm)
        yield final.text
        yield final
        return
    messages, used = build_messages(question, hits, budget=budget, lang=lang)
    t0 = time.perf_counter()
    first: float | None = None
    parts: list[str] = []
    for delta in llm.stream(messages, temperature=0.0, max_tokens=max_tokens):
        if first is None:
            first = time.perf_counter() - t0
        parts.append(delta)
        yield delta
    timings = {"generate": time.perf_counter() - t0, "first_token": first or 0.0}
    yield _finish("".join(parts), hits, used, llm, lang, embed, timings)
