"""Automated C / PC / I annotation from judge scores, and the thresholds that map them.

``ar_only_label`` is the study's mapping from the relevance score alone. ``combined_label``
also uses the correctness score, with ``Thresholds`` that ``fit_thresholds`` can learn from
manually annotated items (grid search for the best linear-weighted kappa).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from eval.metrics import accuracy, cohen_kappa, is_missing

LABELS = ("C", "PC", "I")
_ALIASES = {
    "C": "C",
    "CORRECT": "C",
    "CORRETO": "C",
    "CORRETA": "C",
    "PC": "PC",
    "PARTIALLY CORRECT": "PC",
    "PARTIALLY_CORRECT": "PC",
    "PARCIALMENTE CORRETO": "PC",
    "PARCIALMENTE CORRETA": "PC",
    "I": "I",
    "INCORRECT": "I",
    "INCORRETO": "I",
    "INCORRETA": "I",
}


def normalise_label(value: Any) -> str | None:
    """``"c"``, ``"Partially correct"``, ``"incorreto"`` -> C / PC / I; blank -> None.

    Raises ValueError for anything else.
    """
    if is_missing(value):
        return None
    key = " ".join(str(value).strip().upper().replace("-", " ").split())
    if key not in _ALIASES:
        raise ValueError(f"unknown label {value!r} (expected C, PC or I)")
    return _ALIASES[key]


def ar_only_label(ar_score: int | None) -> str | None:
    """The study's mapping from the 0..3 relevance score: 3 -> C, 1-2 -> PC, 0 -> I."""
    if ar_score is None:
        return None
    if ar_score >= 3:
        return "C"
    return "PC" if ar_score >= 1 else "I"


@dataclass(frozen=True)
class Thresholds:
    """Rules of ``combined_label`` on 0..3 scores, checked in this order.

    I when ``correctness <= c_lo`` or ``ar <= a_lo``; C when ``correctness >= c_hi`` and
    ``ar >= a_min``; PC otherwise. ``-1`` disables a lower rule.
    """

    c_hi: int = 3
    a_min: int = 2
    c_lo: int = 0
    a_lo: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Thresholds:
        return cls(**{k: int(v) for k, v in data.items() if k in cls.__dataclass_fields__})

    @classmethod
    def from_json(cls, text: str) -> Thresholds:
        return cls.from_dict(json.loads(text))


def combined_label(
    ar_score: int | None, correctness_score: int | None, th: Thresholds = Thresholds()
) -> str | None:
    """C / PC / I from both judges' 0..3 scores; None when either score is missing."""
    if ar_score is None or correctness_score is None:
        return None
    if correctness_score <= th.c_lo or ar_score <= th.a_lo:
        return "I"
    if correctness_score >= th.c_hi and ar_score >= th.a_min:
        return "C"
    return "PC"


def threshold_grid() -> Iterable[Thresholds]:
    """Every sensible ``Thresholds`` on 0..3 scores, the defaults first (so they win ties)."""
    yield Thresholds()
    for c_hi, a_min, c_lo, a_lo in itertools.product(
        range(1, 4), range(0, 4), range(-1, 3), range(-1, 3)
    ):
        if c_lo < c_hi:
            yield Thresholds(c_hi=c_hi, a_min=a_min, c_lo=c_lo, a_lo=a_lo)


def fit_thresholds(
    items: Sequence[tuple[int | None, int | None, str | None]],
) -> Thresholds:
    """The thresholds whose labels best agree with the manual ones (linear-weighted kappa,
    then accuracy). Items with a missing score or manual label are skipped."""
    usable = [
        (ar, corr, normalise_label(manual))
        for ar, corr, manual in items
        if ar is not None and corr is not None and not is_missing(manual)
    ]
    if not usable:
        raise ValueError("no item has both scores and a manual label to fit thresholds on")
    manual = [m for _, _, m in usable]
    best, best_key = Thresholds(), (-math.inf, -math.inf)
    for th in threshold_grid():
        predicted = [combined_label(ar, corr, th) for ar, corr, _ in usable]
        kappa = cohen_kappa(manual, predicted, weights="linear")
        key = (-math.inf if kappa is None else kappa, accuracy(manual, predicted) or 0.0)
        if key > best_key:
            best, best_key = th, key
    return best
