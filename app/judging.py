"""One judging pipeline for every judge the product runs: the service's background judge,
``aula review judge``, ``aula eval`` and ``aula judge``.

All of them take the judge client the same way (``AULA_JUDGE_BASE_URL`` when set, else the
answerer's LLM), judge with ``eval.run.evaluate_item`` (AR chain of thought, claim-by-claim
correctness, the C/PC/I label) and label with the same thresholds: the file named by
``AULA_LABEL_THRESHOLDS`` (written by ``aula fit-labels``), else the defaults. What a judge
measured is kept as data (``signals``), so an item can be relabelled without judging it again.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from app.config import Settings
from corpus.errors import InputError
from eval.label_model import LabelModel
from eval.labels import Thresholds
from eval.likelihood import ContinuationScorer
from eval.run import Pipeline
from eval.signals import LOCATED_FEATURES

JUDGE_MAX_TOKENS = 400
SHIPPED_LABELS = Path(__file__).resolve().parent.parent / "eval" / "labels.json"
"""The label model fitted on ``bench/data/judge_3b1b.jsonl`` with the embedded judge (its
fitting part only); used when ``AULA_LABEL_THRESHOLDS`` names no file and the judge is the
model it was fitted on."""


def load_thresholds(path: Path | None) -> Thresholds:
    """The thresholds in ``path`` (from ``aula fit-labels``), or the defaults."""
    if path is None:
        return Thresholds()
    try:
        return Thresholds.from_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError) as exc:  # missing, not JSON, or not numbers
        raise InputError(f"{path}: not a thresholds file from `aula fit-labels`: {exc}") from None


def load_label_model(path: Path | None) -> LabelModel | None:
    """The label model in ``path`` (``aula fit-labels`` writes it beside the thresholds when the
    items carry the judge's signals); with no path, the shipped one; None when there is none."""
    if path is None:
        path = SHIPPED_LABELS if SHIPPED_LABELS.exists() else None
        if path is None:
            return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a file from `aula fit-labels`: {exc}") from None
    if not isinstance(data, dict) or not data.get("label_model"):
        return None
    try:
        return LabelModel.from_dict(data["label_model"])
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None


FEW_ITEMS = 50
"""Thresholds fitted on fewer labelled items than this are said to be shaky."""


def thresholds_warning(path: Path | None) -> str | None:
    """A warning when the thresholds in ``path`` were fitted on fewer than ``FEW_ITEMS``
    labelled items (or the file does not say how many); None for the defaults."""
    if path is None:
        return None
    try:
        n = json.loads(path.read_text(encoding="utf-8")).get("fitted_items")
    except (OSError, ValueError, AttributeError):
        return None  # load_thresholds says what is wrong with the file
    if not isinstance(n, int):
        return (f"{path}: the thresholds do not say how many labelled items they were fitted "
                "on; refit them with `aula fit-labels`")
    if n < FEW_ITEMS:
        return (f"{path}: thresholds fitted on {n} labelled items (fewer than {FEW_ITEMS}); "
                "agreement on new answers may be much lower than on those")
    return None


def no_reference_warning(rows: Sequence[Mapping[str, Any]], judge_model: str | None
                         ) -> str | None:
    """A warning when the embedded judge labelled given answers that came with no reference
    answer: whatever else they came with (a gold span, contexts, nothing), its labels agreed
    with instructors' far less on those on our bench (``bench/judge_agreement.py``,
    docs/judges.md)."""
    from app.embedded_llm import MODEL_ID
    from eval.metrics import is_missing

    if judge_model != MODEL_ID:
        return None
    given = [r for r in rows if not is_missing(r.get("answer"))]
    bare = [r for r in given if is_missing(r.get("reference_answer"))]
    if not bare:
        return None
    return (f"{len(bare)} of {len(given)} answers came with no reference_answer; on such "
            f"answers the embedded judge ({MODEL_ID}) agreed with instructors' C/PC/I labels "
            "far less than with one on our bench (accuracy / linear kappa 0.57 / 0.41 reading "
            "the lecture where the question and answer find it, 0.51 / 0.31 at a given gold "
            "span, 0.55 / 0.45 on this service's own answers at their gold span, against "
            "0.60-0.73 / 0.52-0.69 with reference answers on two test sets). Add reference "
            "answers, or set "
            "AULA_JUDGE_BASE_URL to a stronger model, before trusting its labels.")


def judge_client(settings: Settings, answer_llm: Any = None, stack: ExitStack | None = None
                 ) -> Any:
    """The judge's own endpoint when set, else ``answer_llm``, else (with ``stack``) the
    configured answerer LLM; the embedded one starts when the judge first asks it something
    (``OnFirstUse``). None when there is none."""
    if settings.judge.base_url:
        from app.llm import client_from_settings

        return client_from_settings(settings, judge=True)
    if answer_llm is not None or stack is None:
        return answer_llm
    from app.services import build_llm

    if settings.llm.base_url:
        return build_llm(settings, stack)[0]
    from app.embedded_llm import MODEL_ID

    return OnFirstUse(lambda: build_llm(settings, stack)[0], MODEL_ID)


class OnFirstUse:
    """The embedded LLM's client, its server started on the first question put to it: a judge
    whose label model labels every answer from its words and likelihood (``Pipeline.reasoning``
    off) never starts it, and keeps its memory. ``model_id`` is known before."""

    def __init__(self, start: Callable[[], Any], model_id: str) -> None:
        self._start = start
        self._client: Any = None
        self._lock = threading.Lock()
        self.model_id = model_id

    def _started(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self._start()
        return self._client

    def chat(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        return str(self._started().chat(messages, **kwargs))

    def first_token(self, messages: list[dict[str, str]], **kwargs: Any
                    ) -> tuple[str, dict[str, float] | None]:
        text, probs = self._started().first_token(messages, **kwargs)
        return str(text), probs


def likelihood_scorer(settings: Settings) -> ContinuationScorer | None:
    """The scorer of the ``reference_gain`` signal (``AULA_JUDGE_LIKELIHOOD``), one per process
    and setting: a loaded model is shared by every pipeline."""
    from app.lm_scorer import scorer_for

    return scorer_for(settings.judge.likelihood, settings.service.cache_dir,
                      engine=settings.judge.likelihood_engine, threads=settings.llm.threads)


def judge_pipeline(settings: Settings, client: Any, *, samples: int = 1,
                   thresholds: Thresholds | None = None, **more: Any) -> Pipeline:
    """The ``Pipeline`` every judge uses; ``more`` adds retrieval, answering or ragas.

    One sample is judged at temperature 0; several samples need some temperature to differ.
    Claims are checked by first-token probabilities when the settings ask for it
    (``AULA_JUDGE_CORRECTNESS=claims``) and the client can give them."""
    temperature = 0.0 if samples <= 1 else 0.7

    def chat(messages: list[dict[str, str]]) -> str:
        return str(client.chat(messages, temperature=temperature, max_tokens=JUDGE_MAX_TOKENS))

    claims = settings.judge.correctness == "claims" and hasattr(client, "first_token")
    return Pipeline(
        judge=chat, verify=client.first_token if claims else None, samples=samples,
        judge_model=lambda: str(getattr(client, "model_id", "") or ""),
        thresholds=thresholds or load_thresholds(settings.judge.label_thresholds),
        label_model=(more.pop("label_model", None)
                     or load_label_model(settings.judge.label_thresholds)),
        likelihood=more.pop("likelihood", None) or likelihood_scorer(settings),
        **more)


def signals(item: dict[str, Any], pipeline: Pipeline) -> dict[str, Any]:
    """What the judges measured on an ``evaluate_item`` result, as stored data."""
    return {
        "ar_score": item.get("ar_score"),
        "ar_only": item.get("ar_only"),
        "correctness_score": item.get("correctness_score"),
        "claim_p": item.get("correctness_claim_p"),
        "strict_p": item.get("correctness_strict_p"),
        "coverage_p": item.get("coverage_p"),
        "reference_agree_p": item.get("reference_agree_p"),
        "reference_novelty": item.get("reference_novelty"),
        "reference_recall": item.get("reference_recall"),
        "reference_gain": item.get("reference_gain"),
        "reference_gain_low": item.get("reference_gain_low"),
        "evidence_gain": item.get("evidence_gain"),
        "evidence_gain_low": item.get("evidence_gain_low"),
        "evidence_novelty": item.get("evidence_novelty"),
        "evidence_recall": item.get("evidence_recall"),
        **{name: item.get(name) for name in LOCATED_FEATURES},
        "likelihood_model": item.get("likelihood_model"),
        "match_model": item.get("match_model"),
        "origin": item.get("origin"),
        "label_by": item.get("label_by"),
        "label_confidence": item.get("automated_confidence"),
        "thresholds": pipeline.thresholds.to_dict(),
    }


def judged_text(item: dict[str, Any]) -> str | None:
    """The reasoning shown to instructors: AR's chain of thought, then the claim check."""
    parts = [item.get("ar_reasoning"), item.get("correctness_reasoning")]
    if parts[1]:
        parts[1] = f"Correção, afirmação por afirmação:\n{parts[1]}"
    text = "\n\n".join(str(p) for p in parts if p)
    return text or None
