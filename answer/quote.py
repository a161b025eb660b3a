"""Answers built from the lecture's own words: the passage (or the few sentences) that answers,
quoted with its second, led by at most one generated sentence that the quote confirms.

A small model (the embedded 1.5B) paraphrases a passage into fluent, confident and often wrong
sentences; the teacher's own words, quoted, are right whenever the right place was found. The
answer is made of three steps, each a pure function here or one LLM call in the answerer:

1. The quote: by default the gate's first focused passage whole (``whole_passage``, about 450
   characters); with ``quote_span="sentences"``, the best run of one to ``MAX_RUN`` consecutive
   sentences of each passage by E5 (``best_runs``; ``sentences`` cuts a cue of spoken
   Portuguese into sentences, their seconds spread by character offset). On recorded live
   classes the passage was right far more often than the sentences E5 picks inside it. A shown
   quote goes on with the lecture's next sentences to about ``QUOTE_SHOWN_CHARS``, and to the
   end of a sentence it stops in (``continued``).
2. The LLM's yes/no on the quote (the gate's prompt) says whether it answers; below
   ``QUOTE_MIN_P`` the reply says so and shows the moments instead of a quote that does not
   answer.
3. ``lead_messages`` asks for one sentence answering from the quote alone; the claim checks read
   it against the quote, and an unconfirmed lead is not shown. A confirmed lead also places the
   quote's start (``placed``): the link opens where the lead's words are said.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from answer.prompts import fmt_clock
from corpus.context import EmbedFn, Passage, said_at, squash
from corpus.language import Lang
from corpus.models import Cue, Hit, Window
from corpus.rerank import QUESTION_PROMPTS, QUESTION_SYSTEM, LogProbs
from corpus.text import SENTENCE_BREAK

MAX_RUN = 3
"""Consecutive sentences a quote may hold."""
QUOTE_CHARS = 360
"""A quote longer than this is cut at a sentence (a run of one sentence is never cut)."""
FOLLOW_CHARS = 520
"""The sentence after the best run joins the quote while the quote stays within this many
characters."""
TRIM_MARGIN = 0.01
"""A quote's first sentence is dropped when the run without it scores at most this much less."""
MIN_SENTENCE_CHARS = 25
"""A shorter piece ("Massa?", "Né?", "Então, bom.") is joined to the sentence after it."""
QUOTE_MIN_COVERED = 0.86
"""The fitted gate's P(the lectures cover the question) from which the quote strategy reads a
quote at all (``Settings.answer.quote_min_covered``): ``python -m bench.fit_quote --grid`` picks
the lowest at which no uncovered question of the fitting halves of both answer sets is answered
(on recorded live classes the gate's own 0.5 let half of them through; docs/answers.md)."""
QUOTE_MIN_P = 0.75
"""The LLM's P(a quote answers the question) from which it is shown as the answer
(``Settings.answer.quote_min_p``): with the gate at ``QUOTE_MIN_COVERED``, ``python -m
bench.fit_quote --grid`` picks the threshold of least 3 × wrong answers + covered questions
declined on the fitting halves (docs/answers.md)."""
QUOTE_MIN_GAIN = 0.75
"""With ``confidence="likelihood"``: how much more likely, in mean log-probability per token,
the embedded model finds the question after the gate's first passage than after no passage,
from which the quotes are shown (``Settings.answer.quote_min_gain``): ``python -m
bench.quote_likelihood`` picks the least 3 × wrong answers + covered questions declined on the
fitting halves (docs/answers.md)."""
QUOTE_SHOWN_CHARS = 750
"""A shown quote is continued with the lecture's next sentences to about this many characters
(``Settings.answer.quote_chars``; ``continued``): the focused passage (about 450) often stops
after the sentence that names the subject and before the one that explains it. On the fitting
halves, the same answers so continued were read right more often (docs/answers.md)."""
FINISH_CHARS = 300
"""A quote that stops mid-sentence goes on to the sentence's end when it comes within this many
characters (else it stops where it did)."""
SENTENCE_ENDS = (".", "!", "?", "…")
FOLLOW_SECONDS = 120.0
"""How far past a quote's end the lecture's cues are looked up to continue it."""
NO_PASSAGE = {"pt": "(nenhum trecho)", "en": "(no excerpt)"}
LEAD_MAX_TOKENS = 70
"""One sentence, a long one included."""
LEAD_STRICT_AT = 0.7
"""The lead is shown when the claim check confirms it (``eval.claims.SUPPORT_AT``) and the
stricter reading (``eval.claims.STRICT_USER``) gives it at least this P: on labelled answers
that reading gave right claims 0.74-0.95 and wrong ones 0.46-0.59."""


@dataclass(frozen=True)
class QuoteSettings:
    """How the quote strategy answers: one object from the configuration
    (``Settings.answer.quote_*``, ``QuoteSettings.of``) through the pipeline to the quoter, and
    the defaults of all three."""

    min_p: float = QUOTE_MIN_P
    """The LLM's P(a quote answers) from which it is shown."""
    min_covered: float = QUOTE_MIN_COVERED
    """The gate's fitted P(covered) from which a quote is read; below it, declined (not when
    the gate's fallback passed the question: its P is on another scale). A gate that carries
    its own cut (``Decision.quote_cut``) is held to that one unless ``gate_cut`` is off."""
    gate_cut: bool = True
    """Whether the deciding gate's own cut replaces ``min_covered`` (off where the operator set
    ``AULA_QUOTE_MIN_COVERED``)."""
    read: Literal["quote", "sentences"] = "quote"
    """What the LLM's yes/no reads of each quote: the quote itself, or its best run of
    sentences (shorter and faster on a spoken passage, but wrong more often on the test halves:
    docs/answers.md)."""
    checks: int = 1
    """Passages whose quotes the LLM's yes/no reads, the gate's choice first; the passages
    quoted past them (``shown`` more than ``checks``) follow the ones read that answer."""
    shown: int = 2
    """Passages quoted, in the gate's order (those the LLM reads under ``min_p`` left out)."""
    lead: bool = False
    """Lead the quotes with one generated sentence they confirm (else the quotes alone)."""
    span: Literal["sentences", "passage"] = "passage"
    """The focused passage whole, or its best run of sentences by E5."""
    confidence: Literal["yesno", "likelihood", "off"] = "yesno"
    """What decides that the quotes answer: the LLM's yes/no on each quote read (``min_p``),
    the question's likelihood gain after the first passage (``min_gain``,
    ``question_gain``), or nothing (the passages the gate passed are quoted)."""
    min_gain: float = QUOTE_MIN_GAIN
    chars: int = QUOTE_SHOWN_CHARS
    """Each shown quote continued with the lecture's next sentences to about this many
    characters (0: the passage as focused)."""

    @classmethod
    def of(cls, answer: object) -> QuoteSettings:
        """The settings named ``quote_*`` on ``answer`` (``Settings.answer``); a cut the
        operator set holds whatever the gate."""
        operator_cut = SETTING["min_covered"] in getattr(answer, "model_fields_set", ())
        return cls(**{name: getattr(answer, SETTING[name]) for name in SETTING},
                   gate_cut=not operator_cut)


SETTING = {"min_p": "quote_min_p", "min_covered": "quote_min_covered", "read": "quote_read",
           "checks": "quote_checks", "shown": "quote_passages", "lead": "quote_lead",
           "span": "quote_span", "confidence": "quote_confidence",
           "min_gain": "quote_min_gain", "chars": "quote_chars"}
"""Each ``QuoteSettings`` field's name among the answer settings (``AULA_QUOTE_*``)."""
QUOTE = QuoteSettings()


def question_logprob(logprobs: LogProbs, question: str, passage: str, lang: Lang) -> float:
    """The mean log-probability of ``question``'s tokens as a student's question that
    ``passage`` answers (``AULA_RERANK=likelihood``'s prompt), under the model behind
    ``logprobs``."""
    key = "en" if lang == "en" else "pt"
    lp = logprobs([{"role": "system", "content": QUESTION_SYSTEM[key]},
                   {"role": "user", "content": QUESTION_PROMPTS[key].format(passage=passage)}],
                  question.strip())
    return float(np.mean(lp)) if lp else 0.0


def question_gain(logprobs: LogProbs, question: str, passage: str, lang: Lang) -> float:
    """How much more likely ``question`` is after ``passage`` than after no passage
    (``question_logprob``'s difference, a pointwise mutual information). A passage that answers
    makes the question's own words predictable; one on the same subject but another point
    barely does."""
    no_passage = NO_PASSAGE["en" if lang == "en" else "pt"]
    return (question_logprob(logprobs, question, passage, lang)
            - question_logprob(logprobs, question, no_passage, lang))


Sentence = Window
"""One timed sentence of a passage: its start, end and text."""


@dataclass(frozen=True)
class Quote:
    """The best run of sentences of one passage: its text, span, E5 similarity to the question,
    and the passage it comes from (index into the answerer's candidates)."""

    passage: int
    start: float
    end: float
    text: str
    similarity: float
    p: float | None = None
    """The LLM's P(the quote answers the question), once read."""
    sentences: tuple[Sentence, ...] = ()
    """Its timed sentences."""


def sentences(passage: Passage) -> list[Sentence]:
    """The passage's timed sentences: its cues cut at sentence ends, each piece's seconds
    spread over its cue by character offset, short pieces joined to the next. A passage
    without cues is one cue over its span."""
    cues = [(c.start, c.end, c.text) for c in passage.cues if c.text.strip()]
    if not cues:
        cues = [(passage.start, passage.end, passage.text)]
    pieces: list[Sentence] = []
    for start, end, text in cues:
        parts = [p for p in SENTENCE_BREAK.split(squash(text)) if p]
        total = max(1, sum(len(p) + 1 for p in parts))
        pos = 0
        for p in parts:
            a = start + (end - start) * pos / total
            pos += len(p) + 1
            pieces.append(Sentence(round(a, 2), round(start + (end - start) * pos / total, 2), p))
    out: list[Sentence] = []
    carry: Sentence | None = None
    for s in pieces:
        if carry is not None:
            s = Sentence(carry.start, s.end, f"{carry.text} {s.text}")
            carry = None
        if len(s.text) < MIN_SENTENCE_CHARS:
            carry = s
        else:
            out.append(s)
    if carry is not None:
        if out:
            last = out.pop()
            out.append(Sentence(last.start, carry.end, f"{last.text} {carry.text}"))
        else:
            out.append(carry)
    return [s for s in out if passage.start - 1 <= s.start <= passage.end]


def runs(sents: Sequence[Sentence], max_run: int = MAX_RUN,
         max_chars: int = QUOTE_CHARS) -> list[tuple[int, int]]:
    """Every run [i, j) of one to ``max_run`` consecutive sentences within ``max_chars``
    (a single sentence always counts)."""
    out: list[tuple[int, int]] = []
    for i in range(len(sents)):
        size = 0
        for j in range(i, min(len(sents), i + max_run)):
            size += len(sents[j].text) + 1
            if j > i and size > max_chars:
                break
            out.append((i, j + 1))
    return out


def best_runs(question: str, passages: Sequence[Passage], embed: EmbedFn,
              max_run: int = MAX_RUN, max_chars: int = QUOTE_CHARS) -> list[Quote]:
    """The best run of sentences of each passage for ``question`` (E5 cosine), in the
    passages' order; a passage with no sentence gives none."""
    per: list[tuple[int, list[Sentence], list[tuple[int, int]]]] = []
    texts: list[str] = []
    for n, p in enumerate(passages):
        sents = sentences(p)
        spans = runs(sents, max_run, max_chars)
        per.append((n, sents, spans))
        texts.extend(" ".join(s.text for s in sents[a:b]) for a, b in spans)
    if not texts:
        return []
    qv = np.asarray(embed([question], "query"))[0]
    scores = np.asarray(embed(texts, "passage")) @ qv
    out: list[Quote] = []
    at = 0
    for n, sents, spans in per:
        if not spans:
            continue
        part = scores[at : at + len(spans)]
        at += len(spans)
        score = dict(zip(spans, (float(x) for x in part), strict=True))
        a, b = spans[int(np.argmax(part))]
        best = score[(a, b)]
        # a run that starts a sentence early scores nearly as well: the quote, and its link,
        # start at the sentence that answers
        while a + 1 < b and score.get((a + 1, b), -1.0) >= best - TRIM_MARGIN:
            a += 1
        # spoken explanations run on after the sentence that names the subject ("Porque o
        # yield, ele faz uma condição de parada aqui, né?" ... the difference comes next)
        if b < len(sents) and sum(len(s.text) + 1 for s in sents[a : b + 1]) <= FOLLOW_CHARS:
            b += 1
        out.append(Quote(n, sents[a].start, sents[b - 1].end,
                         " ".join(s.text for s in sents[a:b]), score.get((a, b), best),
                         sentences=tuple(sents[a:b])))
    return out


def _ends_sentence(text: str) -> bool:
    return text.rstrip().rstrip("\"”'»)").endswith(SENTENCE_ENDS)


def continued(quote: Quote, after: Sequence[Cue], chars: int) -> Quote:
    """``quote`` with the lecture's next sentences (``after``: the cues that follow it, in
    order) joined until it holds ``chars`` characters, the last one whole: a teacher names
    the subject, then explains it, and a passage focused on the words the question shares
    stops before the why. A quote that stops mid-sentence (a spoken cue ends where the speaker
    breathes) goes on to that sentence's end when it comes within ``FINISH_CHARS``, however
    long the quote already is. ``chars`` 0 keeps the quote as it is."""
    if chars <= 0:
        return quote
    nxt = [c for c in after if c.start >= quote.end - 0.5 and c.text.strip()]
    if not nxt:
        return quote
    hit = Hit.span("", nxt[0].start, nxt[-1].end)
    more = sentences(Passage(hit, "", nxt[0].start, nxt[-1].end, nxt[0].start,
                             cues=tuple(nxt)))
    text, kept = quote.text, list(quote.sentences)
    end = quote.end
    at = 0
    while at < len(more) and len(text) < chars:
        text = f"{text} {more[at].text}"
        kept.append(more[at])
        end = more[at].end
        at += 1
    tail: list[Sentence] = []
    for s in more[at:]:
        if _ends_sentence(text) or sum(len(t.text) + 1 for t in tail) > FINISH_CHARS:
            break
        tail.append(s)
        if _ends_sentence(s.text):
            text = " ".join([text, *(t.text for t in tail)])
            kept.extend(tail)
            end = s.end
            break
    return replace(quote, text=text, end=end, sentences=tuple(kept))


def continued_all(quotes: Sequence[Quote], lectures: Sequence[str],
                  cues_for: Callable[[Hit], Sequence[Cue]], chars: int) -> list[Quote]:
    """Each of ``quotes`` (of ``lectures``, in order) ``continued`` with its lecture's cues
    (``cues_for``: the retriever's, the cues inside a hit's span), stopping where another of
    them starts in the same lecture, so that no sentence is quoted twice."""
    if chars <= 0:
        return list(quotes)
    out: list[Quote] = []
    for n, (q, lecture) in enumerate(zip(quotes, lectures, strict=True)):
        until = min([q.end + FOLLOW_SECONDS,
                     *(o.start for m, (o, other) in enumerate(zip(quotes, lectures, strict=True))
                       if m != n and other == lecture and o.start >= q.end - 0.5)])
        after = [c for c in cues_for(Hit.span(lecture, q.end, until))
                 if c.start < until]
        out.append(continued(q, after, chars))
    return out


def shown_quotes(ps: Sequence[float | None], min_p: float, most: int) -> list[int]:
    """Which quotes are shown (indices, in the gate's order): none when no P read reaches
    ``min_p``; with ``most`` 1, the one read as answering best; else the first ``most`` that
    reach it, then those not read (P None: past the passages the LLM reads) in order."""
    reached = [i for i, p in enumerate(ps) if p is not None and p >= min_p]
    if not reached:
        return []
    if most == 1:
        return [max(range(len(ps)), key=lambda i: ps[i] or 0.0)]
    return (reached + [i for i, p in enumerate(ps) if p is None])[:most]


def placed(quote: Quote, lead: str) -> Quote:
    """``quote`` starting at the sentence that says what the confirmed ``lead`` says
    (``corpus.context.said_at``): E5 often prefers a run with a sentence of context before the
    one that answers, and the link should open where the answer is spoken."""
    if len(quote.sentences) < 2:
        return quote
    cues = tuple(Cue(s.start, s.end, s.text) for s in quote.sentences)
    hit = Hit.span("", quote.start, quote.end, quote.text)
    at = said_at(lead, Passage(hit, quote.text, quote.start, quote.end, quote.start,
                               cues=cues))
    if at is None or at <= quote.start:
        return quote
    keep = tuple(s for s in quote.sentences if s.start >= at)
    return replace(quote, start=keep[0].start, text=" ".join(s.text for s in keep),
                   sentences=keep)


_LEAD: dict[Lang, tuple[str, str]] = {
    "pt": ("Você responde perguntas de estudantes usando SOMENTE as frases de uma aula dadas "
           "abaixo. Responda em português, em UMA frase curta e direta, sem citar números de "
           "trechos. Não acrescente nada que as frases não digam.",
           "Frases da aula:\n“{quote}”\n\nPergunta do estudante: {question}\n\n"
           "Responda em uma frase, só com o que as frases dizem."),
    "en": ("You answer students' questions using ONLY the lecture sentences below (they may be "
           "in Portuguese). Answer in English, in ONE short, direct sentence, without excerpt "
           "numbers. Add nothing the sentences do not say.",
           "Lecture sentences:\n“{quote}”\n\nStudent's question: {question}\n\n"
           "Answer in one sentence, only with what the sentences say."),
}


def lead_messages(question: str, quote: str, lang: Lang) -> list[dict[str, str]]:
    """The prompt for the one generated sentence that leads the quote."""
    system, user = _LEAD[lang]
    return [{"role": "system", "content": system},
            {"role": "user", "content": user.format(quote=quote, question=question.strip())}]


def first_sentence(text: str) -> str:
    """The generated lead cut to its first sentence, without markers or quotes around it."""
    text = squash(re.sub(r"\[\s*\d+(?:\s*,\s*\d+)*\s*\]", "", text)).strip(" \"“”'")
    parts = SENTENCE_BREAK.split(text, maxsplit=1)
    return parts[0].strip() if parts else ""


_SAYS: dict[Lang, str] = {
    "pt": "Na aula “{title}”, em {clock}, o professor diz:",
    "en": "In the lecture “{title}”, at {clock}, the teacher says:",
}

NOT_FOUND: dict[Lang, str] = {
    "pt": "Não achei a frase exata nas aulas; estes momentos tratam disso.",
    "en": "I couldn't find the exact sentence in the lectures; these moments are about it.",
}


def quote_answer(lead: str | None, quote: Quote, title: str, lang: Lang) -> str:
    """The answer a student reads: the confirmed lead (if any), then the quote with its second,
    each ending with the marker of passage 1 (the quote's)."""
    return quotes_answer(lead, 1, [(quote, title)], lang)


def quotes_answer(lead: str | None, lead_n: int, quotes: Sequence[tuple[Quote, str]],
                  lang: Lang) -> str:
    """The confirmed lead (if any) cited ``[lead_n]``, then each quote with its lecture and
    second, the ``n``-th ending with ``[n]``, one paragraph each."""
    body = [f"{_SAYS[lang].format(title=title, clock=fmt_clock(q.start))} “{q.text}” [{n}]"
            for n, (q, title) in enumerate(quotes, 1)]
    if lead:
        end = "" if lead.endswith((".", "!", "?")) else "."
        body.insert(0, f"{lead}{end} [{lead_n}]")
    return "\n\n".join(body)


def whole_passage(n: int, passage: Passage) -> Quote:
    """The focused passage itself as the quote (its sentences, its span)."""
    sents = sentences(passage)
    if not sents:
        return Quote(n, passage.start, passage.end, passage.text, passage.similarity)
    return Quote(n, sents[0].start, sents[-1].end, " ".join(s.text for s in sents),
                 passage.similarity, sentences=tuple(sents))
