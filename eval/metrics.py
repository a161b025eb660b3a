"""Agreement and retrieval maths over plain lists: no model, no I/O.

Labels are the ordinal classes I < PC < C. A missing value (None, NaN, blank) is never read
as a class or a zero: pairs with one are left out, and a statistic that cannot be computed
(no pairs, one constant rater) is None rather than NaN.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
import pandas as pd

CLASSES = ("C", "PC", "I")
"""Display order of the classes (tables, confusion matrices)."""
ORDINAL = {"I": 0, "PC": 1, "C": 2}
"""The classes' order for weighted kappa and Spearman."""

Weights = Literal["linear", "quadratic"] | None


def is_missing(value: Any) -> bool:
    """None, NaN or a blank string: the value was never given."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value.strip() in ("", "—")


def _check(label: Any) -> str:
    if label not in ORDINAL:
        raise ValueError(f"unknown label {label!r} (expected C, PC or I)")
    return str(label)


def label_pairs(manual: Sequence[Any], automated: Sequence[Any]) -> list[tuple[str, str]]:
    """The (manual, automated) pairs where both labels are present, checked to be C/PC/I."""
    if len(manual) != len(automated):
        raise ValueError(f"{len(manual)} manual labels but {len(automated)} automated ones")
    return [
        (_check(m), _check(a))
        for m, a in zip(manual, automated, strict=True)
        if not is_missing(m) and not is_missing(a)
    ]


def accuracy(manual: Sequence[Any], automated: Sequence[Any]) -> float | None:
    """Share of present pairs with the same label; None when there are none."""
    pairs = label_pairs(manual, automated)
    if not pairs:
        return None
    return sum(m == a for m, a in pairs) / len(pairs)


def cohen_kappa(
    manual: Sequence[Any], automated: Sequence[Any], weights: Weights = None
) -> float | None:
    """Cohen's kappa over I < PC < C, plain or weighted by class distance.

    None when undefined: no pairs, or chance agreement is already perfect (both raters
    always give the same single class).
    """
    pairs = label_pairs(manual, automated)
    if not pairs:
        return None
    k = len(ORDINAL)
    observed = np.zeros((k, k))
    for m, a in pairs:
        observed[ORDINAL[m], ORDINAL[a]] += 1
    observed /= len(pairs)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    distance = np.abs(np.subtract.outer(np.arange(k), np.arange(k))).astype(float)
    if weights is None:
        w = (distance > 0).astype(float)
    elif weights == "linear":
        w = distance
    elif weights == "quadratic":
        w = distance**2
    else:
        raise ValueError(f"unknown weights {weights!r}")
    chance = float((w * expected).sum())
    if chance <= 1e-12:
        return None
    return 1.0 - float((w * observed).sum()) / chance


def agreement(manual: Sequence[Any], automated: Sequence[Any]) -> dict[str, Any]:
    """Accuracy and kappas of ``automated`` against ``manual``.

    ``n`` counts pairs with both labels; ``missing`` counts items with a manual label but no
    automated one (left out, never counted as wrong). Items without a manual label are ignored.
    """
    if len(manual) != len(automated):
        raise ValueError(f"{len(manual)} manual labels but {len(automated)} automated ones")
    pairs = zip(manual, automated, strict=True)
    missing = sum(not is_missing(m) and is_missing(a) for m, a in pairs)
    labelled = label_pairs(manual, automated)
    return {
        "accuracy": accuracy(manual, automated),
        "kappa": cohen_kappa(manual, automated),
        "kappa_linear": cohen_kappa(manual, automated, weights="linear"),
        "n": len(labelled),
        "missing": missing,
        "accuracy_ci": bootstrap_interval(labelled, accuracy),
        "kappa_linear_ci": bootstrap_interval(
            labelled, lambda m, a: cohen_kappa(m, a, weights="linear")),
        "per_class": per_class(manual, automated),
    }


BOOTSTRAP_RESAMPLES = 1000


def bootstrap_interval(pairs: Sequence[tuple[str, str]], stat: Any, level: float = 0.95,
                       resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
                       ) -> list[float] | None:
    """Percentile bootstrap interval of ``stat(manual, automated)`` over the labelled pairs
    (resampled with replacement, seeded so a report is reproducible); None under 2 pairs."""
    if len(pairs) < 2:
        return None
    rng = np.random.default_rng(seed)
    manual = np.array([m for m, _ in pairs])
    auto = np.array([a for _, a in pairs])
    values = []
    for _ in range(resamples):
        pick = rng.integers(0, len(pairs), len(pairs))
        v = stat(manual[pick].tolist(), auto[pick].tolist())
        if v is not None:
            values.append(v)
    if not values:
        return None
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(values, [tail, 100 - tail])
    return [round(float(lo), 4), round(float(hi), 4)]


def per_class(manual: Sequence[Any], automated: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Precision and recall of each automated class against the manual one (None when the class
    was never given / never manual), with the manual count (``support``)."""
    pairs = label_pairs(manual, automated)
    out: dict[str, dict[str, Any]] = {}
    for c in CLASSES:
        given = sum(a == c for _, a in pairs)
        actual = sum(m == c for m, _ in pairs)
        hit = sum(m == a == c for m, a in pairs)
        out[c] = {"precision": hit / given if given else None,
                  "recall": hit / actual if actual else None, "support": actual}
    return out


def confusion_matrix(manual: Sequence[Any], automated: Sequence[Any]) -> pd.DataFrame:
    """Counts with rows = manual, columns = automated, both in the order C, PC, I."""
    table = pd.DataFrame(
        0, index=pd.Index(CLASSES, name="manual"), columns=pd.Index(CLASSES, name="automated")
    )
    for m, a in label_pairs(manual, automated):
        table.loc[m, a] += 1
    return table


def _number(value: Any) -> float | None:
    if is_missing(value):
        return None
    return float(value)


def ar_by_class(manual: Sequence[Any], ar: Sequence[Any]) -> pd.DataFrame:
    """AR count, mean and median per manual class (rows C, PC, I; NaN where a class is empty)."""
    values: dict[str, list[float]] = {c: [] for c in CLASSES}
    for m, x in zip(manual, ar, strict=True):
        number = _number(x)
        if not is_missing(m) and number is not None:
            values[_check(m)].append(number)
    rows = {
        c: {
            "count": len(v),
            "mean": float(np.mean(v)) if v else float("nan"),
            "median": float(np.median(v)) if v else float("nan"),
        }
        for c, v in values.items()
    }
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "manual"
    return table


def spearman(x: Sequence[Any], y: Sequence[Any]) -> float | None:
    """Spearman's rank correlation (ties get average ranks) over pairs where both are present.

    None with fewer than two pairs or when either side is constant.
    """
    pairs = [
        (float(a), float(b))
        for a, b in zip(x, y, strict=True)
        if not is_missing(a) and not is_missing(b)
    ]
    if len(pairs) < 2:
        return None
    ranks = pd.DataFrame(pairs).rank(method="average")
    rx, ry = ranks[0].to_numpy(), ranks[1].to_numpy()
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return None
    return float(np.corrcoef(rx, ry)[0, 1])


def spearman_ar_manual(ar: Sequence[Any], manual: Sequence[Any]) -> float | None:
    """Spearman between AR and the manual class read as I=0 < PC=1 < C=2."""
    ordinal = [None if is_missing(m) else ORDINAL[_check(m)] for m in manual]
    return spearman(ar, ordinal)


# ---------------------------------------------------------------------------------------------
# Retrieval against gold spans.


@dataclass(frozen=True)
class Span:
    """Where the answer to a question is: a lecture and a time range in seconds."""

    lecture_id: str
    start: float
    end: float


class TimedHit(Protocol):
    """What a ranked hit needs for retrieval metrics (``corpus.models.Hit`` has it)."""

    @property
    def lecture_id(self) -> str: ...
    @property
    def start(self) -> float: ...
    @property
    def end(self) -> float: ...


def _hit_span(hit: TimedHit | Mapping[str, Any]) -> Span:
    if isinstance(hit, Mapping):
        return Span(str(hit["lecture_id"]), float(hit["start"]), float(hit["end"]))
    return Span(str(hit.lecture_id), float(hit.start), float(hit.end))


def overlaps(gold: Span, hit: Span) -> bool:
    """Same lecture and the time ranges share some time (a zero-length gold span: inside)."""
    if gold.lecture_id != hit.lecture_id:
        return False
    if gold.end <= gold.start:
        return hit.start <= gold.start <= hit.end
    return min(gold.end, hit.end) > max(gold.start, hit.start)


def first_hit_rank(
    gold: Span | Sequence[Span], hits: Sequence[TimedHit | Mapping[str, Any]]
) -> int | None:
    """1-based rank of the first hit overlapping any gold span; None when none does."""
    spans = [gold] if isinstance(gold, Span) else list(gold)
    for rank, hit in enumerate(hits, start=1):
        span = _hit_span(hit)
        if any(overlaps(g, span) for g in spans):
            return rank
    return None


def hit_at_k(ranks: Sequence[int | None], k: int) -> float | None:
    """Share of questions whose first gold hit is in the top ``k`` (None rank = a miss)."""
    if not ranks:
        return None
    return sum(1 for r in ranks if r is not None and not is_missing(r) and r <= k) / len(ranks)


def mrr(ranks: Sequence[int | None]) -> float | None:
    """Mean reciprocal rank of the first gold hit (a miss counts 0)."""
    if not ranks:
        return None
    return sum(1.0 / r for r in ranks if r is not None and not is_missing(r)) / len(ranks)
