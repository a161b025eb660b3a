"""LLM-as-judge prompts as typed data, each next to the parser of the reply it asks for.

Two judges, both replying in chain-of-thought form and ending with ``Score: N`` (0..3):

- ``RELEVANCE``: answer relevance with chain-of-thought reasons, in the style of TruLens
  (``Criteria: ... Supporting Evidence: ... Score: N``); the study's AR is ``score / 3``.
- ``CORRECTNESS``: checks the answer's claims against the retrieved segments (and a reference
  answer when there is one), because relevance gives 3 to an on-topic answer that is wrong.

The judge is a small local model (1.5B parameters, 8k tokens of context), so prompts are short
and the segments are cut to a character budget by ``format_contexts``. Nothing here talks to a
model: ``judge_item`` takes any ``ChatFn`` (messages in, reply text out).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from string import Formatter
from typing import Any

from corpus.context import CONTEXT_CHARS, numbered

ChatFn = Callable[[list[dict[str, str]]], str]
"""``chat(messages) -> reply``: one OpenAI-style chat completion (sampling settings are the
caller's; with ``samples > 1`` it should sample, e.g. temperature 0.7)."""

MAX_SCORE = 3
DEFAULT_CONTEXT_CHARS = CONTEXT_CHARS
"""The answerer's budget (``Settings.llm.context_chars``): the judge reads what the answerer
read."""


@dataclass(frozen=True)
class ClaimCounts:
    """How many of the answer's claims the correctness judge marked each way."""

    supported: int
    contradicted: int
    not_mentioned: int

    @property
    def total(self) -> int:
        return self.supported + self.contradicted + self.not_mentioned


@dataclass(frozen=True)
class JudgeResult:
    """A parsed judge reply: ``score`` is None (never 0) when the reply could not be read."""

    score: int | None
    reasoning: str
    raw: str
    error: str | None = None
    claims: ClaimCounts | None = None
    addresses_question: bool | None = None
    samples: tuple[int, ...] = ()
    attempts: int = 1
    probabilities: tuple[float, ...] = ()
    """The claim checker's P(yes) of each readable claim (``eval.claims``)."""
    strict: tuple[float, ...] = ()
    """A stricter reading (``eval.claims.STRICT_USER``): its P(yes) of each readable claim."""

    @property
    def fraction(self) -> float | None:
        """The score on 0..1 (AR = score / 3), or None when missing."""
        return None if self.score is None else self.score / MAX_SCORE


@dataclass(frozen=True)
class Prompt:
    """A judge prompt: system text, a ``str.format`` user template, and its reply parser."""

    system: str
    user_template: str
    parse: Callable[[str], JudgeResult]
    name: str = ""

    @property
    def fields(self) -> tuple[str, ...]:
        """The names the user template needs."""
        names = (name for _, name, _, _ in Formatter().parse(self.user_template) if name)
        return tuple(dict.fromkeys(names))


def build_messages(prompt: Prompt, **fields: Any) -> list[dict[str, str]]:
    """OpenAI chat messages for ``prompt`` filled with ``fields`` (all its fields required)."""
    missing = [name for name in prompt.fields if name not in fields]
    if missing:
        raise ValueError(f"prompt {prompt.name or '?'} needs fields: {', '.join(missing)}")
    return [
        {"role": "system", "content": prompt.system},
        {"role": "user", "content": prompt.user_template.format(**fields)},
    ]


def format_contexts(texts: Sequence[str], max_chars: int = DEFAULT_CONTEXT_CHARS) -> str:
    """Segments numbered ``[1] ...`` in rank order, cut to share ``max_chars`` fairly (the
    answerer's water-filling, ``corpus.context``)."""
    return numbered(texts, max_chars)


# ---------------------------------------------------------------------------------------------
# Score extraction shared by the parsers.

_THINK_RE = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)
_SCORE_RE = re.compile(
    r"(?<![A-Za-z])(?:score|pontua[cç][aã]o|nota)\b[ \t*_]*[:=][ \t*_]*"
    r"(-?\d+(?:[.,]\d+)?)(?:[ \t*_]*/[ \t*_]*(\d+))?",
    re.IGNORECASE,
)


def _strip_thinking(text: str) -> str:
    return _THINK_RE.sub("", text).strip()


def _extract_score(text: str) -> tuple[int | None, str | None]:
    """The last ``Score: N`` in ``text`` (0..3), or None with the reason."""
    matches = list(_SCORE_RE.finditer(text))
    if not matches:
        return None, "no score found"
    number, scale = matches[-1].group(1).replace(",", "."), matches[-1].group(2)
    if scale is not None and int(scale) != MAX_SCORE:
        return None, f"score {number}/{scale} is not on the 0-{MAX_SCORE} scale"
    value = float(number)
    if not value.is_integer():
        return None, f"score {number} is not a whole number"
    if not 0 <= value <= MAX_SCORE:
        return None, f"score {number} is outside 0-{MAX_SCORE}"
    return int(value), None


def _reasoning(text: str) -> str:
    start = re.search(r"criteria\s*:", text, re.IGNORECASE)
    return text[start.start() :].strip() if start else text.strip()


def parse_relevance(text: str) -> JudgeResult:
    """Read a ``Criteria / Supporting Evidence / Score: N`` reply; the last score wins."""
    body = _strip_thinking(text)
    score, error = _extract_score(body)
    return JudgeResult(score=score, reasoning=_reasoning(body), raw=text, error=error)


_VERDICT_RE = re.compile(
    r"\b(not[ _-]?mentioned|not[ _-]?supported|contradicted|unsupported|supported)\b",
    re.IGNORECASE,
)
_ITEM_RE = re.compile(r"^\s*(?:[-*•]|\d+[.)]|claim\s*\d*\s*:)", re.IGNORECASE)
_ADDRESSES_RE = re.compile(
    r"addresses(?: the)? question\W*?\s*(yes|no|partly|partially)\b", re.IGNORECASE
)


def parse_correctness(text: str) -> JudgeResult:
    """Read a correctness reply: claim verdicts (counted), whether it answers, ``Score: N``."""
    body = _strip_thinking(text)
    score, error = _extract_score(body)
    counts = {"supported": 0, "contradicted": 0, "not_mentioned": 0}
    found = False
    for line in body.splitlines():
        if not _ITEM_RE.match(line):
            continue
        verdicts = _VERDICT_RE.findall(line.split("=>")[-1]) or _VERDICT_RE.findall(line)
        if not verdicts:
            continue
        verdict = verdicts[-1].lower().replace("_", " ").replace("-", " ")
        key = {"supported": "supported", "contradicted": "contradicted"}.get(
            verdict, "not_mentioned"
        )
        counts[key] += 1
        found = True
    addresses = _ADDRESSES_RE.search(body)
    return JudgeResult(
        score=score,
        reasoning=body,
        raw=text,
        error=error,
        claims=ClaimCounts(**counts) if found else None,
        addresses_question=None if not addresses else addresses.group(1).lower() == "yes",
    )


# ---------------------------------------------------------------------------------------------
# The prompts.

_COT_TEMPLATE = """Answer using this entire template:
Criteria: <the criteria for this evaluation>
Supporting Evidence: <your reasons for the score, step by step, tied to the criteria>
Score: <0, 1, 2 or 3>"""

RELEVANCE = Prompt(
    name="answer_relevance",
    system=f"""You are a RELEVANCE grader: you rate how relevant the RESPONSE is to the PROMPT.
Texts may be in Portuguese; write your reasoning in English.
Scoring guidelines (0 is lowest, 3 is highest):
- Long and short RESPONSES can score equally well.
- Refusals and non-answers such as "I don't know" get 0.
- A RESPONSE relevant to none of the PROMPT gets 0; to some of it, 1; to most of it, 2;
  to the entire PROMPT, 3.
- A RESPONSE that is confidently FALSE, or only seemingly relevant, gets 0.

{_COT_TEMPLATE}""",
    user_template="PROMPT: {question}\n\nRESPONSE: {answer}\n\nRELEVANCE:",
    parse=parse_relevance,
)

CORRECTNESS = Prompt(
    name="correctness",
    system="""You check whether an ANSWER to a QUESTION about a lecture is correct.
The SEGMENTS are transcript excerpts of the lecture (spoken Portuguese, may be noisy); a
REFERENCE answer may also be given. Write your reasoning in English.
For each key claim of the ANSWER, say whether the SEGMENTS or the REFERENCE support it
(SUPPORTED), contradict it (CONTRADICTED) or do not mention it (NOT MENTIONED).
Scores:
3 = all key claims supported and the answer addresses the question;
2 = mostly supported, minor gaps;
1 = partly wrong or mostly unsupported;
0 = contradicted or wrong, or does not answer the question.

Answer using this template:
Claims:
- <claim> => <SUPPORTED, CONTRADICTED or NOT MENTIONED>
Addresses question: <YES or NO>
Score: <0, 1, 2 or 3>""",
    user_template=(
        "QUESTION: {question}\n\nSEGMENTS:\n{contexts}\n\nREFERENCE: {reference}\n\n"
        "ANSWER: {answer}\n\nCHECK:"
    ),
    parse=parse_correctness,
)


def correctness_fields(
    question: str,
    answer: str,
    contexts: Sequence[str],
    reference_answer: str | None = None,
    max_chars: int = DEFAULT_CONTEXT_CHARS,
) -> dict[str, str]:
    """The fields ``CORRECTNESS`` needs, segments numbered and cut to ``max_chars``."""
    return {
        "question": question,
        "answer": answer,
        "contexts": format_contexts(contexts, max_chars),
        "reference": reference_answer.strip() if reference_answer else "(none)",
    }


# ---------------------------------------------------------------------------------------------
# Running a judge.


def judge_item(
    chat: ChatFn,
    prompt: Prompt,
    fields: Mapping[str, Any],
    retries: int = 2,
    samples: int = 1,
) -> JudgeResult:
    """Ask ``chat`` to judge one item; retry unreadable replies, take the median of samples.

    Each sample gets up to ``1 + retries`` calls. With several readable samples the result is
    the first whose score equals the lower median. If no reply is readable the score is None,
    ``error`` says why and ``raw`` keeps the last reply. Errors raised by ``chat`` propagate.
    """
    messages = build_messages(prompt, **fields)
    readable: list[JudgeResult] = []
    last: JudgeResult | None = None
    attempts = 0
    for _ in range(max(1, samples)):
        for _ in range(1 + max(0, retries)):
            attempts += 1
            last = prompt.parse(chat(messages))
            if last.score is not None:
                readable.append(last)
                break
    assert last is not None
    if not readable:
        return replace(
            last,
            score=None,
            error=f"unreadable after {attempts} replies: {last.error}",
            attempts=attempts,
        )
    scores = [r.score for r in readable if r.score is not None]
    median = int(statistics.median_low(scores))
    chosen = next(r for r in readable if r.score == median)
    return replace(chosen, samples=tuple(scores), attempts=attempts)
