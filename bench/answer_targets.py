"""The answers' targets, read against one strategy's figures on one answer set.

What a student should get from the embedded model: on the lecture captions (``3b1b``) at most
10% of answerable questions answered wrong, at least 45% right and 80% right or partly right; on
recorded live classes (``fastapi``) at most 15% wrong, at least 35% right and 70% right or partly;
on both, at least 90% of uncovered questions declined, at most 10% of covered ones, the whole
answer's p50 at most 10 s and the first moments on screen (the search's, what the page shows
first) at most 3 s. ``bench.answer_quality`` prints each target beside the figure it measured;
a share comes with its 95% Wilson interval over the questions it counts (25 questions leave
about ±0.15 either side of a share near a half).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Target:
    name: str
    read: Callable[[Mapping[str, Any]], float]
    bound: float
    at_most: bool  # the figure must stay at or under ``bound`` (else reach it)
    of: str | None = None  # a share: the figure that counts its questions

    def line(self, figures: Mapping[str, Any]) -> str:
        """``0.120 [0.042, 0.300] (at most 0.1): NOT met``; a figure the run could not measure
        says so."""
        value = self.read(figures)
        sign = "at most" if self.at_most else "at least"
        if value is None or math.isnan(value):
            return f"not measured ({sign} {self.bound:g})"
        value = round(value, 9)  # a sum of shares (0.7 + 0.1) reads a hair off its bound
        met = value <= self.bound if self.at_most else value >= self.bound
        return (f"{value:.3f}{_interval(value, figures.get(self.of) if self.of else None)} "
                f"({sign} {self.bound:g}): {'met' if met else 'NOT met'}")


def _interval(share: float, n: Any) -> str:
    """`` [lo, hi]``: the 95% Wilson interval of a share of ``n`` questions ('' without them)."""
    if not n:
        return ""
    from scipy.stats import binomtest

    ci = binomtest(round(share * int(n)), int(n)).proportion_ci(method="wilson")
    return f" [{ci.low:.3f}, {ci.high:.3f}]"


def _get(key: str) -> Callable[[Mapping[str, Any]], float]:
    return lambda f: float(f.get(key, math.nan))


def _right_or_partly(f: Mapping[str, Any]) -> float:
    return float(f.get("correct_C", math.nan)) + float(f.get("correct_PC", math.nan))


def targets(set_name: str) -> list[Target]:
    """The targets of one answer set (the live classes' are looser on right and wrong)."""
    live = set_name == "fastapi"
    return [
        Target("wrong (I)", _get("correct_I"), 0.15 if live else 0.10, True, "answerable"),
        Target("right (C)", _get("correct_C"), 0.35 if live else 0.45, False, "answerable"),
        Target("right or partly (C + PC)", _right_or_partly, 0.70 if live else 0.80, False,
               "answerable"),
        Target("uncovered declined", _get("declined_uncovered"), 0.90, False, "unanswerable"),
        Target("covered declined", _get("declined_covered"), 0.10, True, "answerable"),
        Target("whole answer p50 (s)", _get("total_s_p50"), 10.0, at_most=True),
        Target("first moments p50 (s)", _get("search_s_p50"), 3.0, at_most=True),
    ]


def target_lines(set_name: str, figures: Mapping[str, Any]) -> dict[str, str]:
    """Each target of ``set_name`` with the figure measured, and whether it is met; the shares
    count only labelled answers, so unlabelled ones are named first."""
    out = {t.name: t.line(figures) for t in targets(set_name)}
    if figures.get("unlabelled"):
        out["unlabelled answers"] = (f"{figures['unlabelled']} (label them: "
                                     "python -m bench.label_answers sheet)")
    return out
