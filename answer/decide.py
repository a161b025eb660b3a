"""Decide stage: whether the lectures answer the question, and from which passages.

The question is first read by the course-question check (exams, grades, deadlines: not what
the recorded lectures answer). Then the top windows are focused to the sentences around the
answer (``corpus.context.focus``); the evidence check (``answer.evidence``) asks the LLM,
passage by passage, whether it answers, and the fitted ``Gate`` decides coverage before any
text is generated. A summary request is decided on its lecture instead (``answer.summary``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from answer.course import CourseCheck
from answer.evidence import Decision, Gate, check_passages, default_gate, features
from answer.question import Question
from answer.replies import Moment, passage_moment
from answer.summary import SUMMARY_PASSAGES, spread, summary_decision, summary_lecture
from corpus.context import EmbedFn, Passage, focus, rank_passages
from corpus.models import Cue, Hit


@dataclass(frozen=True)
class Decided:
    """What the decide stage hands on: the passages the check read with their P, the gate's
    decision, the passages the answer reads (``chosen``) and the moments, best first."""

    passages: list[Passage]
    probs: list[float | None]
    decision: Decision
    chosen: list[Passage]
    moments: list[Moment]


@dataclass
class Decider:
    """The course check, the focus, the evidence check and the gate, with what they read of
    the index being served."""

    llm: Any
    embed: EmbedFn | None = None
    cues_for: Callable[[Hit], Sequence[Cue]] = lambda _hit: ()
    term_coverage: Callable[[str, Sequence[str]], float] | None = None
    """The index's idf-weighted term coverage (``Retriever.term_coverage``), a gate signal."""
    lecture_windows: Callable[[str], Sequence[Hit]] = lambda _lecture: ()
    """Every window of a lecture, in time order (``Retriever.lecture_windows``): a summary's."""
    rare_word: Callable[[str], bool] | None = None
    """Whether few lectures of the index say a word (``Retriever.said_in_few_lectures``)."""
    gate: Gate | None = None
    course: CourseCheck | None = None
    candidates: int = 3
    focus_windows: int = 6
    passage_chars: int = 0
    max_passages: int = 2
    focus_reach: float = 0.0
    """Seconds past each window's edges where its focus looks for the answer too."""
    adapted: Callable[[str], Mapping[str, float]] | None = None
    """The course-adapted model's signals of a question (``corpus.adapt.signals``), None where
    the index has none."""
    numbered_lecture: Callable[[str], str | None] | None = None
    """The lecture a question names by its number ("resume a aula 4"), if one
    (``Retriever.numbered_lecture``): the one a summary request sums up."""

    def about_course(self, question: Question) -> tuple[bool, float] | None:
        """The course check's reading of ``question`` (None when there is no check)."""
        if self.course is None or self.embed is None:
            return None
        return self.course.read([question.topic], self.embed, written_out=question.rewrite)[0]

    def candidates_for(self, about: str, hits: Sequence[Hit]) -> list[Passage]:
        """The passages the evidence check reads: the top ``focus_windows`` windows focused to
        their sentences closest to ``about``, in the retriever's order without repeats."""
        passages = focus(about, hits[: max(1, self.focus_windows)], self.cues_for, self.embed,
                         chars=self.passage_chars, reach=self.focus_reach)
        return rank_passages(passages)[: max(1, self.candidates)]

    def features(self, about: str, passages: Sequence[Passage], probs: Sequence[float | None],
                 hits: Sequence[Hit], *, every_signal: bool = False) -> dict[str, float]:
        """The gate's signals (``answer.evidence.features``) over this index; ``idf_cov`` only
        when the gate reads it or ``every_signal`` (fitting): its word counts cost seconds."""
        wanted = every_signal or self.reads_idf
        adapted = (self.adapted(about) if self.adapted is not None and (
            every_signal or (self.gate is not None and self.gate.reads_adapted)) else None)
        return features(about, passages, probs, hits,
                        self.term_coverage if wanted else None, self.rare_word, adapted)

    def deciding(self, feats: Mapping[str, float]) -> Gate:
        """The gate that decides on ``feats``: the default gate where this gate reads the
        course-adapted model's signals and they could not be measured (a new index version
        whose adapted model failed to load), not the adapted gate reading them as 0."""
        assert self.gate is not None
        if self.gate.reads_adapted and not all(k in feats for k in self.gate.weights):
            return default_gate()
        return self.gate

    @property
    def reads_idf(self) -> bool:
        return self.gate is not None and self.gate.reads_idf

    def check(self, about: str, passages: Sequence[Passage]) -> list[float | None]:
        """The evidence check's P per passage (None each when the gate reads no LLM)."""
        if self.gate is not None and self.gate.uses_llm:
            return check_passages(self.llm.first_token, about, passages)
        return [None] * len(passages)

    def decide(self, question: Question, hits: Sequence[Hit], passages: Sequence[Passage],
               probs: Sequence[float | None]) -> Decided:
        """The gate's decision over the checked ``passages`` (a summary's, on its lecture)."""
        assert self.gate is not None
        feats = self.features(question.about, passages, probs, hits)
        # a comparison reads one passage more: besides the first hit, each side's best
        budget = self.max_passages + (question.sides is not None)
        decision = self.deciding(feats).decide(probs, [h.score for h in hits], budget, feats)
        windows: list[Hit] = []
        if question.summary:
            decision, windows = self.summary_decision(question.about, hits, decision,
                                                      question.text)
        known = [-1.0 if p is None else p for p in probs]
        rest = [i for i in sorted(range(len(passages)), key=lambda i: -known[i])
                if i not in decision.order]
        moments = [passage_moment(passages[i], probs[i]) for i in [*decision.order, *rest]]
        chosen = [passages[i] for i in decision.order]
        if question.summary and decision.covered:  # the lecture's own windows, over its length
            chosen = focus(question.about, spread(windows, SUMMARY_PASSAGES), self.cues_for,
                           self.embed, chars=self.passage_chars)
            moments = [passage_moment(p, None) for p in chosen]
        return Decided(list(passages), list(probs), decision, chosen, moments)

    def summary_decision(self, topic: str, hits: Sequence[Hit], decision: Decision,
                         asked: str = "") -> tuple[Decision, list[Hit]]:
        """A summary request's decision (``answer.summary.summary_decision``, in place of the
        gate's) and the windows of the lecture it sums up, in time order. A lecture the request
        names by its number (``asked``: "resume a aula 4") is summed up, whatever its topic."""
        named = self.numbered_lecture(asked) if self.numbered_lecture and asked else None
        lecture = named or summary_lecture([h.lecture_id for h in hits],
                                           [h.title for h in hits], topic)
        windows = list(self.lecture_windows(lecture)) or sorted(
            (h for h in hits if h.lecture_id == lecture), key=lambda h: h.start)
        if named and windows:
            return replace(decision, covered=True, order=[0],
                           reason=f"summary of {lecture}: named by its number "
                                  f"({decision.reason})"), windows
        return summary_decision(decision, topic, lecture, [w.text for w in windows],
                                windows[0].title if windows else ""), windows
