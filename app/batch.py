"""The pipeline ``aula eval`` runs each question through: the configured retriever and answerer,
then the judges. Built here for the CLI, for Ray workers (``app.ray_eval``) and for benches,
from the settings and the services (``app.services.build_services``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.config import Settings
from app.judging import (
    judge_client,
    judge_pipeline,
    load_label_model,
    load_thresholds,
    thresholds_warning,
)
from eval.label_model import LabelModel
from eval.labels import Thresholds


@dataclass(frozen=True)
class EvalOptions:
    """``aula eval``'s judging options, as Ray workers receive them."""

    samples: int = 1
    thresholds: Path | None = None
    k: int = 10
    correctness: bool = True
    ragas: bool = False


class EvalAnswer:
    """A reply of ``answer.pipeline`` as the eval pipeline reads it: text, citations, the
    passages the generator read, and the error when no answer could be written."""

    def __init__(self, reply: Any) -> None:
        self.text = reply.text
        self.citations = reply.answer.citations if reply.answer is not None else []
        self.contexts = reply.contexts
        self.error = reply.error


def thresholds_for(path: Path | None, s: Settings | None = None) -> Thresholds:
    """``path`` when given, else ``AULA_LABEL_THRESHOLDS``, else the defaults; a file fitted
    on few items is said on stderr."""
    path = path or (s.judge.label_thresholds if s is not None else None)
    th = load_thresholds(path)
    warning = thresholds_warning(path)
    if warning:
        print(f"aviso: {warning}", file=sys.stderr, flush=True)
    return th


def label_model_for(path: Path | None, s: Settings) -> LabelModel | None:
    """The label model in ``path``, else as the settings say (``app.judging``)."""
    return load_label_model(path or s.judge.label_thresholds)


def ragas_scorer(s: Settings, answer_llm: Any, embedder: Any) -> Any:
    """ragas' ``score`` on the judge's endpoint (else the answerer's) with our E5 model."""
    from eval.ragas_metrics import RagasScorer  # ragas is heavy: only for --ragas

    if s.judge.base_url:
        base_url, api_key, model = s.judge.base_url, s.judge.api_key, s.judge.model or "default"
    else:
        base_url, api_key, model = answer_llm.base_url, s.llm.api_key, answer_llm.model_id
    return RagasScorer(base_url=base_url, api_key=api_key, model=model, embedder=embedder,
                       timeout=s.llm.timeout, retries=s.llm.retries).score


def eval_pipeline(s: Any, services: Any, o: EvalOptions) -> Any:
    """The pipeline ``aula eval`` runs each question through: the configured retriever and
    answerer, then the judges (here, or in a Ray worker)."""
    return judge_pipeline(
        s, judge_client(s, services.llm), samples=o.samples,
        thresholds=thresholds_for(o.thresholds, s),
        label_model=label_model_for(o.thresholds, s),
        search=services.hits, search_in=services.hits,
        span_text=services.retriever.span_text,
        matcher=services.embedder,
        answer=lambda q, hits: EvalAnswer(services.pipeline.run(services.asked(q), hits)),
        k=o.k, correctness=o.correctness,
        ragas=ragas_scorer(s, services.llm, services.embedder) if o.ragas else None,
    )
