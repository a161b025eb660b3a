"""Training questions without an LLM: each passage's most specific sentence, taken out of it,
stands for a question the rest of the passage answers (the inverse cloze task of ORQA, Lee et
al. 2019). Written in a second where the LLM's questions take hours on 2 cores; on both benches'
courses the adapted gate reads a model so trained about as well as one trained on as many
LLM-written questions (the same answers on the test halves; docs/answers.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from corpus.adapt.questions import GeneratedQuestion, Passage, specific_words
from corpus.text import SENTENCE_BREAK

FROM_SENTENCES = "passage sentence"
"""The ``model`` of a question that is a sentence of its passage."""
MIN_CHARS = 40
MAX_CHARS = 250
"""A sentence shorter than this says too little to stand for a question; a longer one is most
of its passage."""
MIN_WORDS = 2
"""Specific words (``specific_words``) a sentence names to stand for a question."""


def cloze_question(passage: Passage) -> GeneratedQuestion | None:
    """The passage's sentence that names the most specific words, as its question; None when
    no sentence of a fitting length names ``MIN_WORDS``."""
    sentences = [s.strip() for s in SENTENCE_BREAK.split(passage.text)]
    scored = [(len(specific_words(s)), s) for s in sentences if MIN_CHARS <= len(s) <= MAX_CHARS]
    if not scored:
        return None
    named, best = max(scored, key=lambda ns: ns[0])  # the first of the most specific
    if named < MIN_WORDS:
        return None
    return GeneratedQuestion(passage.key, passage.lecture_id, passage.start, passage.end, best,
                             FROM_SENTENCES)


def cloze_questions(candidates: Sequence[Passage], target: int) -> list[GeneratedQuestion]:
    """Questions for the first ``target`` passages of ``candidates`` that have one."""
    out: list[GeneratedQuestion] = []
    for passage in candidates:
        if len(out) >= target:
            break
        if (q := cloze_question(passage)) is not None:
            out.append(q)
    return out


def taken_out(question: GeneratedQuestion, positive: str) -> str:
    """The passage a question was taken from, without it (a question written by an LLM:
    the passage as it is)."""
    if question.model != FROM_SENTENCES or not question.question:
        return positive
    return " ".join(positive.replace(question.question, " ").split())
