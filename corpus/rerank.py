"""Rerankers: reorder the first fused hits of a question (the ``Reranker`` protocol of
``corpus.retrieve``).

- ``CrossEncoderReranker``: a sentence-transformers cross-encoder loaded from a local folder or
  the Hugging Face cache (``AULA_RERANK_MODEL``; e.g. a multilingual MiniLM or bge reranker),
  never downloaded at run time.
- The LLM's first-token yes/no relevance lives with the answerer's evidence check
  (``answer.evidence.LLMReranker``): the same prompt and the same P(SIM), written once.

A reranker scores each hit's focus text: the unit around ``answer_start`` when the index has
units, which is what a student would read first, else the window.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from corpus.models import Hit

RERANK_CHARS = 900
"""Characters of a hit shown to the reranker, from its answer start."""


class RerankModelError(RuntimeError):
    """The configured reranking model cannot be loaded offline."""


def rerank_text(hit: Hit, chars: int = RERANK_CHARS) -> str:
    """The part of the window a reranker reads: from about ``answer_start`` on (by the share
    of the window's duration), ``chars`` characters."""
    text = " ".join(hit.text.split())
    if len(text) <= chars:
        return text
    span = max(hit.end - hit.start, 1e-6)
    at = int(len(text) * max(0.0, min(1.0, (hit.link_start - hit.start) / span)))
    at = max(0, min(at, len(text) - chars))
    head = text.rfind(" ", 0, at) + 1 if at else 0
    return text[head : head + chars]


def reorder(hits: Sequence[Hit], scores: Sequence[float | None]) -> list[Hit]:
    """Hits by score, best first; unscored ones keep their order after the scored ones."""
    keyed = [(-(s if s is not None else -np.inf), i) for i, s in enumerate(scores)]
    return [hits[i] for _, i in sorted(keyed)]


class CrossEncoderReranker:
    """A cross-encoder over (question, hit text) pairs."""

    def __init__(self, model: str, *, device: str | None = None, batch_size: int = 16) -> None:
        from sentence_transformers import CrossEncoder

        self.name = f"cross-encoder:{model}"
        self.batch_size = batch_size
        try:
            self.model = CrossEncoder(model, device=device, local_files_only=True)
        except Exception as exc:  # the library raises many kinds for "not found offline"
            raise RerankModelError(
                f"cannot load reranking model {model!r} offline: {exc}. Put it in the Hugging "
                "Face cache or give a local folder in AULA_RERANK_MODEL."
            ) from exc

    def scores(self, question: str, hits: Sequence[Hit]) -> list[float]:
        if not hits:
            return []
        pairs = [(question, rerank_text(h)) for h in hits]
        out = self.model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
        return [float(x) for x in np.asarray(out).reshape(-1)]

    def rerank(self, question: str, hits: list[Hit]) -> list[Hit]:
        scores = self.scores(question, hits)
        return reorder(hits, scores)


class ScoreReranker:
    """A reranker from any ``scores(question, texts) -> P`` function (the LLM check)."""

    def __init__(self, name: str, scores: Callable[[str, list[str]], Sequence[float | None]]
                 ) -> None:
        self.name = name
        self._scores = scores

    def rerank(self, question: str, hits: list[Hit]) -> list[Hit]:
        return reorder(hits, self._scores(question, [rerank_text(h) for h in hits]))


LogProbs = Callable[[list[dict[str, str]], str], list[float]]
"""Log-probabilities of a reply's tokens as the assistant's answer to a conversation
(``eval.likelihood.ContinuationScorer.logprobs``)."""

QUESTION_PROMPTS = {
    "pt": ("Trecho da transcrição de uma aula:\n{passage}\n\n"
           "Escreva uma pergunta de um aluno que este trecho responde."),
    "en": ("Excerpt from a lecture transcript:\n{passage}\n\n"
           "Write a student's question that this excerpt answers."),
}
QUESTION_SYSTEM = {
    "pt": "Você é um professor que responde dúvidas de alunos sobre a aula.",
    "en": "You are a teacher who answers students' questions about the lecture.",
}


FUSION_PRIOR = 0.3
"""Weight of the fused order beside the query likelihood (``with_prior``), chosen on the 74
fitting questions (``bench/data/questions_3b1b_dev.jsonl`` and the fitting half of
``answers_3b1b.jsonl``) among 0-0.5 for span-hit@1 + MRR@10 with the embedded model
(docs/search.md)."""


def with_prior(scores: Sequence[float | None], prior: float) -> list[float | None]:
    """Scores of hits in fused order plus ``prior`` times minus the log of each one's fused
    rank: the likelihood decides, and the fusion settles what the likelihood barely tells
    apart (neighbouring windows share half their text). An unscored hit stays unscored."""
    return [None if s is None else s - prior * float(np.log(i + 1))
            for i, s in enumerate(scores)]


class LikelihoodReranker:
    """Query likelihood: how likely a language model finds the student's question as one the
    hit's text answers (the mean log-probability of the question's tokens after the passage,
    as in UPR, Sachan et al. 2022). A passage that answers the question makes its words
    predictable; one on the same subject but another point does less so. The prompt is in the
    question's language.

    It needs the log-probabilities of a given text, so the model runs in this process
    (``app.lm_scorer``); about 1.3 s a hit on 2 CPU cores in bfloat16 for the embedded 1.5B
    model."""

    def __init__(self, logprobs: LogProbs, *, name: str = "likelihood",
                 load: Callable[[], None] | None = None, prior: float = FUSION_PRIOR) -> None:
        from corpus.language import detect_language

        self.name = name
        self.prior = prior
        self._logprobs = logprobs
        self._language = detect_language
        self._load = load

    def load(self) -> None:
        """Load the model now (the service's start-up) rather than on the first question."""
        if self._load is not None:
            self._load()

    def scores(self, question: str, hits: Sequence[Hit]) -> list[float | None]:
        lang = "en" if self._language(question) == "en" else "pt"
        reply = question.strip()
        out: list[float | None] = []
        for h in hits:
            prompt = QUESTION_PROMPTS[lang].format(passage=rerank_text(h))
            lp = self._logprobs([{"role": "system", "content": QUESTION_SYSTEM[lang]},
                                 {"role": "user", "content": prompt}], reply)
            out.append(float(np.mean(lp)) if lp else None)
        return out

    def rerank(self, question: str, hits: list[Hit]) -> list[Hit]:
        return reorder(hits, with_prior(self.scores(question, hits), self.prior))
