"""The judge's signals beyond AR and the claim check, and the feature row a label model reads.

Two more yes/no questions, read from the first token's probability like the claim check
(``eval.claims``), each a short prompt without the lecture text:

- ``coverage``: does the answer address what the question asks? A correct fact that answers
  another question is I for an instructor, whatever the claim check says.
- ``reference_agreement``: does the answer say what the instructor's reference answer says,
  without contradicting it? Only where the item has a reference answer.

One more reads how much the reference answer makes the answer more likely for a language
model (``reference_gain``, and ``reference_gain_low`` for its worst stretch;
``eval.likelihood``): it needs a scorer run in this process. The same reading after the
lecture's text instead of a reference answer (``evidence_gain``, ``evidence_gain_low``) needs
no reference: the signal for answers nobody wrote a reference for.

An answer given with neither a gold span nor a reference answer (a new set of student
answers, question and answer only) gets the evidence gain and the lecture's words read at the
passage the retriever puts first for the question and the answer together
(``located_signals``, ``LOCATED_FEATURES``): where the lecture most likely says what the
answer should. Its claim check reads retrieved passages, which confirm right and wrong answers
alike, so the label model reads these instead (``eval.label_model``).

Two more read the words alone, no LLM, where the item has a reference answer in the answer's
language (``reference_words``): the share of the answer's content words (stems, accents folded,
stop words dropped) that neither the reference answer nor the question says (``novelty``: a
wrong detail brings words of its own), and the share of the reference's words beyond the
question that the answer says (``recall``: a vague answer says little of it). On the judge
bench's fitting part, novelty alone labelled questions left out of the fit better than any LLM
signal of the embedded model (docs/judges.md).

``features`` turns a judged item (its stored columns) into the named numbers a label model
(``eval.label_model``) is fitted on; a signal the item lacks is None. Beside the signals it
says whether the answer is this service's own (``AULA_ANSWER``: the item's ``origin`` is
``AULA``, set by ``aula eval`` on the answers it generates and by the service's judge, or given
as a column of a judged file): the label model reads those with submodels of their own.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from corpus.bm25 import tokenize
from corpus.language import detect_language
from eval.claims import (
    MAX_CLAIMS,
    SUPPORT_AT,
    FirstTokenFn,
    recorded_probabilities,
    yes_probability,
)
from eval.likelihood import GAIN_FEATURES, ContinuationScorer, answer_gains

SYSTEM = "Você é um professor que avalia respostas com rigor. Responda apenas SIM ou NÃO."
COVERAGE = (
    "PERGUNTA de um aluno: {question}\n\n"
    "RESPOSTA: {answer}\n\n"
    "A RESPOSTA responde ao que a PERGUNTA pede (não a outra pergunta, nem de forma vaga)? "
    "Responda SIM ou NÃO."
)
AGREES = (
    "PERGUNTA de um aluno: {question}\n\n"
    "RESPOSTA DE REFERÊNCIA do professor: {reference}\n\n"
    "RESPOSTA a avaliar: {answer}\n\n"
    "A RESPOSTA a avaliar diz o mesmo que a RESPOSTA DE REFERÊNCIA, sem contradizê-la em nenhum "
    "ponto? Responda SIM ou NÃO."
)
MAX_ANSWER_CHARS = 3000


def _ask(ask: FirstTokenFn, template: str, **fields: str) -> float | None:
    text, probs = ask([{"role": "system", "content": SYSTEM},
                       {"role": "user", "content": template.format(**fields)}])
    return yes_probability(text, probs)


def coverage(ask: FirstTokenFn, question: str, answer: str) -> float | None:
    """P(the answer addresses what the question asks); None when the reply cannot be read."""
    return _ask(ask, COVERAGE, question=question, answer=answer[:MAX_ANSWER_CHARS])


def reference_agreement(ask: FirstTokenFn, question: str, answer: str, reference: str
                        ) -> float | None:
    """P(the answer says what the reference answer says, contradicting it nowhere)."""
    return _ask(ask, AGREES, question=question, reference=reference[:MAX_ANSWER_CHARS],
                answer=answer[:MAX_ANSWER_CHARS])


def reference_words(question: str, answer: str, reference: str | None
                    ) -> dict[str, float] | None:
    """``novelty`` and ``recall`` of the answer's words against the reference answer; None
    without a reference, or when the answer is in another language than the reference (its
    words could not match)."""
    if not reference or not reference.strip() or not answer.strip():
        return None
    if detect_language(answer) != detect_language(reference):
        return None
    said, asked, ref = set(tokenize(answer)), set(tokenize(question)), set(tokenize(reference))
    if not said:
        return None
    beyond = ref - asked
    return {"novelty": len(said - ref - asked) / len(said),
            "recall": len(beyond & said) / len(beyond) if beyond else 1.0}


AULA = "aula"
"""The ``origin`` of an answer this service's answerer wrote."""
AULA_ANSWER = "aula_answer"
"""The feature row's key: 1.0 for an answer of this service's, else 0.0 (never a candidate
signal: it chooses the submodel, ``eval.label_model``)."""

FEATURES = (
    "ar", "claim_mean", "claim_min", "claim_share", "claim_count", "strict_mean", "strict_min",
    "coverage", "reference_agree", "reference_novelty", "reference_recall", "reference_gain",
    "reference_gain_low", "evidence_gain", "evidence_gain_low", "evidence_novelty",
    "evidence_recall", "located_gain", "located_gain_low", "located_novelty", "located_recall",
    "located_match", "located_match_late",
)
"""Every signal a label model may use, in this order."""
JUDGE_FEATURES = ("ar", "claim_mean", "claim_min", "claim_share", "claim_count", "strict_mean",
                  "strict_min", "coverage", "reference_agree")
"""The signals the judge's LLM gives (AR's chain of thought, the claim check, the yes/no
questions): the slow part of judging an answer. The others are the answer's words and the
scorer's likelihood gains, a few seconds an answer."""
REFERENCE_READ_FEATURES = ("reference_novelty", "reference_recall", "reference_gain",
                           "reference_gain_low")
"""An answer read against its reference answer without the judge's LLM: its words and its
likelihood gains, what ``aula judge`` labels such an answer from unless asked for the LLM's
reasoning (about four times as fast; on one writer's answers less accurate than with the LLM's
signals, on another's as accurate: docs/judges.md)."""
LOCATED_FEATURES = ("located_gain", "located_gain_low", "located_novelty", "located_recall",
                    "located_match", "located_match_late")
"""The evidence gain, the lecture's words and the token match read at the passage the
retriever puts first for the question and the answer (``located_signals``), for an answer
given with neither a gold span nor a reference answer: where the lecture most likely answers."""
MATCH_FEATURES = ("located_match", "located_match_late")
"""The located passage matched token by token: on the scale of the E5 model that read them
(``match_model`` of the item and of the label model)."""
QUESTION_FEATURES = ("ar", "coverage", "claim_count")
"""The signals read from the question and the answer alone, the same whatever evidence the
claims were checked against: the ones a label model for located passages reads beside them."""
REFERENCE_FEATURES = ("reference_agree", "reference_novelty", "reference_recall",
                      "reference_gain", "reference_gain_low")
"""The signals only an item with a reference answer has."""
LIKELIHOOD_FEATURES = (*GAIN_FEATURES, "located_gain", "located_gain_low")
"""The signals that need a likelihood scorer (``eval.likelihood``); the evidence gain needs no
reference answer, only the lecture text the answer is judged on."""
EVIDENCE_WORD_FEATURES = ("evidence_novelty", "evidence_recall")
"""The words of the answer against the lecture's text at the gold span (``evidence_words``)."""
EVIDENCE_FEATURES = ("evidence_gain", "evidence_gain_low", *EVIDENCE_WORD_FEATURES)
"""The signals only an item judged at a gold span has."""
WORD_FEATURES = ("reference_novelty", "reference_recall", *EVIDENCE_WORD_FEATURES,
                 "located_novelty", "located_recall")
"""The signals that need the answer in the language of the text they read it against (the
reference answer, the lecture): its words must match."""


def _floats(value: Any) -> list[float]:
    if isinstance(value, str) and value.strip().startswith("["):
        value = json.loads(value)
    if isinstance(value, list | tuple):
        return [float(v) for v in value if v is not None]
    return []


def _number(value: Any) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return None if x != x else x  # NaN from a CSV cell


def features(item: Mapping[str, Any], support_at: float = SUPPORT_AT
             ) -> dict[str, float | None]:
    """The signals of a judged item as named numbers on 0..1 (None where not measured)."""
    ps = recorded_probabilities(item)
    strict = _floats(item.get("correctness_strict_p"))
    ar = _number(item.get("ar_score"))
    words = _words(item)
    return {
        "ar": None if ar is None else ar / 3,
        "claim_mean": statistics.fmean(ps) if ps else None,
        "claim_min": min(ps) if ps else None,
        "claim_share": sum(p >= support_at for p in ps) / len(ps) if ps else None,
        # how much the answer says: a vague answer has few claims to check
        "claim_count": min(len(ps), MAX_CLAIMS) / MAX_CLAIMS if ps else None,
        "strict_mean": statistics.fmean(strict) if strict else None,
        "strict_min": min(strict) if strict else None,
        "coverage": _number(item.get("coverage_p")),
        "reference_agree": _number(item.get("reference_agree_p")),
        "reference_novelty": words[0],
        "reference_recall": words[1],
        "reference_gain": _number(item.get("reference_gain")),
        "reference_gain_low": _number(item.get("reference_gain_low")),
        "evidence_gain": _number(item.get("evidence_gain")),
        "evidence_gain_low": _number(item.get("evidence_gain_low")),
        "evidence_novelty": _number(item.get("evidence_novelty")),
        "evidence_recall": _number(item.get("evidence_recall")),
        **{name: _number(item.get(name)) for name in LOCATED_FEATURES},
        AULA_ANSWER: 1.0 if item.get("origin") == AULA else 0.0,
    }


def evidence_words(question: str, answer: str, lecture_text: str | None
                   ) -> dict[str, float | None]:
    """``reference_words`` read against the lecture's text at the item's gold span instead of
    a reference answer, as ``evidence_novelty`` and ``evidence_recall`` (None without that text
    or when the answer is in another language than the lecture). The span says more than an
    answer needs, so recall is low for every answer; it is the difference that tells: a right
    answer says more of the span's words, a wrong one brings more words the span does not say."""
    got = reference_words(question, answer, lecture_text)
    return {"evidence_novelty": None if got is None else got["novelty"],
            "evidence_recall": None if got is None else got["recall"]}


def located_query(question: str, answer: str) -> str:
    """What the judge searches the lectures with to locate where they say what an answer
    should: the question and the answer together. On the judge set's 170 answers the first
    passage found so overlaps the gold span for 141, against 120 searched with the question
    alone (docs/judges.md)."""
    return f"{question} {answer}"


class TokenMatcher(Protocol):
    """What matches an answer to a passage token by token: ``corpus.embed.E5Embedder``."""

    model_id: str

    def token_vectors(self, text: str) -> Sequence[np.ndarray]:
        """``text``'s token vectors, one array (tokens × dimensions, unit rows) per layer
        read (the middle layer, then three quarters deep)."""
        ...


def token_recall(answer: np.ndarray, passage: np.ndarray) -> float | None:
    """How much of ``passage`` the answer says, read token by token: each passage token's best
    cosine with any token of the answer, averaged (BERTScore's recall). A right answer restates
    the passage's point in any words; a wrong one matches it only where it shares the topic."""
    if not len(answer) or not len(passage):
        return None
    return float((passage @ answer.T).max(axis=1).mean())


def located_signals(question: str, answer: str, passage: str,
                    scorer: ContinuationScorer | None,
                    matcher: TokenMatcher | None = None) -> dict[str, Any]:
    """``evidence_words``, (with a scorer) the evidence gain and (with a ``matcher``) the token
    match and the ``match_model`` that read it, read against ``passage``, the text the
    retriever puts first for ``located_query``, as the ``LOCATED_FEATURES``: for an answer
    given with neither a gold span nor a reference answer, what the lecture most likely says
    where it answers. The match, like the words, is
    read only for an answer in the passage's language (docs/judges.md)."""
    words = evidence_words(question, answer, passage)
    out: dict[str, Any] = {"located_novelty": words["evidence_novelty"],
                           "located_recall": words["evidence_recall"],
                           "located_gain": None, "located_gain_low": None,
                           "located_match": None, "located_match_late": None,
                           "match_model": None}
    if scorer is not None:
        gains = answer_gains(scorer, question, answer, None, passage)
        out["located_gain"] = gains["evidence_gain"]
        out["located_gain_low"] = gains["evidence_gain_low"]
    if matcher is not None and words["evidence_novelty"] is not None:
        mid, late = zip(matcher.token_vectors(answer), matcher.token_vectors(passage),
                        strict=True)
        out["located_match"] = token_recall(*mid)
        out["located_match_late"] = token_recall(*late)
        out["match_model"] = matcher.model_id
    return out


def _words(item: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """The stored word signals, or (for an item judged before they existed) measured now."""
    if "reference_novelty" in item:
        return _number(item.get("reference_novelty")), _number(item.get("reference_recall"))
    reference = item.get("reference_answer")
    answer = item.get("answer")
    if not isinstance(reference, str) or not isinstance(answer, str):
        return None, None
    got = reference_words(str(item.get("question") or ""), answer, reference)
    return (None, None) if got is None else (got["novelty"], got["recall"])
