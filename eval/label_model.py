"""A small model from the judge's signals to C / PC / I, fitted on manually labelled items
(``eval.label_fitting``): per label, a logistic score over standardised signals
(``eval.logistic``), P by softmax; or one score with the labels cut apart on it in their order
(ordinal: wrong, partly right, right).

A ``LabelModel`` holds one or more ``Submodel``s, tried in order: the first whose signals an
item has labels it (``eval.label_fitting``'s variants: one that may read every signal, then ones
without the reference's words, without the likelihood gain, and without any reference signal).
It is stored as JSON (``to_json``) and needs no scikit-learn to predict.

Answers this service wrote (``eval.signals.AULA``: the embedded generator restates the question
and copies its passage's words, so the claim check confirms its wrong answers as readily as its
right ones) are on another scale than answers written elsewhere: when the fitting items hold
enough of them, their own submodels are fitted on them alone (``aula_only``) and tried first
for such an answer; the others are fitted on the other items.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

from corpus.errors import InputError
from eval.logistic import Logistic, field_of, number, numbers, sigmoid, softmax
from eval.signals import AULA_ANSWER

Row = Mapping[str, float | None]


def most_likely(probs: Mapping[str, float]) -> str:
    """The label with the highest probability (the first of ``probs``'s order on a tie): what
    a submodel predicts, and the label the pipeline stores beside its confidence."""
    return max(probs, key=lambda c: probs[c])


@dataclass(frozen=True)
class Submodel:
    """Logistic regression on standardised ``features``: class scores ``coef @ z + intercept``,
    P by softmax; or, ``ordinal``, one score ``coef[0] @ z`` and ``classes`` from lowest to
    highest, cut apart at the increasing ``intercept``s (cumulative logit:
    ``P(label ≤ classes[k]) = sigmoid(intercept[k] - score)``)."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[tuple[float, ...], ...]
    intercept: tuple[float, ...]
    classes: tuple[str, ...]
    c: float = 1.0
    aula_only: bool = False
    """Fitted on this service's answers alone, and read only for them (``AULA_ANSWER``)."""
    unless: tuple[str, ...] = ()
    """Signals whose presence rules it out: the located submodels read only answers with
    neither gold span nor reference answer, the ones whose other signals (the claim check
    of retrieved passages) are not on the scale they were fitted on."""
    ordinal: bool = False
    """A cumulative-logit model over ordered labels (``eval.fitting.fit_ordinal``): a partly
    right answer sits between a wrong and a right one on the same score."""

    @cached_property
    def scores(self) -> tuple[Logistic, ...]:
        """One logistic score per class (``coef`` row and ``intercept``) over the standardised
        ``features``; P by softmax over them. Ordinal: the one score, without intercept."""
        if self.ordinal:
            return (Logistic(tuple(self.coef[0]), 0.0, self.features, self.mean, self.scale),)
        return tuple(Logistic(tuple(ws), b, self.features, self.mean, self.scale)
                     for ws, b in zip(self.coef, self.intercept, strict=True))

    def usable(self, row: Row) -> bool:
        if self.aula_only and not row.get(AULA_ANSWER):
            return False
        if any(row.get(f) is not None for f in self.unless):
            return False
        return all(row.get(f) is not None for f in self.features)

    def probabilities(self, row: Row) -> dict[str, float] | None:
        """P(label) per class, or None when the row lacks one of the features."""
        if not self.usable(row):
            return None
        if self.ordinal:
            score = self.scores[0].z(row)
            below = [0.0, *(sigmoid(cut - score) for cut in self.intercept), 1.0]
            return {c: max(0.0, below[k + 1] - below[k]) for k, c in enumerate(self.classes)}
        return softmax([m.z(row) for m in self.scores], self.classes)

    def predict(self, row: Row) -> str | None:
        probs = self.probabilities(row)
        return None if probs is None else most_likely(probs)


@dataclass(frozen=True)
class LabelModel:
    """Submodels tried in order; ``judge_model`` names the LLM whose signals it was fitted on
    (probabilities of another model are on another scale)."""

    models: tuple[Submodel, ...]
    judge_model: str = ""
    fitted_items: int = 0
    likelihood_model: str = ""
    """The scorer whose ``reference_gain`` it was fitted on (``TransformersScorer.model_id``);
    an item scored by another is labelled by the submodels that do not read the gain."""
    figures: dict[str, Any] = field(default_factory=dict)
    match_model: str = ""
    """The E5 model whose token vectors read the ``MATCH_FEATURES`` it was fitted on
    (``E5Embedder.model_id``); an item matched by another is labelled without them."""

    def predict(self, row: Row) -> str | None:
        """The label of the first submodel that can read ``row``; None if none can."""
        probs = self.probabilities(row)
        return None if probs is None else most_likely(probs)

    def probabilities(self, row: Row) -> dict[str, float] | None:
        """P(label) per class from the first submodel that can read ``row``; None if none can.
        The chosen label's P is its confidence: which automated labels to check first."""
        for m in self.models:
            probs = m.probabilities(row)
            if probs is not None:
                return probs
        return None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=1)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "label model") -> LabelModel:
        """The model in ``data`` (``to_dict``'s shape); a missing or bad field is one
        ``InputError`` naming ``source`` and the field."""
        models = tuple(_submodel(m, source, f"models[{i}].")
                       for i, m in enumerate(field_of(data, "models", source)))
        return cls(models=models, judge_model=str(data.get("judge_model", "")),
                   fitted_items=int(data.get("fitted_items", 0)),
                   likelihood_model=str(data.get("likelihood_model") or ""),
                   figures=dict(data.get("figures") or {}),
                   match_model=str(data.get("match_model") or ""))


def _submodel(raw: Any, source: str, at: str) -> Submodel:
    """One stored ``Submodel`` (``at``: where it sits in ``source``)."""
    if not isinstance(raw, Mapping):
        raise InputError(f"{source}: field '{at[:-1]}' must be an object")
    features = tuple(map(str, field_of(raw, "features", source, at)))
    classes = tuple(map(str, field_of(raw, "classes", source, at)))
    rows = field_of(raw, "coef", source, at)
    if not isinstance(rows, list):
        raise InputError(f"{source}: field '{at}coef' must be a list of rows")
    coef = tuple(numbers(r, f"coef[{k}]", source, at) for k, r in enumerate(rows))
    mean, scale, intercept = (numbers(field_of(raw, name, source, at), name, source, at)
                              for name in ("mean", "scale", "intercept"))
    n = len(features)
    ordinal = bool(raw.get("ordinal", False))
    rows_wanted, cuts_wanted = (1, len(classes) - 1) if ordinal else (len(classes),) * 2
    if len(mean) != n or len(scale) != n or any(len(r) != n for r in coef) \
            or len(coef) != rows_wanted or len(intercept) != cuts_wanted:
        raise InputError(f"{source}: field '{at}coef': its weights do not match its features")
    if ordinal and list(intercept) != sorted(intercept):
        raise InputError(f"{source}: field '{at}intercept': an ordinal model's cuts must "
                         "increase")
    return Submodel(features=features, mean=mean, scale=scale, coef=coef, intercept=intercept,
                    classes=classes, c=number({"c": 1.0, **raw}, "c", source, at),
                    aula_only=bool(raw.get("aula_only", False)),
                    unless=tuple(map(str, raw.get("unless", ()))), ordinal=ordinal)
