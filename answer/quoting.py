"""The ``quote`` strategy's stage: the lecture's own words as the answer (``answer.quote`` holds
its pure parts). The first ``checks`` passages (the gate's choice first), each whole or its best
run of sentences, are read by the LLM; the one that answers best is quoted with its second and
led by one generated sentence shown only when the quote confirms it. When none answers with P
``min_p``: the moments and a line saying so."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from answer.citations import build_citations, video_link
from answer.evidence import Decision, check_texts, passage_block
from answer.outlinks import foreign_links
from answer.question import Question
from answer.quote import (
    LEAD_MAX_TOKENS,
    LEAD_STRICT_AT,
    NOT_FOUND,
    QUOTE,
    Quote,
    QuoteSettings,
    best_runs,
    continued_all,
    first_sentence,
    lead_messages,
    placed,
    question_gain,
    quotes_answer,
    shown_quotes,
    whole_passage,
)
from answer.replies import Answer, Moment, Reading, Reply, SentenceCheck, declined, failed
from answer.substance import MIN_NEW_WORDS, new_words
from app.llm import LLMError
from corpus.context import EmbedFn, Passage
from corpus.models import Cue, Hit
from corpus.rerank import LogProbs
from eval.claims import STRICT_USER, SUPPORT_AT, claim_messages, yes_probability

log = logging.getLogger(__name__)

MIN_LEAD_CHARS = 12
"""A lead shorter than this ("Sim.") says nothing the quote does not."""


@dataclass
class Quoter:
    """The quote strategy's stage: its settings and the models it reads with."""

    llm: Any
    embed: EmbedFn
    settings: QuoteSettings = QUOTE
    min_new_words: int = MIN_NEW_WORDS
    logprobs: LogProbs | None = None
    """The in-process model's log-probabilities of a given reply (``app.lm_scorer``), read
    when ``settings.confidence`` is ``likelihood``."""
    cues_for: Callable[[Hit], Sequence[Cue]] | None = None
    """The lecture's timed cues inside a span (the retriever's), from which a shown quote is
    continued (``settings.chars``); None: quotes stay as focused."""

    def continued(self, passages: Sequence[Passage], quotes: Sequence[Quote]) -> list[Quote]:
        """Each of ``quotes`` continued with its lecture's next sentences
        (``answer.quote.continued_all``)."""
        if self.cues_for is None:
            return list(quotes)
        return continued_all(quotes, [passages[q.passage].hit.lecture_id for q in quotes],
                             self.cues_for, self.settings.chars)

    @property
    def confidence(self) -> str:
        """What decides that the quotes answer (``likelihood`` without a model: ``yesno``)."""
        conf = self.settings.confidence
        return "yesno" if conf == "likelihood" and self.logprobs is None else conf

    def read_texts(self, about: str, passages: Sequence[Passage], quotes: Sequence[Quote]
                   ) -> list[str]:
        """The text the yes/no reads for each quote."""
        if self.settings.read == "quote":
            return [q.text for q in quotes]
        runs = best_runs(about, [passages[q.passage] for q in quotes], self.embed)
        by_quote = {r.passage: r.text for r in runs}
        return [by_quote.get(n, q.text) for n, q in enumerate(quotes)]

    def confidences(self, question: Question, passages: Sequence[Passage],
                    quotes: Sequence[Quote]) -> list[float | None]:
        """Each quote's confidence: the yes/no's P of each; with ``likelihood``, the question's
        gain after the first passage, for the first (the passages after it are quoted with it,
        in the gate's order, and carry none); none with ``off``."""
        if self.confidence == "yesno":
            read = quotes[: self.settings.checks]
            # read past the server's prompt cache: what is shown must not depend on what the
            # slot read before (``LLMClient.first_token``)
            ps = check_texts(functools.partial(self.llm.first_token, fresh=True), question.about,
                             self.read_texts(question.about, passages, read))
            return [p or 0.0 for p in ps] + [None] * (len(quotes) - len(read))
        if self.confidence == "likelihood" and quotes and self.logprobs is not None:
            gain = question_gain(self.logprobs, question.text, quotes[0].text,
                                 question.language)
            return [gain, *([None] * (len(quotes) - 1))]
        return [None] * len(quotes)

    def shown(self, question: Question) -> int:
        """How many quotes an answer shows at most: ``shown``, one more for a comparison (the
        best passage of each compared subject besides the first hit, as the decide stage
        chooses them)."""
        return self.settings.shown + (question.sides is not None)

    def quotes(self, about: str, passages: Sequence[Passage], decision: Decision, shown: int
               ) -> list[Quote]:
        """The quotes read or shown: the first ``checks`` passages with the yes/no (at least
        ``shown``), the gate's choice first."""
        order = [*decision.order, *(i for i in range(len(passages)) if i not in decision.order)]
        reads = self.settings.checks if self.confidence == "yesno" else 0
        order = order[: max(reads, shown)]
        found = (best_runs(about, [passages[i] for i in order], self.embed)
                 if self.settings.span == "sentences" else
                 [whole_passage(n, passages[i]) for n, i in enumerate(order)])
        return [replace(q, passage=order[q.passage]) for q in found]

    def _confirmed(self, said: str, question: str, quoted: str
                   ) -> tuple[str | None, float | None]:
        if (len(said) < MIN_LEAD_CHARS or len(new_words(said, question)) < self.min_new_words
                or foreign_links(said, [quoted])):
            return None, None
        block = passage_block(quoted)
        got, probs = self.llm.first_token(claim_messages(said, block))
        p = yes_probability(got, probs)
        if p is None or p < SUPPORT_AT:
            return None, p
        got, probs = self.llm.first_token(claim_messages(said, block, STRICT_USER))
        strict = yes_probability(got, probs)
        return (said if strict is not None and strict >= LEAD_STRICT_AT else None), p

    def events(self, question: Question, passages: Sequence[Passage], moments: list[Moment],
               decision: Decision, timings: dict[str, float], strategy: Any = "quote"
               ) -> Iterator[str | Reply]:
        """The quote's reply as events (its text, then the ``Reply``)."""
        lang, model = question.language, getattr(self.llm, "model_id", "")
        cut = (decision.quote_cut if self.settings.gate_cut and decision.quote_cut is not None
               else self.settings.min_covered)
        if (decision.p_covered is not None and not decision.by_fallback
                and decision.p_covered < cut):
            yield Reply(question.text, lang, strategy, moments, declined(lang, model), False,
                        confidence=round(1.0 - decision.p_covered, 4), timings=timings,
                        reason=f"{decision.reason}; P(covered) < {cut:.2f} to quote")
            return
        t0 = time.perf_counter()
        most = self.shown(question)
        quotes = self.quotes(question.about, passages, decision, most)
        try:
            ps = self.confidences(question, passages, quotes)
        except LLMError as exc:
            timings["quote"] = time.perf_counter() - t0
            yield failed(question.text, lang, strategy, moments, exc, timings)
            return
        timings["quote"] = time.perf_counter() - t0
        quotes = [replace(q, p=p) for q, p in zip(quotes, ps, strict=True)]
        readings = [Reading((h := passages[q.passage].hit).lecture_id, h.title or h.lecture_id,
                            q.start, q.end, q.text, round(q.p or 0.0, 4))
                    for q in quotes if q.p is not None]
        best = max(quotes, key=lambda q: q.p or 0.0, default=None)
        name, at = (("gain", self.settings.min_gain) if self.confidence == "likelihood" else
                    ("P", self.settings.min_p if self.confidence == "yesno" else 0.0))
        read = ", ".join(f"{q.p or 0.0:.2f}" for q in quotes if q.p is not None)
        chosen = (list(quotes[:most]) if self.confidence == "off" else
                  [quotes[i] for i in shown_quotes([q.p for q in quotes], at, most)])
        chosen = self.continued(passages, chosen)
        if best is None or not chosen:
            why = f"{decision.reason}; no sentence answers: {name}=[{read}] < {at:.2f}"
            yield Reply(question.text, lang, strategy, moments,
                        Answer(NOT_FOUND[lang], [], False, model, lang), False,
                        confidence=round(1.0 - (best.p or 0.0) if best else 1.0, 4),
                        reason=why, timings=timings, readings=readings)
            return
        yield from self._answered(question, [passages[q.passage] for q in chosen], chosen,
                                  moments, f"{decision.reason}; quote {name}=[{read}]", timings,
                                  strategy, readings)

    def _answered(self, question: Question, shown: Sequence[Passage], quotes: Sequence[Quote],
                  moments: list[Moment], reason: str, timings: dict[str, float],
                  strategy: Any, readings: list[Reading]) -> Iterator[str | Reply]:
        lang, model = question.language, getattr(self.llm, "model_id", "")
        t0 = time.perf_counter()
        quoted = " […] ".join(q.text for q in quotes)
        lead: str | None = None
        lead_p: float | None = None
        try:
            if self.settings.lead:
                lead, lead_p = self.lead_for(question, quoted)
        except LLMError as exc:  # the quotes stand alone
            log.warning("lead sentence failed: %s", exc)
        lead_n = 1
        if lead is not None:
            placed_quotes = [placed(q, lead) for q in quotes]
            moved = [n for n, (a, b) in enumerate(zip(quotes, placed_quotes, strict=True), 1)
                     if a.start != b.start]
            lead_n = moved[0] if moved else 1
            quotes = placed_quotes
        timings["generate"] = time.perf_counter() - t0
        hits = [replace(p.as_hit(), start=q.start, end=max(q.end, q.start + 1), text=q.text,
                        answer_start=q.start) for p, q in zip(shown, quotes, strict=True)]
        text = quotes_answer(lead, lead_n, [(q, h.title or h.lecture_id)
                                            for q, h in zip(quotes, hits, strict=True)], lang)
        yield text
        at = quotes[lead_n - 1].start
        checks = [SentenceCheck(text.split("\n\n", 1)[0], [lead_n], None if lead_p is None
                                else round(lead_p, 4), True, None, at,
                                video_link(hits[lead_n - 1].url, at))] if lead else []
        numbers = list(range(1, len(hits) + 1))
        answer = Answer(text, build_citations(numbers, hits), True, model, lang, dict(timings),
                        len(hits))
        yield Reply(question.text, lang, strategy, moments, answer, True,
                    confidence=round(max(q.p or 0.0 for q in quotes), 4), sentences=checks,
                    reason=reason + ("" if lead or not self.settings.lead
                                     else "; lead not confirmed"),
                    timings=timings, contexts=[q.text for q in quotes], readings=readings)

    def lead_for(self, question: Question, quoted: str) -> tuple[str | None, float | None]:
        """``lead`` in the question's language, confirmed against the quoted words."""
        raw = "".join(self.llm.stream(lead_messages(question.text, quoted, question.language),
                                      temperature=0.0, max_tokens=LEAD_MAX_TOKENS))
        return self._confirmed(first_sentence(raw), question.text, quoted)
