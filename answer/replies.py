"""What the pipeline hands back: the moments shown first, the answer with its citations and
checks, and the fixed lines a student reads when there is no answer to write."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Literal

from answer.citations import Citation, video_link
from app.llm import LLMError
from corpus.context import Passage, cut, squash
from corpus.language import Lang
from corpus.models import Hit

log = logging.getLogger(__name__)

Strategy = Literal["gated", "direct", "quote"]
SNIPPET_CHARS = 280

DECLINED: dict[Lang, str] = {
    "pt": "As aulas não parecem cobrir esta pergunta. Os momentos mais próximos estão abaixo.",
    "en": "The lectures don't seem to cover this question. The closest moments are listed below.",
}
COURSE_QUESTION: dict[Lang, str] = {
    "pt": "Isto parece uma pergunta sobre a organização do curso (provas, notas, prazos, "
          "materiais, horários), que as aulas gravadas não respondem: pergunte ao professor ou à "
          "monitoria. Os momentos mais próximos estão abaixo.",
    "en": "This looks like a question about the course itself (exams, grades, deadlines, "
          "materials, schedule), which the recorded lectures don't answer: ask the instructor or "
          "the teaching assistants. The closest moments are listed below.",
}
NO_SUBJECT: dict[Lang, str] = {
    "pt": "A pergunta não diz sobre o que é: escreva o assunto, por exemplo “o que é um "
          "autovetor?” ou “pq a derivada de x² é 2x?”.",
    "en": "The question doesn't say what it is about: write the subject, for example “what is "
          "an eigenvector?” or “why is the derivative of x² 2x?”.",
}
FAILED: dict[Lang, str] = {
    "pt": "Não consegui escrever a resposta agora ({why}). Os momentos das aulas que encontrei "
          "estão abaixo.",
    "en": "I couldn't write the answer right now ({why}). The lecture moments I found are "
          "listed below.",
}


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


@dataclass(frozen=True)
class Moment:
    """A moment of a lecture shown to the student: where, a link at the answer's second, a
    snippet, and the evidence check's P (None when it was not checked)."""

    lecture_id: str
    title: str
    start: float
    end: float
    answer_start: float
    url: str
    snippet: str
    score: float
    p: float | None = None
    corpus_id: int = -1

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Moments:
    """The first event: the best moments, and the coverage decision when it is already made."""

    moments: list[Moment]
    covered: bool | None
    reason: str = ""


@dataclass(frozen=True)
class SentenceCheck:
    text: str
    cites: list[int]
    p: float | None
    supported: bool | None
    moved_from: list[int] | None = None
    """The passages the generator cited, when the post-check moved the citation to the one
    that confirms the sentence (``cites``); ``[]`` when it cited none and the post-check
    added the one that confirms it."""
    at: float | None = None
    """The second where its (first) cited passage says it (``corpus.context.said_at``)."""
    url: str = ""
    """The video at ``at``: where the sentence's ``[n]`` opens it."""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Reading:
    """One quote the LLM read: its lecture, span, text and P(it answers the question)."""

    lecture_id: str
    title: str
    start: float
    end: float
    text: str
    p: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Reply:
    """The final result: the answer (None when generation failed), the moments, the decision."""

    question: str
    language: Lang
    strategy: Strategy
    moments: list[Moment]
    answer: Answer | None
    covered: bool | None
    confidence: float | None = None
    sentences: list[SentenceCheck] = field(default_factory=list)
    note: str = ""
    error: str | None = None
    reason: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    contexts: list[str] = field(default_factory=list)
    """The passage texts the generator read (what a judge should check the answer against)."""
    quoted: int | None = None
    """The passage (1-based) quoted because the model's own answer only restated the question."""
    readings: list[Reading] = field(default_factory=list)
    """The quotes the LLM read for the answer, in the order read, each with its P (the quote
    strategy): what the threshold and the number of passages read are fitted on."""

    @property
    def text(self) -> str:
        return self.answer.text if self.answer is not None else self.note


def passage_moment(passage: Passage, p: float | None) -> Moment:
    h = passage.hit
    return Moment(h.lecture_id, h.title or h.lecture_id, passage.start, passage.end,
                  passage.answer_start, video_link(h.url, passage.answer_start),
                  cut(passage.text, SNIPPET_CHARS), round(float(h.score), 4),
                  None if p is None else round(p, 4), h.corpus_id)


def hit_moment(hit: Hit) -> Moment:
    return Moment(hit.lecture_id, hit.title or hit.lecture_id, hit.start, hit.end,
                  hit.link_start, video_link(hit.url, hit.link_start),
                  cut(squash(hit.text), SNIPPET_CHARS),
                  round(float(hit.score), 4), None, hit.corpus_id)



_WHY: dict[Lang, tuple[str, str, str]] = {
    "pt": ("o modelo demorou demais", "o modelo de linguagem não está disponível",
           "o modelo de linguagem falhou"),
    "en": ("the model took too long", "the language model is unavailable",
           "the language model failed"),
}


def _why(exc: Exception, lang: Lang) -> str:
    """What went wrong, in a few words for the student (the detail goes in ``error``)."""
    slow, down, failed = _WHY[lang]
    text = str(exc)
    if "timed out" in text:
        return slow
    if "cannot connect" in text or "failed after" in text:
        return down
    return failed




def failed(question: str, lang: Lang, strategy: Strategy, moments: list[Moment],
           exc: Exception, timings: dict[str, float]) -> Reply:
    """The reply when the LLM fails: the moments, and a line saying what failed (the detail
    goes in ``error``, the log says where)."""
    log.warning("answer failed (%s): %s", strategy, exc)
    public = exc.public if isinstance(exc, LLMError) else "the language model failed"
    return Reply(question, lang, strategy, moments, None, None,
                 note=FAILED[lang].format(why=_why(exc, lang)), error=public,
                 reason="llm failed", timings=timings)


def declined(lang: Lang, model: str) -> Answer:
    """The answer that says the lectures do not seem to cover the question."""
    return Answer(DECLINED[lang], [], False, model, lang)
