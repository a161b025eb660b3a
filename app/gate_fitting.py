"""Fitting the evidence gate (``aula fit-gate``): each labelled question searched and checked
as ``/ask`` does (``measure``), or its stored signals read back, then the gate fitted on them
(``answer.evidence.fit``), made strict or given a fallback, and described by what it was fitted on.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path

from tqdm import tqdm

from answer.evidence import (
    ADAPTED,
    FEATURES,
    Gate,
    GateQuestion,
    GateSample,
    fit,
    make_strict,
    read_questions,
    read_samples,
    sample_for,
)
from app.config import Settings
from app.services import build_services
from corpus.errors import InputError


def read_gate_questions(paths: Sequence[Path], split: str, without_kind: Sequence[str]
                        ) -> list[GateQuestion]:
    """The questions of ``split`` in ``paths``, less those of the kinds in ``without_kind``."""
    qs = [q for path in paths for q in read_questions(path, split) if q.kind not in without_kind]
    if not qs:
        raise InputError(f"{', '.join(map(str, paths))}: no question in split {split!r}")
    return qs


def measure(s: Settings, qs: Sequence[GateQuestion], *, k: int = 10, llm_check: bool = True,
            progress: bool = True, adapted: bool = False) -> tuple[list[GateSample], str]:
    """The gate's signals of each question, searched as ``/ask`` searches (``llm_check``: with
    the LLM's evidence check; ``adapted``: with the index's course-adapted model's signals
    too, where it has one), and the LLM they were measured with."""
    services = build_services(s)
    with services.stack:
        if adapted:
            services.read_adapted(progress=progress)
        samples = []
        for q in tqdm(qs, desc="evidência", unit="pergunta", disable=not progress):
            found = services.find(q.question, k)  # as /ask
            hits, query = found.read, found.query
            passages, probs, feats = services.pipeline.gate_signals(
                query, hits, services.llm.first_token if llm_check else None,
                every_signal=True)
            samples.append(sample_for(q, passages, probs, hits, feats))
        return samples, str(services.llm.model_id)


def samples_for(s: Settings, qs: Sequence[GateQuestion], samples_file: Path | None, *,
                k: int = 10, llm_check: bool = True, progress: bool = True,
                adapted: bool = False) -> tuple[list[GateSample], str]:
    """The signals stored in ``samples_file`` when it exists; else measured (``measure``) and
    stored there when it is named."""
    if samples_file is not None and samples_file.exists():
        return read_samples(samples_file)
    samples, model = measure(s, qs, k=k, llm_check=llm_check, progress=progress,
                             adapted=adapted)
    if samples_file is not None:
        samples_file.write_text("".join(
            json.dumps({**asdict(x), "model": model}) + "\n" for x in samples))
    return samples, model


def only_features(samples: Sequence[GateSample], features: str) -> list[GateSample]:
    """The samples with only the comma-separated signals of ``features`` (``--features``); an
    unknown signal, or one not measured in every sample, is an error naming it."""
    wanted = [f.strip() for f in features.split(",") if f.strip()]
    unknown = [f for f in wanted if f not in FEATURES]
    if unknown:
        raise InputError(f"--features: unknown signal {unknown[0]!r} "
                         f"(known: {', '.join(FEATURES)})")
    missing = [f for f in wanted if not all(f in x.feats for x in samples)]
    if missing:
        raise InputError(f"--features: {missing[0]!r} was not measured in every sample")
    return [replace(x, feats={f: x.feats[f] for f in wanted}) for x in samples]


def fit_gate(s: Settings, questions: Sequence[Path], *, split: str = "fit",
             without_kind: Sequence[str] = (), llm_check: bool = True,
             features: str | None = None, fallback: Path | None = None, strict: bool = False,
             k: int = 10, samples_file: Path | None = None, progress: bool = True
             ) -> tuple[Gate, list[GateSample]]:
    """The gate fitted (``answer.evidence.fit``) on the signals of the labelled ``questions``
    (``samples_for``; ``features``: only those), and the signals. ``strict``: answering only
    from the P at which no uncovered fitting question is answered; ``fallback``: a gate file
    whose model also covers a question every rare word of which is in the best passage."""
    if strict and fallback is not None:
        raise InputError("--strict with --fallback: a strict gate has no fallback")
    qs = read_gate_questions(questions, split, without_kind)
    wanted = {f.strip() for f in (features or "").split(",")}
    samples, model = samples_for(s, qs, samples_file, k=k, llm_check=llm_check,
                                 progress=progress, adapted=bool(wanted & ADAPTED))
    if features:
        samples = only_features(samples, features)
    gate = fit(samples, model=model)
    if strict:
        if not gate.weights:
            raise InputError("--strict: the fit holds no logistic model to be strict with")
        make_strict(gate, samples)
    if fallback is not None:
        other = Gate.load(fallback)
        if not other.weights:
            raise InputError(f"--fallback {fallback}: holds no fitted model")
        gate.fallback = {"weights": other.weights, "bias": other.bias,
                         "min_idf_cov": 0.99, "min_term_cov": 1.0, "from": fallback.name}
    gate.fitted.update({"features_allowed": features or "all",
                        "questions_file": ", ".join(p.name for p in questions),
                        "split": split, "without_kind": list(without_kind),
                        "llm_check": any(p is not None for x in samples for p in x.probs),
                        "candidates": s.answer.gate_candidates,
                        "passage_chars": s.answer.passage_chars})
    return gate, samples
