"""What a student gets for a question: the best moments first, then a cited answer or a plain
"not covered", never a blank page.

The stages, in order, each a module of this package with a typed result the next one reads:
``question`` (the text read once: ``Question``) → ``retrieve`` (``Retrieved``) → ``decide``
(course check, focus, evidence check, gate: ``Decided``) → one of ``generate`` (the gated
answer), ``quoting`` (the lecture's own words) or ``locate`` (where it is said) → ``citations``
→ ``check`` (each sentence against the passage it cites) → ``replies.Reply``.

Strategies (``Settings.answer.strategy``):

- ``auto`` (default): ``quote`` on the embedded model, ``gated`` on a configured endpoint.
- ``gated``: coverage is decided before generation; covered, the generator gets only the
  passages that passed, with no escape sentence; not covered, the reply says so and lists the
  closest moments.
- ``quote``: the same decision, then the lecture's own words quoted (``answer.quoting``).
- ``direct`` (for a strong remote model): the top windows go to the generator, which may answer
  with the fixed not-covered sentence (``answer.direct``).

``Pipeline.events`` yields, in order: ``Moments`` (as soon as the decision is made), answer text
deltas (``str``), then the final ``Reply``. An LLM that is down, slow or gives no logprobs
degrades to the evidence-only reply with the reason in ``Reply.error``; nothing raises.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from answer.check import drop_unsupported, postcheck, without_foreign_links
from answer.citations import build_citations, cite, cite_all, cited_numbers
from answer.course import CourseCheck
from answer.decide import Decided, Decider
from answer.direct import MAX_TOKENS, direct_events
from answer.evidence import Decision, Gate, default_gate
from answer.generate import Draft, write
from answer.locate import where_answer
from answer.question import Question, understand
from answer.quote import QuoteSettings
from answer.quoting import Quoter
from answer.replies import (
    COURSE_QUESTION,
    NO_SUBJECT,
    Answer,
    Moments,
    Reply,
    SentenceCheck,
    Strategy,
    declined,
    failed,
    hit_moment,
    passage_moment,
)
from answer.retrieve import Retrieved
from answer.substance import MIN_NEW_WORDS, with_substance
from app.llm import LLMError
from corpus.context import CONTEXT_CHARS, EmbedFn, Passage
from corpus.mentions import strip_mentions
from corpus.models import Hit

log = logging.getLogger(__name__)

PostCheck = Literal["mark", "drop", "off"]


def resolved_strategy(strategy: str, base_url: str | None) -> Strategy:
    """``auto``: the lecture's words quoted on the embedded model (no ``base_url``), whose own
    sentences are too often wrong; a generated answer on a configured endpoint."""
    if strategy == "auto":
        return "quote" if base_url is None else "gated"
    assert strategy in ("gated", "direct", "quote"), strategy
    return strategy  # type: ignore[return-value]


SAID_IN_LECTURES = "said in the lectures"
"""In a reply's ``reason`` after "course question P=…": the course check flagged it, and the
gate found the lectures say it (``Pipeline.lectures_say``)."""

@dataclass
class Pipeline:
    """Answers questions over retrieved hits with one LLM client, by the chosen strategy."""

    llm: Any
    embed: EmbedFn | None = None
    decider: Decider = field(default_factory=lambda: Decider(None))
    """The course check, the focus, the evidence check and the gate (``answer.decide``)."""
    strategy: Strategy = "gated"
    context_chars: int = CONTEXT_CHARS
    max_tokens: int = MAX_TOKENS
    gated_max_tokens: int = 160
    postcheck: PostCheck = "mark"
    min_new_words: int = MIN_NEW_WORDS
    quote: QuoteSettings = field(default_factory=QuoteSettings)
    """The quote strategy's settings (``answer.quote.QuoteSettings``)."""
    question_logprobs: Any = None
    """An in-process model's log-probabilities of a given reply (``app.lm_scorer``): the quote's
    likelihood confidence (``QuoteSettings.confidence``), set by the service when it reads one."""
    mentions: bool = True
    """The question is read with the rewriter (framing, mentions of the lecture or the teacher
    left out of what the gate reads): ``Settings.search.query_rewrite``."""

    @classmethod
    def from_settings(cls, settings: Any, llm: Any, retriever: IndexReads | None = None,
                      embed: EmbedFn | None = None, embed_model_id: str | None = None
                      ) -> Pipeline:
        a = settings.answer
        gate, adapted = _gate(gate_file(settings), retriever)
        r = retriever  # None: a pipeline answering given hits, with no index to read
        decider = Decider(
            llm, embed, (lambda _hit: ()) if r is None else r.cues_for,
            None if r is None else r.term_coverage,
            (lambda _lecture: ()) if r is None else r.lecture_windows,
            None if r is None else r.said_in_few_lectures, gate,
            _course_check(a.course_file, embed, embed_model_id), a.gate_candidates,
            a.focus_windows, a.passage_chars, a.passages, a.focus_reach, adapted,
            None if r is None else r.numbered_lecture)
        quote = QuoteSettings.of(a)
        return cls(
            llm=llm, embed=embed, decider=decider,
            strategy=resolved_strategy(a.strategy, settings.llm.base_url),
            context_chars=settings.llm.context_chars, max_tokens=settings.llm.max_tokens,
            gated_max_tokens=a.gated_max_tokens, postcheck=a.postcheck,
            min_new_words=a.min_new_words, mentions=settings.search.query_rewrite,
            quote=quote)

    @property
    def gate(self) -> Gate:
        assert self.decider.gate is not None
        return self.decider.gate

    @property
    def course(self) -> CourseCheck | None:
        return self.decider.course

    def understand(self, text: str, lectures: str = "pt") -> Question:
        """``text`` read once, as this pipeline reads questions."""
        return understand(text, rewrite=self.mentions, lectures=lectures)  # type: ignore[arg-type]

    def subject(self, query: str) -> str:
        """``query`` without its mentions of the lecture or the teacher (with the rewriter)."""
        return strip_mentions(query) if self.mentions else query

    def candidates_for(self, about: str, hits: Sequence[Hit]) -> list[Passage]:
        return self.decider.candidates_for(about, hits)

    def features(self, about: str, passages: Sequence[Passage], probs: Sequence[float | None],
                 hits: Sequence[Hit], *, every_signal: bool = False) -> dict[str, float]:
        return self.decider.features(about, passages, probs, hits, every_signal=every_signal)

    def gate_signals(self, query: str, hits: Sequence[Hit], ask: Any = None, *,
                     every_signal: bool = False
                     ) -> tuple[list[Passage], list[float | None], dict[str, float]]:
        """The passages, their evidence-check P (None each without ``ask``, a first-token
        reader) and the gate's signals for ``query`` over ``hits``, read as the decide stage
        reads them: what ``aula fit-gate`` and the gate benches measure."""
        from answer.evidence import check_passages

        about = self.subject(query)
        passages = self.candidates_for(about, hits)
        probs: list[float | None] = (check_passages(ask, about, passages) if ask is not None
                                     else [None] * len(passages))
        return passages, probs, self.features(about, passages, probs, hits,
                                              every_signal=every_signal)

    def summary_decision(self, topic: str, hits: Sequence[Hit], decision: Any) -> Any:
        return self.decider.summary_decision(topic, hits, decision)

    @property
    def reads_idf(self) -> bool:
        """Whether the gate weighs ``idf_cov`` (the index's word counts are then needed)."""
        return self.gate.reads_idf

    def run(self, question: Question | str, hits: Sequence[Hit]) -> Reply:
        """The final reply, without the intermediate events."""
        final: Reply | None = None
        for event in self.events(question, hits):
            if isinstance(event, Reply):
                final = event
        assert final is not None
        return final

    def reply_to(self, found: Retrieved) -> Reply:
        """The final reply to a question as the search stage found it."""
        return self.run(found.question, self.reads(found))

    def reads(self, found: Retrieved) -> list[Hit]:
        """The hits the answer reads: the ``k`` shown for ``direct``, else the decision's."""
        return found.hits if self.strategy == "direct" else found.read

    def events(self, question: Question | str, hits: Sequence[Hit]
               ) -> Iterator[Moments | str | Reply]:
        """The reply to ``question`` from ``hits``, as events."""
        q = self.understand(question) if isinstance(question, str) else question
        if q.asks == "nothing":
            # "?", "pq": nothing to search for, so no moments and nothing generated
            why = "no subject in the question"
            yield Moments([], False, why)
            yield Reply(q.text, q.language, self.strategy, [],
                        Answer(NO_SUBJECT[q.language], [], False, self._model, q.language),
                        False, reason=why)
        elif self.strategy == "direct":
            yield from direct_events(q, hits, self.llm, self.embed, max_tokens=self.max_tokens,
                                     budget=self.context_chars)
        else:
            yield from self._gated(q, hits)

    @property
    def _model(self) -> str:
        return getattr(self.llm, "model_id", "") or ""

    def _gated(self, q: Question, hits: Sequence[Hit]) -> Iterator[Moments | str | Reply]:
        timings: dict[str, float] = {}
        if not hits:
            yield Moments([], False, "no segments")
            yield Reply(q.text, q.language, self.strategy, [], declined(q.language, self._model),
                        False, reason="no segments", timings=timings)
            return
        refused = self._course_question(q, hits, timings)
        if refused is not None:
            decided = yield from self._said_of_the_course(q, hits, timings, refused)
        else:
            decided = yield from self._decided(q, hits, timings)
        if decided is None:
            return
        decision, moments = decided.decision, decided.moments
        if not decision.covered:
            sure = decision.sure
            yield Reply(q.text, q.language, self.strategy, moments,
                        declined(q.language, self._model), False,
                        confidence=None if sure is None else round(1.0 - sure, 4),
                        reason=decision.reason, timings=timings)
        elif q.where:
            yield from self._where(q, decided, timings)
        elif self.strategy == "quote" and not q.summary and self.embed is not None:
            quoter = Quoter(self.llm, self.embed, self.quote, self.min_new_words,
                            self.question_logprobs, self.decider.cues_for)
            yield from quoter.events(q, decided.passages, moments, decision, timings,
                                     self.strategy)
        else:
            yield from self._written(q, decided, timings)

    def _course_question(self, q: Question, hits: Sequence[Hit], timings: dict[str, float]
                         ) -> Reply | None:
        """The reply to a question about the course itself (exams, grades), else None."""
        t0 = time.perf_counter()
        read = self.decider.about_course(q)
        if read is None:
            return None
        timings["course_check"] = time.perf_counter() - t0
        about_course, p = read
        if not about_course:
            return None
        assert self.course is not None
        moments = [hit_moment(h) for h in hits[: max(1, self.decider.candidates)]]
        return Reply(q.text, q.language, self.strategy, moments,
                     Answer(COURSE_QUESTION[q.language], [], False, self._model, q.language),
                     False, confidence=round(p, 4),
                     reason=f"course question P={p:.2f} >= {self.course.threshold:.2f}",
                     timings=timings)

    def _said_of_the_course(self, q: Question, hits: Sequence[Hit], timings: dict[str, float],
                            refused: Reply) -> Generator[Moments | Reply, None, Decided | None]:
        """A question about the course itself, answered as any other only where the lectures
        say it: a recorded live class often does ("a edição do ano passado ficou obsoleta?",
        answered in the first class). The gate must find it covered, not by its fallback, and
        as surely as the quote strategy's configured cut asks; otherwise, if the evidence check
        fails, or where the gate has a cut of its own (``lectures_say``), ``refused`` (ask the
        instructor) and its moments. Returns the decision to answer from, or None once
        ``refused`` was yielded."""
        decided = None
        gate = self.decider.gate
        if gate is not None and gate.quote_min_covered is None:
            stage = self._decided(q, hits, timings)
            try:
                while True:  # the decide stage's moments (or its failure) are not this reply's
                    next(stage)
            except StopIteration as done:
                decided = done.value
        if decided is None or not self.lectures_say(decided.decision):
            yield Moments(refused.moments, False, refused.reason)
            yield refused
            return None
        decision = replace(decided.decision,
                           reason=f"{refused.reason}, {SAID_IN_LECTURES}: "
                                  f"{decided.decision.reason}")
        yield Moments(decided.moments, True, decision.reason)
        return replace(decided, decision=decision)

    def lectures_say(self, decision: Decision) -> bool:
        """Whether the gate reads a course question as one the lectures answer: covered, not
        by its fallback, and at least as sure (its fitted P, else the evidence check's best P)
        as the quote's configured cut (``AULA_QUOTE_MIN_COVERED``, on the default gate's
        scale)."""
        sure = decision.sure
        if decision.quote_cut is not None:
            # a gate with a cut of its own (the course-adapted one) reads questions on the
            # course's organisation as covered ("as listas valem nota?" 0.90 over 3b1b-pt):
            # for it the course check keeps the last word
            return False
        return (decision.covered and not decision.by_fallback and sure is not None
                and sure >= self.quote.min_covered)

    def _decided(self, q: Question, hits: Sequence[Hit], timings: dict[str, float]
                 ) -> Generator[Moments | Reply, None, Decided | None]:
        """The decide stage, its moments yielded; returns None when the check failed."""
        decider = self.decider
        t0 = time.perf_counter()
        passages = decider.candidates_for(q.about, hits)
        timings["focus"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        try:
            probs = decider.check(q.about, passages)
        except LLMError as exc:
            moments = [passage_moment(p, None) for p in passages]
            yield Moments(moments, None, "evidence check failed")
            timings["check"] = time.perf_counter() - t0
            yield failed(q.text, q.language, self.strategy, moments, exc, timings)
            return None
        timings["check"] = time.perf_counter() - t0
        decided = decider.decide(q, hits, passages, probs)
        yield Moments(decided.moments, decided.decision.covered, decided.decision.reason)
        return decided

    def _where(self, q: Question, decided: Decided, timings: dict[str, float]
               ) -> Iterator[str | Reply]:
        """A question that asks which lecture or minute gets the moment, named and linked,
        and how its passage begins: nothing generated, nothing to check."""
        chosen, decision = decided.chosen, decided.decision
        text = where_answer(chosen, q.language)
        yield text
        cite_hits = _cite_hits(chosen)
        text, citations = cite(text, cite_hits)
        answer = Answer(text, citations, True, self._model, q.language, dict(timings),
                        len(chosen))
        sure = decision.sure
        yield Reply(q.text, q.language, self.strategy, list(decided.moments), answer, True,
                    confidence=None if sure is None else round(sure, 4),
                    reason=f"{decision.reason}; asks where: the moment, nothing generated",
                    timings=timings, contexts=[p.text for p in chosen])

    def _written(self, q: Question, decided: Decided, timings: dict[str, float]
                 ) -> Iterator[str | Reply]:
        """The generate stage, then citing and checking what it wrote."""
        chosen, moments = decided.chosen, decided.moments
        draft = Draft()
        try:
            yield from write(self.llm, q, chosen, draft, max_tokens=self.gated_max_tokens)
        except LLMError as exc:
            timings["generate"] = draft.seconds
            yield failed(q.text, q.language, self.strategy, moments, exc, timings)
            return
        timings["generate"], timings["first_token"] = draft.seconds, draft.first_token
        cite_hits = _cite_hits(chosen)
        text, citations, quoted = self._cited_with_substance(q, draft.text, chosen, cite_hits)
        t0 = time.perf_counter()
        text, citations, checks = self._checked(text, citations, chosen, cite_hits)
        timings["postcheck"] = time.perf_counter() - t0
        answer = Answer(text, citations, True, self.llm.model_id, q.language, dict(timings),
                        len(chosen))
        yield Reply(q.text, q.language, self.strategy, moments, answer, True,
                    confidence=_confidence(decided, checks, q.summary), sentences=checks,
                    reason=decided.decision.reason, timings=timings,
                    contexts=[p.text for p in chosen], quoted=quoted)

    def _cited_with_substance(self, q: Question, raw: str, chosen: Sequence[Passage],
                              cite_hits: Sequence[Hit]) -> tuple[str, list[Any], int | None]:
        """The draft cited; an answer that only hands the question back gets the lecture's
        own words (``answer.substance``)."""
        text, citations = cite_all(raw, cite_hits, self.embed)
        if self.min_new_words <= 0:
            return text, citations, None
        made = with_substance(text, f"{q.text} {q.search}", [p.text for p in chosen],
                              q.language, min_new=self.min_new_words)
        if made.text == text:
            return text, citations, None
        # its sentences are cited already, or the lecture's quoted
        text, citations = cite_all(made.text, cite_hits, self.embed, attach=False)
        return text, citations, made.quoted

    def _checked(self, text: str, citations: list[Any], chosen: Sequence[Passage],
                 cite_hits: Sequence[Hit]) -> tuple[str, list[Any], list[SentenceCheck]]:
        """The check stage: each sentence against its passage (citations moved or added),
        unsupported sentences dropped when set so, foreign links dropped."""
        checks: list[SentenceCheck] = []
        if self.postcheck != "off":
            try:
                checked, checks = postcheck(self.llm, text, chosen)
            except LLMError as exc:  # the answer stands; it is just not checked
                log.warning("post-check failed: %s", exc)
            else:
                if checked != text:  # a citation moved, or an uncited sentence got one
                    text, citations = checked, build_citations(cited_numbers(checked),
                                                               cite_hits)
        if self.postcheck == "drop" and any(c.supported is False for c in checks):
            text, citations = cite(drop_unsupported(text, checks), cite_hits)
        kept = without_foreign_links(text, [p.text for p in chosen])
        if kept != text:
            text, citations = cite(kept, cite_hits)
        return text, citations, checks


def _cite_hits(chosen: Sequence[Passage]) -> list[Hit]:
    """What a citation names: the passage the generator read, its link opening where the
    supporting sentence starts."""
    return [replace(p.as_hit(), answer_start=p.answer_start) for p in chosen]


def _confidence(decided: Decided, checks: Sequence[SentenceCheck], summary: bool) -> float:
    """The gate's P that the lectures cover the question, times the mean P of the checked
    sentences. A summary is covered by the lecture's own words: the gate's P on a bare topic
    says little ("fourier", 0.26), the check what the summary says."""
    decision = decided.decision
    conf = 1.0 if summary else decision.sure or 0.0
    readable = [c.p for c in checks if c.p is not None]
    if readable:
        conf *= statistics.fmean(readable)
    return round(conf, 4)


def _course_check(path: Any, embed: EmbedFn | None, embed_model_id: str | None
                  ) -> CourseCheck | None:
    """The course-question check, off when it reads another model's vectors than the index."""
    course = CourseCheck.load(path)
    if course is not None and course.model_id != embed_model_id:
        if embed is not None:
            log.warning("course-question check off: it reads %s vectors, the index uses %s",
                        course.model_id, embed_model_id)
        return None
    return course


def gate_file(settings: Any) -> Any:
    """The gate the settings name (``AULA_GATE_FILE``); unset, the one that reads the
    course-adapted model where the index has one (``aula adapt``), else the default."""
    from corpus.adapt.store import MODEL, adapted_dir

    if settings.answer.gate_file is not None:
        return settings.answer.gate_file
    return "adapted" if (adapted_dir(settings.index.dir) / MODEL).is_dir() else None


class IndexReads(Protocol):
    """What the pipeline reads from the index being served: the service's ``Services`` (which
    follows a reloaded index) or a bare ``corpus.retrieve.Retriever``. Typed, so that a part
    either loses is a type error rather than a pipeline that quietly decides without it."""

    @property
    def adapted(self) -> Any: ...

    def cues_for(self, hit: Any) -> Any: ...

    def term_coverage(self, question: str, texts: Any) -> float: ...

    def lecture_windows(self, lecture_id: str) -> Any: ...

    def numbered_lecture(self, question: str) -> str | None: ...

    def said_in_few_lectures(self, word: str) -> bool: ...


def _gate(path: Any, retriever: IndexReads | None) -> tuple[Gate, Any]:
    """The gate in ``path`` and, when it reads the course-adapted model's signals, the function
    that measures them (the retriever's, read afresh each time: a new index version brings its
    own; None where it has none). A gate that reads them over an index without an adapted
    model gives way to the default gate, with one warning."""
    gate = Gate.load(path)
    if gate.reads_adapted and (retriever is None or retriever.adapted is None):
        log.warning("gate %s reads the course-adapted model, which this index has not or "
                    "which cannot be read (`aula adapt`): the default gate decides", path)
        gate = default_gate()
    if retriever is None:
        return gate, None

    def adapted(question: str) -> Any:
        signals = retriever.adapted
        return signals(question) if signals is not None else None

    return gate, adapted
