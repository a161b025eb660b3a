"""The logistic model every fitted decision reads: ``sigmoid(bias + weights · x)``.

The evidence gate (``answer.evidence.Gate``), the course check (``answer.course.CourseCheck``)
and the label model (``eval.label_model.Submodel``, one score per label) store their fits in
files of their own shapes; each reads its weights into a ``Logistic``, so the features are read,
scaled and weighed, and a bad file is said, the same way everywhere. Fitting is elsewhere
(``eval.fitting``): predicting needs no scikit-learn."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from corpus.errors import InputError

Features = Mapping[str, float | None] | Sequence[float]
"""Named features (a missing one reads 0), or a vector read by position."""


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


def softmax(scores: Sequence[float], classes: Sequence[str]) -> dict[str, float]:
    """P per class from the classes' linear scores."""
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = sum(exps)
    return {c: e / total for c, e in zip(classes, exps, strict=True)}


@dataclass(frozen=True)
class Logistic:
    """``P = sigmoid(bias + Σ weights[i] · (x[i] - mean[i]) / scale[i])`` over ``features``
    (named), or over a vector's positions when ``features`` is empty; without ``mean`` and
    ``scale`` the features are read as they are."""

    weights: tuple[float, ...]
    bias: float
    features: tuple[str, ...] = ()
    mean: tuple[float, ...] = ()
    scale: tuple[float, ...] = ()

    def values(self, x: Features) -> list[float]:
        """``x`` in the order of ``weights``, standardised when the model is."""
        if isinstance(x, Mapping):
            raw = [float(x.get(f, 0.0) or 0.0) for f in self.features]
        elif len(x) != len(self.weights):
            raise ValueError(f"a vector of {len(x)} numbers; the model reads "
                             f"{len(self.weights)}")
        else:
            raw = [float(v) for v in x]
        if not self.mean:
            return raw
        return [(v - m) / s for v, m, s in zip(raw, self.mean, self.scale, strict=True)]

    def z(self, x: Features) -> float:
        """The linear score (log-odds) of ``x``."""
        return self.bias + sum(w * v for w, v in zip(self.weights, self.values(x), strict=True))

    def p(self, x: Features) -> float:
        return sigmoid(self.z(x))

    def predict(self, x: Features, at: float = 0.5) -> bool:
        return self.p(x) >= at

    # --- storage -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """``weights`` by feature name (a list for a vector model), ``bias``, and ``mean`` and
        ``scale`` when standardised."""
        out: dict[str, Any] = {
            "weights": (dict(zip(self.features, self.weights, strict=True)) if self.features
                        else list(self.weights)),
            "bias": self.bias,
        }
        if self.mean:
            out.update(mean=list(self.mean), scale=list(self.scale))
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False) + "\n"

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], source: str, prefix: str = "") -> Logistic:
        """The model in ``raw`` (``to_dict``'s shape); a missing or bad field is one
        ``InputError`` naming ``source`` and the field (``prefix``: where ``raw`` sits in it)."""
        weights = field_of(raw, "weights", source, prefix)
        if isinstance(weights, Mapping):
            features = tuple(str(k) for k in weights)
            weights = list(weights.values())
        else:
            features = ()
        ws = numbers(weights, "weights", source, prefix)
        mean = numbers(raw.get("mean", []), "mean", source, prefix)
        scale = numbers(raw.get("scale", []), "scale", source, prefix)
        if len(mean) != len(scale) or (mean and len(mean) != len(ws)):
            raise InputError(f"{source}: field '{prefix}mean' and '{prefix}scale' must have one "
                             "number per weight")
        return cls(ws, number(raw, "bias", source, prefix), features, mean, scale)

    @classmethod
    def from_json(cls, text: str, source: str = "model file") -> Logistic:
        return cls.from_dict(json_object(text, source), source)


def json_object(text: str, source: str) -> dict[str, Any]:
    """``text`` read as a JSON object, or one ``InputError`` naming ``source``."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}: not JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(raw, dict):
        raise InputError(f"{source}: expected a JSON object")
    return raw


def field_of(raw: Mapping[str, Any], name: str, source: str, prefix: str = "") -> Any:
    if name not in raw:
        raise InputError(f"{source}: missing field '{prefix}{name}'")
    return raw[name]


def number(raw: Mapping[str, Any], name: str, source: str, prefix: str = "") -> float:
    """``raw[name]`` as a number, or an ``InputError`` naming ``source`` and the field."""
    value = field_of(raw, name, source, prefix)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{source}: field '{prefix}{name}' must be a number")
    return float(value)


def numbers(values: Any, name: str, source: str, prefix: str = "") -> tuple[float, ...]:
    """``values`` as a tuple of numbers, or an ``InputError`` naming ``source`` and the field."""
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Sequence) or any(
            isinstance(v, bool) or not isinstance(v, int | float) for v in values):
        raise InputError(f"{source}: field '{prefix}{name}' must be a list of numbers")
    return tuple(float(v) for v in values)
