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

from corpus.errors import InputError
from eval.claims import SUPPORT_AT
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
        raise InputError(f"unknown label {value!r} (expected C, PC or I)")
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
    ``ar >= a_min``; PC otherwise. ``-1`` disables a lower rule. ``support_at`` is the claim
    checker's P(yes) from which a claim counts as supported (``eval.claims``): on our labelled
    set, claims of right answers sat at 0.88-1.00 and wrong ones mostly at 0.43-0.82.
    """

    c_hi: int = 3
    a_min: int = 2
    c_lo: int = 0
    a_lo: int = 0
    support_at: float = SUPPORT_AT

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Thresholds:
        values: dict[str, Any] = {k: float(v) if k == "support_at" else int(v)
                                  for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**values)

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


SUPPORT_GRID = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


def threshold_grid(support: Sequence[float] = ()) -> Iterable[Thresholds]:
    """Every sensible ``Thresholds`` on 0..3 scores, the defaults first (so they win ties);
    with ``support`` values, each combined with each of them."""
    default = Thresholds()
    yield default
    for s_at in [default.support_at, *(v for v in support if v != default.support_at)]:
        for c_hi, a_min, c_lo, a_lo in itertools.product(
            range(1, 4), range(0, 4), range(-1, 3), range(-1, 3)
        ):
            if c_lo < c_hi:
                yield Thresholds(c_hi=c_hi, a_min=a_min, c_lo=c_lo, a_lo=a_lo, support_at=s_at)


Item = tuple[int | None, int | None, str | None] | tuple[
    int | None, int | None, str | None, Sequence[float] | None]


def fit_thresholds(items: Sequence[Item]) -> Thresholds:
    """The thresholds whose labels best agree with the manual ones (linear-weighted kappa,
    then accuracy). Items with a missing score or manual label are skipped.

    Items are ``(ar, correctness, manual)`` or ``(ar, correctness, manual, claim_p)``; where
    every usable item has its claims' P(yes), ``support_at`` is fitted too and the correctness
    score recomputed from them (``eval.claims.score_from_support``).
    """
    usable = _usable(items)
    if not usable:
        raise InputError("no item has both scores and a manual label to fit thresholds on")
    manual = [m for _, _, m, _ in usable]
    with_p = all(ps for *_, ps in usable)
    best, best_key = Thresholds(), (-math.inf, -math.inf)
    for th in threshold_grid(SUPPORT_GRID if with_p else ()):
        predicted = [label_item(it, th, with_p) for it in usable]
        kappa = cohen_kappa(manual, predicted, weights="linear")
        key = (-math.inf if kappa is None else kappa, accuracy(manual, predicted) or 0.0)
        if key > best_key:
            best, best_key = th, key
    return best


def _usable(items: Sequence[Item]) -> list[tuple[int, int, str, list[float]]]:
    return [
        (int(it[0]), int(it[1]), str(normalise_label(it[2])),
         list(it[3] or []) if len(it) > 3 else [])  # type: ignore[misc]
        for it in items
        if it[0] is not None and it[1] is not None and not is_missing(it[2])
    ]


def label_item(item: tuple[int, int, str, list[float]], th: Thresholds, with_p: bool) -> str | None:
    """The automated label of a usable item under ``th``; with claim probabilities, the
    correctness score is recomputed at ``th.support_at``."""
    from eval.claims import score_at

    ar, corr, _, ps = item
    if with_p and ps:
        corr = score_at(ps, th.support_at)
    return combined_label(ar, corr, th)


def loo_labels(items: Sequence[Item]) -> tuple[list[str], list[str | None]]:
    """Leave-one-out: the manual labels, and each item's label under thresholds fitted on all
    the other items, an honest estimate of how fitted thresholds do on new answers."""
    usable = _usable(items)
    with_p = all(ps for *_, ps in usable)
    predicted: list[str | None] = []
    for i, it in enumerate(usable):
        rest = [(a, c, m, ps) for j, (a, c, m, ps) in enumerate(usable) if j != i]
        th = fit_thresholds(rest) if rest else Thresholds()
        predicted.append(label_item(it, th, with_p))
    return [m for _, _, m, _ in usable], predicted
