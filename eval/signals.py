"""The judge's signals beyond AR and the claim check, and the feature row a label model reads.

Two more yes/no questions, read from the first token's probability like the claim check
(``eval.claims``), each a short prompt without the lecture text:

- ``coverage``: does the answer address what the question asks? A correct fact that answers
  another question is I for an instructor, whatever the claim check says.
- ``reference_agreement``: does the answer say what the instructor's reference answer says,
  without contradicting it? Only where the item has a reference answer.

``features`` turns a judged item (its stored columns) into the named numbers a label model
(``eval.label_model``) is fitted on; a signal the item lacks is None.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from typing import Any

from eval.claims import MAX_CLAIMS, FirstTokenFn, recorded_probabilities, yes_probability

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


FEATURES = (
    "ar", "claim_mean", "claim_min", "claim_share", "claim_count", "strict_mean", "strict_min",
    "coverage", "reference_agree",
)
"""Every signal a label model may use, in this order."""


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


def features(item: Mapping[str, Any], support_at: float = 0.85) -> dict[str, float | None]:
    """The signals of a judged item as named numbers on 0..1 (None where not measured)."""
    ps = recorded_probabilities(item)
    strict = _floats(item.get("correctness_strict_p"))
    ar = _number(item.get("ar_score"))
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
    }
