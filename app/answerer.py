"""What a student gets for a question: the best moments first, then a cited answer or a plain
"not covered", never a blank page.

Two strategies (``Settings.answer.strategy``):

- ``gated`` (default, for the embedded 1.5B model): the top windows are focused to the sentences
  around the answer (``corpus.context.focus``); the evidence check (``app.evidence``) asks the
  LLM, passage by passage, whether it answers, and the fitted ``Gate`` decides coverage *before*
  generation. Covered: the generator gets only the passages that passed, with no escape
  sentence. Not covered: the reply says so and lists the closest moments. Each answer sentence is
  then checked against the passage it cites (``eval.claims``) and marked (or dropped) when the
  passage does not confirm it.
- ``direct`` (the earlier behaviour, for a strong remote model): the top windows go to the
  generator, which may answer with the fixed not-covered sentence.

``Answerer.events`` yields, in order: ``Moments`` (as soon as retrieval and the check are done),
answer text deltas (``str``), then the final ``Reply``. An LLM that is down, slow or gives no
logprobs degrades to the evidence-only reply with the reason in ``Reply.error``; nothing raises.
"""

from __future__ import annotations

import logging
import re
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from app.answer import (
    MAX_TOKENS,
    Answer,
    Lang,
    answer_stream,
    detect_language,
    fmt_clock,
)
from app.citations import (
    MARKER_RE,
    EmbedFn,
    build_citations,
    cite,
    cite_also,
    cited_numbers,
    repoint,
    sentence_spans,
    video_link,
)
from app.course import CourseCheck
from app.evidence import (
    Decision,
    Gate,
    asks_nothing,
    check_passages,
    check_texts,
    features,
    passage_block,
)
from app.llm import LLMError
from app.locate import asks_where, where_answer, where_topic
from app.outlinks import foreign_links
from app.quote import (
    LEAD_MAX_TOKENS,
    LEAD_STRICT_AT,
    NOT_FOUND,
    QUOTE_MIN_P,
    Quote,
    best_runs,
    first_sentence,
    lead_messages,
    placed,
    quote_answer,
    whole_passage,
)
from app.substance import MIN_NEW_WORDS, new_words, quoted_spans, with_substance
from app.summary import (
    SUMMARY_PASSAGES,
    asks_summary,
    spread,
    summary_decision,
    summary_lecture,
    summary_topic,
)
from corpus.bm25 import tokenize
from corpus.compare import compared_subjects
from corpus.context import (
    CONTEXT_CHARS,
    PASSAGE_CHARS,
    Passage,
    cut,
    focus,
    numbered,
    rank_passages,
    said_at,
    squash,
)
from corpus.mentions import strip_mentions
from corpus.models import Cue, Hit

log = logging.getLogger(__name__)

Strategy = Literal["gated", "direct", "quote"]
PostCheck = Literal["mark", "drop", "off"]
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

_GATED_PROMPTS: dict[Lang, dict[str, str]] = {
    "pt": {
        "system": (
            "Você é um monitor que responde perguntas de estudantes usando SOMENTE os trechos "
            "de aulas gravadas dados abaixo.\n"
            "Regras:\n"
            "1. {rule}\n"
            "2. Use apenas a informação dos trechos. Não invente nada.\n"
            "3. Termine cada frase com o número do trecho de onde ela veio entre colchetes, "
            "por exemplo [1] ou [1, 2]."
        ),
        "rule": "Responda em português, de forma clara e direta, em no máximo três frases.",
        "summary_rule": ("Responda em português: resuma a aula em no máximo cinco frases, na "
                         "ordem dos trechos, que seguem a ordem da aula."),
        "segments": "Trechos das aulas:",
        "segment": "[{n}] Aula: {title} ({span})",
        "question": "Pergunta do estudante: {question}",
        "reminder": "Responda à pergunta com base nos trechos acima, citando-os como [n].",
        "summary_reminder": "Resuma a aula com base nos trechos acima, citando-os como [n].",
        "compare_reminder": ("A pergunta compara {a} e {b}: diga numa frase o que os trechos "
                             "dizem de {a}, noutra o que dizem de {b}, e termine cada frase com "
                             "o número do trecho de onde ela veio [n]."),
    },
    "en": {
        "system": (
            "You are a teaching assistant who answers students' questions using ONLY the "
            "recorded lecture excerpts below (they may be in Portuguese).\n"
            "Rules:\n"
            "1. {rule}\n"
            "2. Use only the information in the excerpts. Do not make anything up.\n"
            "3. End each sentence with the number of the excerpt it comes from in square "
            "brackets, for example [1] or [1, 2]."
        ),
        "rule": "Answer in English, clearly and directly, in at most three sentences.",
        "summary_rule": ("Answer in English: sum up the lecture in at most five sentences, in "
                         "the order of the excerpts, which follow the lecture's order."),
        "segments": "Lecture excerpts:",
        "segment": "[{n}] Lecture: {title} ({span})",
        "question": "Student's question: {question}",
        "reminder": "Answer the question from the excerpts above, citing them as [n].",
        "summary_reminder": "Sum up the lecture from the excerpts above, citing them as [n].",
        "compare_reminder": ("The question compares {a} and {b}: say in one sentence what the "
                             "excerpts say of {a}, in another what they say of {b}, and end "
                             "each sentence with the number of the excerpt it comes from [n]."),
    },
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

    @property
    def text(self) -> str:
        return self.answer.text if self.answer is not None else self.note


def _moment(passage: Passage, p: float | None) -> Moment:
    h = passage.hit
    return Moment(h.lecture_id, h.title or h.lecture_id, passage.start, passage.end,
                  passage.answer_start, video_link(h.url, passage.answer_start),
                  cut(passage.text, SNIPPET_CHARS), round(float(h.score), 4),
                  None if p is None else round(p, 4), h.corpus_id)


def _hit_moment(hit: Hit) -> Moment:
    return Moment(hit.lecture_id, hit.title or hit.lecture_id, hit.start, hit.end,
                  hit.link_start, video_link(hit.url, hit.link_start),
                  cut(squash(hit.text), SNIPPET_CHARS),
                  round(float(hit.score), 4), None, hit.corpus_id)


def gated_messages(question: str, passages: Sequence[Passage], lang: Lang, *,
                   summary: bool = False, compare: tuple[str, str] | None = None
                   ) -> list[dict[str, str]]:
    """The generator's prompt: the passages that passed, numbered, and no escape sentence.
    ``summary``: the passages are one lecture's, in its order, to be summed up. ``compare``:
    the two subjects the question compares, each to be said from its passage."""
    p = _GATED_PROMPTS[lang]
    blocks = []
    for n, ps in enumerate(passages, start=1):
        span = f"{fmt_clock(ps.start)}–{fmt_clock(ps.end)}"
        head = p["segment"].format(n=n, title=ps.hit.title or ps.hit.lecture_id, span=span)
        blocks.append(f"{head}\n{ps.text}")
    reminder = (p["summary_reminder"] if summary else
                p["compare_reminder"].format(a=compare[0], b=compare[1]) if compare else
                p["reminder"])
    user = "\n\n".join([p["segments"], *blocks, p["question"].format(question=question.strip()),
                        reminder])
    system = p["system"].format(rule=p["summary_rule" if summary else "rule"])
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


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


@dataclass
class Answerer:
    """Answers questions over retrieved hits with one LLM client, by the chosen strategy."""

    llm: Any
    embed: EmbedFn | None = None
    cues_for: Callable[[Hit], Sequence[Cue]] = lambda _hit: ()
    term_coverage: Callable[[str, Sequence[str]], float] | None = None
    """The index's idf-weighted term coverage (``Retriever.term_coverage``), a gate signal."""
    lecture_windows: Callable[[str], Sequence[Hit]] = lambda _lecture: ()
    """Every window of a lecture, in time order (``Retriever.lecture_windows``): a summary's."""
    rare_word: Callable[[str], bool] | None = None
    """Whether the index's lectures say a word seldom (``Retriever.said_in_few_lectures``):
    such a frequent word still counts in ``term_cov``."""
    strategy: Strategy = "gated"
    gate: Gate = field(default_factory=Gate)
    candidates: int = 3
    focus_windows: int = 6
    passage_chars: int = PASSAGE_CHARS
    max_passages: int = 2
    context_chars: int = CONTEXT_CHARS
    max_tokens: int = MAX_TOKENS
    gated_max_tokens: int = 160
    postcheck: PostCheck = "mark"
    min_new_words: int = MIN_NEW_WORDS
    course: CourseCheck | None = None
    """Declines questions about the course itself before the gate (None: no such check)."""
    quote_min_p: float = QUOTE_MIN_P
    """``quote``: the LLM's P(the quote answers) from which it is the answer (``app.quote``)."""
    quote_checks: int = 1
    """``quote``: how many of the best passages' quotes the LLM reads."""
    quote_span: Literal["sentences", "passage"] = "passage"
    """``quote``: the best run of sentences of a passage, or the focused passage whole."""
    mentions: bool = True
    """The focus, the evidence check and the gate read the question without its mentions of
    the lecture or the teacher (``subject``); the course check and the generator read it whole."""

    @classmethod
    def from_settings(cls, settings: Any, llm: Any, retriever: Any = None,
                      embed: EmbedFn | None = None, embed_model_id: str | None = None
                      ) -> Answerer:
        cues_for = retriever.cues_for if retriever is not None else (lambda _hit: ())
        course = CourseCheck.load(getattr(settings.answer, "course_file", None))
        if course is not None and course.model_id != embed_model_id:
            if embed is not None:
                log.warning("course-question check off: it reads %s vectors, the index uses %s",
                            course.model_id, embed_model_id)
            course = None
        return cls(
            llm=llm, embed=embed, cues_for=cues_for, strategy=settings.answer.strategy,
            term_coverage=getattr(retriever, "term_coverage", None),
            rare_word=getattr(retriever, "said_in_few_lectures", None),
            lecture_windows=getattr(retriever, "lecture_windows", lambda _lecture: ()),
            gate=Gate.load(settings.answer.gate_file), candidates=settings.answer.gate_candidates,
            focus_windows=settings.answer.focus_windows,
            passage_chars=settings.answer.passage_chars, max_passages=settings.answer.passages,
            context_chars=settings.llm.context_chars, max_tokens=settings.llm.max_tokens,
            gated_max_tokens=settings.answer.gated_max_tokens, postcheck=settings.answer.postcheck,
            min_new_words=settings.answer.min_new_words, course=course,
            mentions=settings.search.query_rewrite,
            quote_min_p=settings.answer.quote_min_p, quote_checks=settings.answer.quote_checks,
            quote_span=settings.answer.quote_span,
        )

    def subject(self, query: str) -> str:
        """What the focus, the evidence check and the gate read of ``query``: without its
        mentions of the lecture, the video or the teacher ("o prof disse na aula que ...",
        ``corpus.mentions.strip_mentions``), which are not in what the lecture says there."""
        return strip_mentions(query) if self.mentions else query

    def candidates_for(self, question: str, hits: Sequence[Hit]) -> list[Passage]:
        """The passages the evidence check reads: the top ``focus_windows`` windows focused to
        their sentences closest to the question, in the retriever's order without repeats
        (``rank_passages``), the first few."""
        passages = focus(question, hits[: max(1, self.focus_windows)], self.cues_for, self.embed,
                         chars=self.passage_chars)
        return rank_passages(passages)[: max(1, self.candidates)]

    def features(self, query: str, passages: Sequence[Passage], probs: Sequence[float | None],
                 hits: Sequence[Hit], *, every_signal: bool = False) -> dict[str, float]:
        """The gate's signals for ``query`` (``app.evidence.features``) over this index.
        ``idf_cov`` is measured when the gate reads it or ``every_signal`` (fitting): the
        index's word frequencies are counted on first use (about 2 s for 1,700 windows)."""
        wanted = every_signal or self.reads_idf
        return features(query, passages, probs, hits,
                        self.term_coverage if wanted else None, self.rare_word)

    def gate_signals(self, query: str, hits: Sequence[Hit], ask: Any = None, *,
                     every_signal: bool = False
                     ) -> tuple[list[Passage], list[float | None], dict[str, float]]:
        """The passages, their evidence-check P (None each without ``ask``, a first-token
        reader) and the gate's signals for ``query`` over ``hits``, read as ``_gated`` reads
        them: without the question's mentions of the lecture or the teacher (``subject``).
        What ``aula fit-gate`` and the gate benches measure."""
        about = self.subject(query)
        passages = self.candidates_for(about, hits)
        probs: list[float | None] = (check_passages(ask, about, passages) if ask is not None
                                     else [None] * len(passages))
        return passages, probs, self.features(about, passages, probs, hits,
                                              every_signal=every_signal)

    @property
    def reads_idf(self) -> bool:
        """Whether the gate weighs ``idf_cov`` (the index's word counts are then needed)."""
        return self.gate.reads_idf

    def run(self, question: str, hits: Sequence[Hit], *, query: str | None = None) -> Reply:
        """The final reply, without the intermediate events."""
        final: Reply | None = None
        for event in self.events(question, hits, query=query):
            if isinstance(event, Reply):
                final = event
        assert final is not None
        return final

    def events(self, question: str, hits: Sequence[Hit], *, query: str | None = None
               ) -> Iterator[Moments | str | Reply]:
        """The reply to ``question`` from ``hits``, as events. ``query``: what ``hits`` were
        searched with, when not the question itself (its translation into the lectures'
        language): the evidence check reads the passages against it, and the answer is
        written in the question's own language."""
        lang = detect_language(question)
        if asks_nothing(question):
            # "?", "pq": nothing to search for, so no moments and nothing generated
            why = "no subject in the question"
            yield Moments([], False, why)
            yield Reply(question, lang, self.strategy, [],
                        Answer(NO_SUBJECT[lang], [], False, getattr(self.llm, "model_id", ""),
                               lang), False, reason=why)
            return
        if self.strategy == "direct":
            yield from self._direct(question, hits, lang)
        else:
            yield from self._gated(question, hits, lang, query or question)

    # --- direct ----------------------------------------------------------------------------
    def _direct(self, question: str, hits: Sequence[Hit], lang: Lang
                ) -> Iterator[Moments | str | Reply]:
        moments = [_hit_moment(h) for h in hits]
        yield Moments(moments, None if hits else False)
        t0 = time.perf_counter()
        final: Answer | None = None
        try:
            for piece in answer_stream(question, hits, self.llm, self.embed,
                                       max_tokens=self.max_tokens, budget=self.context_chars):
                if isinstance(piece, str):
                    yield piece
                else:
                    final = piece
        except LLMError as exc:
            yield self._failed(question, lang, "direct", moments, exc,
                               {"generate": time.perf_counter() - t0})
            return
        assert final is not None
        kept = without_foreign_links(final.text, [h.text for h in hits])
        if kept != final.text:
            text, citations = cite(kept, hits)
            final = replace(final, text=text, citations=citations)
        yield Reply(question, lang, "direct", moments, final, final.covered,
                    timings=dict(final.timings), contexts=[h.text for h in hits])

    # --- gated -----------------------------------------------------------------------------
    def _gated(self, question: str, hits: Sequence[Hit], lang: Lang, query: str
               ) -> Iterator[Moments | str | Reply]:
        timings: dict[str, float] = {}
        if not hits:
            yield Moments([], False, "no segments")
            yield Reply(question, lang, self.strategy, [], self._declined(lang), False,
                        reason="no segments", timings=timings)
            return
        where = asks_where(question)
        summary = not where and asks_summary(question)
        if summary:  # "resume o vídeo sobre bitcoin" is read as its subject (/ask searched it)
            query = summary_topic(query)
        if self.course is not None and self.embed is not None:
            t0 = time.perf_counter()
            # "em qual aula ele explica X?" is read as "X?": "aula" is a course word too
            topic = where_topic(query) if where else query
            about_course, p = self.course.is_course(self.embed([topic], "query")[0], topic)
            timings["course_check"] = time.perf_counter() - t0
            if about_course:
                moments = [_hit_moment(h) for h in hits[: max(1, self.candidates)]]
                why = f"course question P={p:.2f} >= {self.course.threshold:.2f}"
                yield Moments(moments, False, why)
                yield Reply(question, lang, self.strategy, moments,
                            Answer(COURSE_QUESTION[lang], [], False,
                                   getattr(self.llm, "model_id", ""), lang),
                            False, confidence=round(p, 4), reason=why, timings=timings)
                return
        about = self.subject(query)
        t0 = time.perf_counter()
        passages = self.candidates_for(about, hits)
        timings["focus"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        try:
            probs: list[float | None] = (
                check_passages(self.llm.first_token, about, passages)
                if self.gate.uses_llm else [None] * len(passages))
        except LLMError as exc:
            moments = [_moment(p, None) for p in passages]
            yield Moments(moments, None, "evidence check failed")
            timings["check"] = time.perf_counter() - t0
            yield self._failed(question, lang, self.strategy, moments, exc, timings)
            return
        timings["check"] = time.perf_counter() - t0
        feats = self.features(about, passages, probs, hits)
        # a comparison reads one passage more: besides the first hit, each side's best
        # (``Services.search`` brings them up)
        sides = None if summary else (compared_subjects(question) or compared_subjects(about))
        budget = self.max_passages + (sides is not None)
        decision = self.gate.decide(probs, [h.score for h in hits], budget, feats)
        windows: list[Hit] = []
        if summary:
            decision, windows = self.summary_decision(about, hits, decision)
        known = [-1.0 if p is None else p for p in probs]
        rest = [i for i in sorted(range(len(passages)), key=lambda i: -known[i])
                if i not in decision.order]
        moments = [_moment(passages[i], probs[i]) for i in [*decision.order, *rest]]
        chosen = [passages[i] for i in decision.order]
        if summary and decision.covered:  # the lecture's own windows, over its length
            chosen = focus(about, spread(windows, SUMMARY_PASSAGES), self.cues_for, self.embed,
                           chars=self.passage_chars)
            moments = [_moment(p, None) for p in chosen]
        yield Moments(moments, decision.covered, decision.reason)
        if not decision.covered:
            sure = decision.p_covered if decision.p_covered is not None else decision.best_p
            conf = None if sure is None else round(1.0 - sure, 4)
            yield Reply(question, lang, self.strategy, moments, self._declined(lang), False,
                        confidence=conf, reason=decision.reason, timings=timings)
            return
        if where:
            yield from self._where(question, lang, chosen, moments, decision, timings)
            return
        if self.strategy == "quote" and not summary and self.embed is not None:
            yield from self._quoted(question, lang, about, passages, moments, decision, timings)
            return
        messages = gated_messages(question, chosen, lang, summary=summary,
                                  compare=sides if len(chosen) > 1 else None)
        t0 = time.perf_counter()
        first: float | None = None
        parts: list[str] = []
        try:
            for delta in self.llm.stream(messages, temperature=0.0,
                                         max_tokens=self.gated_max_tokens * (2 if summary else 1)):
                if first is None:
                    first = time.perf_counter() - t0
                parts.append(delta)
                yield delta
        except LLMError as exc:
            timings["generate"] = time.perf_counter() - t0
            yield self._failed(question, lang, self.strategy, moments, exc, timings)
            return
        timings["generate"] = time.perf_counter() - t0
        timings["first_token"] = first or 0.0
        as_hits = [p.as_hit() for p in chosen]
        # A citation names the passage the generator read; its link opens where the
        # supporting sentence starts.
        cite_hits = [replace(h, answer_start=p.answer_start)
                     for h, p in zip(as_hits, chosen, strict=True)]
        raw = "".join(parts).strip()
        text, citations = self._cited(raw, cite_hits)
        quoted: int | None = None
        if self.min_new_words > 0:
            # an answer that only hands the question back gets the lecture's own words
            made = with_substance(text, f"{question} {query}", [p.text for p in chosen], lang,
                                  min_new=self.min_new_words)
            if made.text != text:  # its sentences are cited already, or the lecture's quoted
                text, citations = self._cited(made.text, cite_hits, attach=False)
                quoted = made.quoted
        t0 = time.perf_counter()
        checks: list[SentenceCheck] = []
        if self.postcheck != "off":
            try:
                checked, checks = self._postcheck(text, chosen)
            except LLMError as exc:  # the answer stands; it is just not checked
                log.warning("post-check failed: %s", exc)
            else:
                if checked != text:  # a citation moved, or an uncited sentence got one
                    text, citations = checked, build_citations(cited_numbers(checked),
                                                               cite_hits)
        timings["postcheck"] = time.perf_counter() - t0
        if self.postcheck == "drop" and any(c.supported is False for c in checks):
            text = _drop_unsupported(text, checks)
            text, citations = cite(text, cite_hits)
        kept = without_foreign_links(text, [p.text for p in chosen])
        if kept != text:
            text, citations = cite(kept, cite_hits)
        answer = Answer(text, citations, True, self.llm.model_id, lang, dict(timings),
                        len(chosen))
        readable = [c.p for c in checks if c.p is not None]
        conf = (decision.p_covered if decision.p_covered is not None
                else decision.best_p) or 0.0
        if summary:  # covered by the lecture's own words: the gate's P on a bare topic says
            conf = 1.0  # little ("fourier", 0.26), the post-check what the summary says
        if readable:
            conf *= statistics.fmean(readable)
        yield Reply(question, lang, self.strategy, moments, answer, True, confidence=round(conf, 4),
                    sentences=checks, reason=decision.reason, timings=timings,
                    contexts=[p.text for p in chosen], quoted=quoted)

    def summary_decision(self, topic: str, hits: Sequence[Hit], decision: Decision
                         ) -> tuple[Decision, list[Hit]]:
        """A summary request's decision (``app.summary.summary_decision``, in place of the
        gate's ``decision``) and the windows of the lecture it sums up, in time order: what
        ``_gated`` does with such a request before generating, and what
        ``bench/summary_requests.py`` measures."""
        lecture = summary_lecture([h.lecture_id for h in hits], [h.title for h in hits], topic)
        windows = list(self.lecture_windows(lecture)) or sorted(
            (h for h in hits if h.lecture_id == lecture), key=lambda h: h.start)
        return summary_decision(decision, topic, lecture, [w.text for w in windows],
                                windows[0].title if windows else ""), windows

    def _cited(self, text: str, hits: Sequence[Hit], *, attach: bool = True
               ) -> tuple[str, list[Any]]:
        """``text`` with its markers cleaned and, with ``attach``, its uncited sentences cited by
        their closest passage (``app.citations.cite``), and its citations. Without ``attach``
        (the answer after ``with_substance``, whose quote of the lecture ends with its one
        marker) the sentences inside a quote stay as the lecture said them.

        The generator read only these passages, so an answer left with no marker at all came
        from them: each sentence is then cited by the passage it is closest to, with no cosine
        floor (the one passage, when there is one), and the post-check reads it against that
        passage. Before, "pq a serie harmonica diverge ..." got a paragraph quoting a passage
        and no link: its only marker stood before a passage heading it copied ("porque [1]
        Aula: Série Taylor (19:56–21:53) diz que ..."), which goes with the heading."""
        text, citations = cite(text, hits, self.embed if attach else None)
        if cited_numbers(text):
            return text, citations
        if len(hits) == 1:
            return cite(_cite_all(text), hits)
        if self.embed is not None:
            return cite(text, hits, self.embed, threshold=-1.0)
        return text, citations

    def _quoted(self, question: str, lang: Lang, about: str, passages: Sequence[Passage],
                moments: list[Moment], decision: Decision, timings: dict[str, float]
                ) -> Iterator[str | Reply]:
        """The ``quote`` strategy's answer (``app.quote``): the first ``quote_checks`` passages
        (the gate's choice first), each whole or its best run of sentences (``quote_span``),
        the one the LLM reads as answering best quoted with its second and led by one generated
        sentence that the quote confirms; when none answers with P ``quote_min_p``, the moments
        and a line saying so."""
        from eval.claims import STRICT_USER, SUPPORT_AT, claim_messages, yes_probability

        assert self.embed is not None
        model = getattr(self.llm, "model_id", "")
        order = [*decision.order, *(i for i in range(len(passages)) if i not in decision.order)]
        t0 = time.perf_counter()
        order = order[: self.quote_checks]  # only the quotes the LLM will read are made
        found = (best_runs(about, [passages[i] for i in order], self.embed)
                 if self.quote_span == "sentences" else
                 [whole_passage(n, passages[i]) for n, i in enumerate(order)])
        quotes = [replace(q, passage=order[q.passage]) for q in found]
        try:
            ps = check_texts(self.llm.first_token, about, [q.text for q in quotes])
        except LLMError as exc:
            timings["quote"] = time.perf_counter() - t0
            yield self._failed(question, lang, self.strategy, moments, exc, timings)
            return
        timings["quote"] = time.perf_counter() - t0
        quotes = [replace(q, p=p) for q, p in zip(quotes, ps, strict=True)]
        best: Quote | None = max(quotes, key=lambda q: q.p or 0.0, default=None)
        read = ", ".join(f"{q.p or 0.0:.2f}" for q in quotes)
        if best is None or (best.p or 0.0) < self.quote_min_p:
            why = f"{decision.reason}; no sentence answers: P=[{read}] < {self.quote_min_p:.2f}"
            yield Reply(question, lang, self.strategy, moments,
                        Answer(NOT_FOUND[lang], [], False, model, lang), False,
                        confidence=round(1.0 - (best.p or 0.0) if best else 1.0, 4),
                        reason=why, timings=timings)
            return
        passage = passages[best.passage]
        t0 = time.perf_counter()
        lead: str | None = None
        lead_p: float | None = None
        try:
            raw = "".join(self.llm.stream(lead_messages(question, best.text, lang),
                                          temperature=0.0, max_tokens=LEAD_MAX_TOKENS))
            said = first_sentence(raw)
            # a lead that hands the question back ("Sim, o yield desfaz as operações") adds
            # nothing the quote does not say better: it is not shown
            if (len(said) >= 12 and len(new_words(said, question)) >= self.min_new_words
                    and not foreign_links(said, [best.text])):
                block = passage_block(best.text)
                got, probs = self.llm.first_token(claim_messages(said, block))
                lead_p = yes_probability(got, probs)
                if lead_p is not None and lead_p >= SUPPORT_AT:
                    # and the stricter reading, which orders right and wrong claims better
                    got, probs = self.llm.first_token(claim_messages(said, block, STRICT_USER))
                    strict = yes_probability(got, probs)
                    lead = said if strict is not None and strict >= LEAD_STRICT_AT else None
                if lead is not None:
                    best = placed(best, lead)
        except LLMError as exc:  # the quote stands alone
            log.warning("lead sentence failed: %s", exc)
        timings["generate"] = time.perf_counter() - t0
        hit = replace(passage.as_hit(), start=best.start, end=max(best.end, best.start + 1),
                      text=best.text, answer_start=best.start)
        text = quote_answer(lead, best, hit.title or hit.lecture_id, lang)
        yield text
        citations = build_citations([1], [hit])
        url = video_link(hit.url, best.start)
        checks = [SentenceCheck(text.split("\n\n", 1)[0], [1], None if lead_p is None
                                else round(lead_p, 4), True, None, best.start, url)
                  ] if lead else []
        answer = Answer(text, citations, True, model, lang, dict(timings), 1)
        yield Reply(question, lang, self.strategy, moments, answer, True,
                    confidence=round(best.p or 0.0, 4), sentences=checks,
                    reason=f"{decision.reason}; quote P=[{read}]"
                           f"{'' if lead else '; lead not confirmed'}",
                    timings=timings, contexts=[best.text])

    def _where(self, question: str, lang: Lang, chosen: Sequence[Passage],
               moments: list[Moment], decision: Decision, timings: dict[str, float]
               ) -> Iterator[str | Reply]:
        """A question that asks which lecture or minute (``app.locate``) gets the moment,
        named and linked, and how its passage begins: nothing generated, nothing to check."""
        text = where_answer(chosen, lang)
        yield text
        cite_hits = [replace(p.as_hit(), answer_start=p.answer_start) for p in chosen]
        text, citations = cite(text, cite_hits)
        answer = Answer(text, citations, True, getattr(self.llm, "model_id", ""), lang,
                        dict(timings), len(chosen))
        sure = decision.p_covered if decision.p_covered is not None else decision.best_p
        yield Reply(question, lang, self.strategy, list(moments), answer, True,
                    confidence=None if sure is None else round(sure, 4),
                    reason=f"{decision.reason}; asks where: the moment, nothing generated",
                    timings=timings, contexts=[p.text for p in chosen])

    def _postcheck(self, text: str, passages: Sequence[Passage]
                   ) -> tuple[str, list[SentenceCheck]]:
        """Each answer sentence against the passages it cites (first-token P(SIM)); one that
        cites none, against the passages the generator read until one confirms it (the
        generator often leaves its first, central sentence uncited: "O bitcoin evita gasto
        duplo porque ..."). The lecture's words it quotes are not checked.

        A sentence its cited passages do not confirm is read against the other passages, in
        order, and cites the first that confirms it instead: the small generator sometimes
        numbers the wrong passage (the demo's "a mais usada hoje é a ReLU [2]" linked to the
        minute about overfitting while passage 1 says it), and the student follows the link.
        Only a clear case moves: that passage confirms it by ``MOVE_MARGIN`` more than the
        cited one and says more of its words (``shared_words``); the 1.5B model's P of two
        passages that both touch the sentence differ by noise (0.80 against 0.83 on the
        answer bench). An uncited sentence that a passage confirms cites it ("every claim
        cited": the generator left 1 of 2 sentences of "o que é o gradiente descendente ...?"
        uncited, and a passage confirmed it at P 0.99). Returns the text with such citations
        moved or added, and the checks."""
        from eval.claims import SUPPORT_AT, claim_messages, yes_probability

        def ask(block: str, claim: str) -> float | None:
            reply, probs = self.llm.first_token(claim_messages(claim, block))
            return yes_probability(reply, probs)

        out: list[SentenceCheck] = []
        fixes: list[tuple[int, int, str]] = []
        quotes = quoted_spans(text)
        for a, b in sentence_spans(text):
            if any(a < qb and qa < b for qa, qb in quotes):
                continue  # the lecture's own words, quoted: nothing to confirm
            sentence = text[a:b]
            cites = [n for n in cited_numbers(sentence) if 1 <= n <= len(passages)]
            was: list[int] | None = None
            claim = squash(MARKER_RE.sub("", sentence))
            if len(claim) < 12 or not passages:
                out.append(SentenceCheck(sentence, cites, None, None))
                continue
            if cites:
                texts = [passages[n - 1].text for n in cites]
                block = passage_block(texts[0]) if len(texts) == 1 else numbered(
                    texts, sum(len(t) for t in texts) + 50)
                p = ask(block, claim)
                if p is None or p < SUPPORT_AT:
                    said = shared_words(claim, texts)
                    for n, q in enumerate(passages, 1):
                        if n in cites:
                            continue
                        x = ask(passage_block(q.text), claim)
                        if (x is not None and x >= SUPPORT_AT and x >= (p or 0.0) + MOVE_MARGIN
                                and shared_words(claim, [q.text]) > said):
                            moved = repoint(sentence, [n])
                            fixes.append((a, b, moved))
                            sentence, cites, p, was = moved, [n], x, cites
                            break
            else:  # each passage on its own (the server's cache has read each already),
                # until one confirms it: one call for most sentences, every passage for a
                # sentence none confirms. The one that does gets the citation: the student
                # has a link for it, and the claim a source.
                ps: list[float] = []
                for n, q in enumerate(passages, 1):
                    x = ask(passage_block(q.text), claim)
                    if x is not None:
                        ps.append(x)
                        if x >= SUPPORT_AT:
                            cited = cite_also(sentence, [n])
                            fixes.append((a, b, cited))
                            sentence, cites, was = cited, [n], []
                            break
                p = max(ps) if ps else None
            at, url = _said(claim, passages, cites)
            out.append(SentenceCheck(sentence, cites, None if p is None else round(p, 4),
                                     None if p is None else p >= SUPPORT_AT, was, at, url))
        for a, b, moved in reversed(fixes):
            text = text[:a] + moved + text[b:]
        return text, out

    def _declined(self, lang: Lang) -> Answer:
        return Answer(DECLINED[lang], [], False, getattr(self.llm, "model_id", ""), lang)

    def _failed(self, question: str, lang: Lang, strategy: Strategy, moments: list[Moment],
                exc: Exception, timings: dict[str, float]) -> Reply:
        # the reply may reach anyone: it says what failed, the log says where
        log.warning("answer failed (%s): %s", strategy, exc)
        public = exc.public if isinstance(exc, LLMError) else "the language model failed"
        return Reply(question, lang, strategy, moments, None, None,
                     note=FAILED[lang].format(why=_why(exc, lang)), error=public,
                     reason="llm failed", timings=timings)


MOVE_MARGIN = 0.1
"""How much more another passage must confirm a sentence than the one it cites to take its
citation (``Answerer._postcheck``)."""


def shared_words(sentence: str, texts: Sequence[str]) -> float:
    """The share of ``sentence``'s content words (BM25's: stems, accents folded, stop words
    dropped) that ``texts`` say."""
    words = set(tokenize(sentence))
    if not words:
        return 0.0
    said = {w for t in texts for w in tokenize(t)}
    return len(words & said) / len(words)


def _said(claim: str, passages: Sequence[Passage], cites: Sequence[int]
          ) -> tuple[float | None, str]:
    """Where the first cited passage says ``claim``, and the video link there."""
    if not cites:
        return None, ""
    passage = passages[cites[0] - 1]
    at = said_at(claim, passage)
    return (None, "") if at is None else (at, video_link(passage.hit.url, at))


def _cite_all(text: str) -> str:
    """A one-passage answer the model left uncited: each sentence comes from passage 1."""
    out = text
    for a, b in reversed(sentence_spans(text)):
        body = out[a:b].rstrip(".!?:;")
        out = out[:a] + f"{body} [1]{out[a + len(body):b]}" + out[b:]
    return out


def without_foreign_links(text: str, passages: Sequence[str]) -> str:
    """``text`` without the sentences that carry a link, an e-mail address or a command that
    the passages they cite do not say (``app.outlinks``): a transcript, or a prompt, telling
    students to log in somewhere or run something does not reach them through the answer.
    A sentence citing nothing is read against no passage. The lecture's quoted words stay."""
    quotes = quoted_spans(text)
    out, dropped = text, False
    for a, b in reversed(sentence_spans(text)):
        if any(a < qb and qa < b for qa, qb in quotes):
            continue
        sentence = text[a:b]
        cited = [passages[n - 1] for n in cited_numbers(sentence) if 1 <= n <= len(passages)]
        foreign = foreign_links(MARKER_RE.sub("", sentence), cited)
        if foreign:
            log.warning("answer sentence dropped: it carries %s, which its passage does not say",
                        ", ".join(foreign))
            out, dropped = out[:a] + out[b:], True
    return re.sub(r"[ \t]{2,}", " ", out).strip() if dropped else text


def _drop_unsupported(text: str, checks: Sequence[SentenceCheck]) -> str:
    """``text`` without the sentences the post-check found unsupported; everything else
    (a quote of the lecture, which is not checked, included) stays as it was."""
    for c in checks:
        if c.supported is False:
            text = text.replace(c.text, "", 1)
    return re.sub(r"[ \t]{2,}", " ", re.sub(r"[ \t]+\n", "\n", text)).strip()
