"""The correctness judge: the answer cut into claims, each checked against the lecture.

Why not one chain-of-thought prompt: on the embedded 1.5B model, a prompt that lists the claims
and asks SUPPORTED / CONTRADICTED / NOT MENTIONED for each marks nearly every claim SUPPORTED,
a confidently wrong answer included. Asked one claim at a time with a yes/no question, the same
model separates them well when the probability of its first token is read instead of its text:
on the reference record (TensorBoard), the five claims of the right answer got P(SIM) 0.97-0.99,
"TensorBoard is a SQL database of PyTorch" 0.06 and "it only works after training ends" 0.33.
A three-way question (confirmed / contradicted / not mentioned) separated them less (0.61-0.80
against 0.17-0.27 for "confirmed"), so the verdict is two-way: the lecture confirms the claim
or it does not.

Each claim's prompt starts with the same segments, so an OpenAI-compatible server with a
prompt cache (llama.cpp) reads them once: the first claim costs the segments' prompt time,
each further claim about a second on 2 CPU threads.

The reasoning it writes is chain-of-thought shaped and reads back through
``eval.judge.parse_correctness``::

    Claims:
    - O TensorBoard é ... => SUPPORTED (P=0.98)
    - Ele só funciona ... => NOT SUPPORTED (P=0.33)
    Supported: 1 of 2 (mean P=0.66)
    Score: 1
"""

from __future__ import annotations

import json
import re
import statistics
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from eval.judge import DEFAULT_CONTEXT_CHARS, ClaimCounts, JudgeResult, format_contexts

FirstTokenFn = Callable[[list[dict[str, str]]], tuple[str, Mapping[str, float] | None]]
"""``ask(messages) -> (text, probabilities)``: a one-token completion at temperature 0, with
the probabilities of the likeliest first tokens (None when the endpoint gives no logprobs)."""

MAX_CLAIMS = 10
MIN_CLAIM_CHARS = 20
SUPPORT_AT = 0.85
"""A claim counts as supported when P(yes) is at least this (``Thresholds.support_at``). On the
reference record a wrong claim got 0.06-0.33, but on our labelled 3b1b set the subtler errors of
wrong-but-on-topic answers got 0.43-0.82 while right claims sat at 0.88-1.00."""

SYSTEM = "Você é um verificador de fatos rigoroso. Responda apenas SIM ou NÃO."
USER = (
    "TEXTO (transcrição de uma aula):\n{contexts}\n\n"
    "AFIRMAÇÃO: {claim}\n\n"
    "O TEXTO confirma a AFIRMAÇÃO? Responda SIM ou NÃO."
)
STRICT_USER = (
    "TEXTO (transcrição de uma aula):\n{contexts}\n\n"
    "AFIRMAÇÃO: {claim}\n\n"
    "Um aluno que leu só o TEXTO concordaria com a AFIRMAÇÃO sem ressalvas? "
    "Responda SIM ou NÃO."
)
"""A second, stricter reading of each claim. Asked the other way ("does the text contradict
the claim?", "does the claim contain an error?"), the embedded 1.5B model said yes more often
to the claims of a right answer than to those of a wrong one (P 0.51-0.97 against 0.32-0.67 on
three labelled answers), so that reading carries no signal on it; this wording kept the order
(0.74-0.95 right, 0.46-0.59 wrong). It starts with the same text as ``USER``, so a prompt cache
reads the segments once for both."""
REFERENCE_LABEL = "Resposta de referência do professor"

_CITATION_RE = re.compile(r"\s*\[\d+(?:\s*[,;–-]\s*\d+)*\]")
_MARKUP_RE = re.compile(r"^\s*(?:[-*•]|\d+[.)]|#+)\s*|[*_`]+")
_SPLIT_RE = re.compile(r"(?<=[.!?;])\s+|\n+")


def split_claims(answer: str, max_claims: int = MAX_CLAIMS) -> list[str]:
    """The answer's sentences, without citation markers or Markdown, as claims to check.

    Sentences split at ``. ! ? ;`` and line breaks; pieces shorter than 20 characters (list
    headings, "Sim.") are joined to the next one; at most ``max_claims``, the first ones.
    """
    claims: list[str] = []
    carry = ""
    for piece in _SPLIT_RE.split(answer):
        text = _MARKUP_RE.sub("", _CITATION_RE.sub("", piece)).strip()
        if not any(ch.isalpha() for ch in text):
            continue
        text = f"{carry} {text}".strip() if carry else text
        if len(text) < MIN_CLAIM_CHARS:
            carry = text
            continue
        carry = ""
        claims.append(text)
    if carry and claims:
        claims[-1] = f"{claims[-1]} {carry}"
    elif carry:
        claims.append(carry)
    return claims[:max_claims]


def _fold(token: str) -> str:
    text = unicodedata.normalize("NFKD", token.strip().strip("_▁").upper())
    return "".join(ch for ch in text if not unicodedata.combining(ch))


def yes_probability(text: str, probs: Mapping[str, float] | None) -> float | None:
    """P(yes) from the first token's probabilities (SIM/YES against NÃO/NO), else from the text.

    Tokens are compared case- and accent-blind, so ``Sim``, `` SIM`` and ``S`` count for yes and
    ``Não``, ``N`` for no. None when neither yes nor no can be read.
    """
    if probs:
        yes = no = 0.0
        for token, p in probs.items():
            folded = _fold(token)
            if folded and ("SIM".startswith(folded) or "YES".startswith(folded)):
                yes += p
            elif folded and ("NAO".startswith(folded) or "NO".startswith(folded)):
                no += p
        if yes + no > 0:
            return yes / (yes + no)
    folded = _fold(text)
    if folded.startswith(("SIM", "YES")):
        return 1.0
    if folded.startswith(("NAO", "NO")):
        return 0.0
    return None


def score_from_support(supported: int, total: int) -> int:
    """0..3 from the share of supported claims: all 3, at least 2/3 2, at least 1/3 1, else 0."""
    if total == 0 or supported == 0:
        return 0
    if supported == total:
        return 3
    return 2 if 3 * supported >= 2 * total else 1 if 3 * supported >= total else 0


def score_at(probabilities: Sequence[float], support_at: float) -> int:
    """0..3 for claims with these P(yes), a claim supported from ``support_at``."""
    return score_from_support(sum(p >= support_at for p in probabilities), len(probabilities))


@dataclass(frozen=True)
class ClaimVerdict:
    claim: str
    p_yes: float | None
    support_at: float = SUPPORT_AT
    p_strict: float | None = None

    @property
    def supported(self) -> bool:
        return self.p_yes is not None and self.p_yes >= self.support_at


def claim_messages(claim: str, contexts_block: str, template: str = USER
                   ) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": template.format(contexts=contexts_block, claim=claim)},
    ]


def verify_claims(
    ask: FirstTokenFn, answer: str, contexts: Sequence[str], reference_answer: str | None = None,
    *, max_chars: int = DEFAULT_CONTEXT_CHARS, max_claims: int = MAX_CLAIMS, retries: int = 1,
    support_at: float = SUPPORT_AT, strict: bool = False,
) -> JudgeResult:
    """Check each claim of ``answer`` against the segments (and the reference answer).

    The score (0..3) comes from the share of claims whose P(yes) is at least ``support_at``
    (their probabilities are kept in ``JudgeResult.probabilities``); a claim whose
    reply cannot be read is retried, then left out of the share and named in the reasoning.
    No readable claim at all: score None with the reason in ``error``. Errors raised by ``ask``
    propagate. With ``strict``, each readable claim is also asked ``STRICT_USER`` and that
    P(yes) kept in ``JudgeResult.strict``.
    """
    texts = list(contexts)
    if reference_answer and reference_answer.strip():
        texts.append(f"{REFERENCE_LABEL}: {reference_answer.strip()}")
    block = format_contexts(texts, max_chars)
    claims = split_claims(answer, max_claims)
    if not claims:
        return JudgeResult(score=None, reasoning="", raw=answer, error="the answer has no claims")
    verdicts: list[ClaimVerdict] = []
    attempts = 0
    for claim in claims:
        verdict, asked = _claim_verdict(ask, claim, block, retries, support_at, strict)
        verdicts.append(verdict)
        attempts += asked
    return _claims_result(verdicts, attempts)


def _claim_verdict(ask: FirstTokenFn, claim: str, block: str, retries: int,
                   support_at: float, strict: bool) -> tuple[ClaimVerdict, int]:
    """One claim's P(yes), asked again while unreadable (and the strict P(yes) when asked for),
    and how many replies that took."""
    p: float | None = None
    attempts = 0
    for _ in range(1 + max(0, retries)):
        attempts += 1
        text, probs = ask(claim_messages(claim, block))
        p = yes_probability(text, probs)
        if p is not None:
            break
    p_strict = None
    if strict and p is not None:
        attempts += 1
        text, probs = ask(claim_messages(claim, block, STRICT_USER))
        p_strict = yes_probability(text, probs)
    return ClaimVerdict(claim, p, support_at, p_strict), attempts


def _claims_result(verdicts: list[ClaimVerdict], attempts: int) -> JudgeResult:
    """The score from the share of readable claims supported, with the reasoning that lists
    each claim; score None when no claim could be read."""
    readable = [v for v in verdicts if v.p_yes is not None]
    reasoning = _reasoning(verdicts)
    if not readable:
        return JudgeResult(score=None, reasoning=reasoning, raw=reasoning, attempts=attempts,
                           error=f"no claim could be read after {attempts} replies")
    supported = sum(v.supported for v in readable)
    score = score_from_support(supported, len(readable))
    mean_p = statistics.fmean(v.p_yes for v in readable if v.p_yes is not None)
    reasoning += (f"\nSupported: {supported} of {len(readable)} (mean P={mean_p:.2f})"
                  f"\nScore: {score}")
    return JudgeResult(
        score=score,
        reasoning=reasoning,
        raw=reasoning,
        claims=ClaimCounts(supported=supported, contradicted=0,
                           not_mentioned=len(readable) - supported),
        samples=(score,),
        attempts=attempts,
        probabilities=tuple(round(v.p_yes, 4) for v in readable if v.p_yes is not None),
        strict=tuple(round(v.p_strict, 4) for v in readable if v.p_strict is not None)
        if all(v.p_strict is not None for v in readable) else (),
    )


_P_RE = re.compile(r"=> (?:NOT )?SUPPORTED \(P=([0-9.]+)[;)]")


def probabilities_in(reasoning: str) -> list[float]:
    """The claims' P(yes) written in a reasoning of ``verify_claims``, in order."""
    return [float(x) for x in _P_RE.findall(reasoning)]


def recorded_probabilities(item: Mapping[str, object]) -> list[float]:
    """The claims' P(yes) of a judged item: ``correctness_claim_p`` (a list, or its JSON text
    from a CSV), else read from ``correctness_reasoning`` (runs judged before it was stored)."""
    value = item.get("correctness_claim_p")
    if isinstance(value, str) and value.strip().startswith("["):
        value = json.loads(value)
    if isinstance(value, list | tuple) and value:
        return [float(v) for v in value]
    why = item.get("correctness_reasoning")
    return probabilities_in(why) if isinstance(why, str) else []


def _reasoning(verdicts: Sequence[ClaimVerdict]) -> str:
    lines = ["Claims:"]
    for v in verdicts:
        if v.p_yes is None:
            lines.append(f"- {v.claim} => UNREADABLE")
        else:
            verdict = "SUPPORTED" if v.supported else "NOT SUPPORTED"
            strict = "" if v.p_strict is None else f"; sem ressalvas P={v.p_strict:.2f}"
            lines.append(f"- {v.claim} => {verdict} (P={v.p_yes:.2f}{strict})")
    return "\n".join(lines)
