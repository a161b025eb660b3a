"""Fusion of the retrieval channels, with weights fitted on a development set.

Four channels rank the windows of the index for a question: E5 over the windows (``dense``),
E5 over the short units inside them, a window scored by its best unit (``dense_unit``), and the
same two for BM25 (``bm25``, ``bm25_unit``). Each channel keeps its ``pool`` best windows;
their scores are min-max normalised over that pool (the pool's last one scores 0, its best 1)
and summed with the channel weights (``method="score"``). Plain reciprocal rank fusion of the
window channels (``method="rrf"``, ``sum_c weight_c / (k + rank_c)``) was the first slice's
hybrid and stays for comparison: on our development questions the normalised scores ranked
the answer first more often than weighted RRF with any weights of the grid (see
``bench/retrieval_quality.py``). The weights are fitted by ``aula fit-fusion``
on questions with gold spans (a grid search that maximises span-hit@1 + span-hit@5 + MRR@10)
and stored as JSON: the shipped default beside this module, or ``fusion.json`` in an index
folder, which wins for that index. Pure functions.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from corpus.errors import InputError

CHANNELS = ("dense", "dense_unit", "bm25", "bm25_unit")
DEFAULT_FILE = Path(__file__).with_name("fusion.json")
INDEX_FILE = "fusion.json"
RRF_K = 60


class FusionError(InputError):
    """A fusion file that cannot be used, said with its path and field."""


Method = Literal["score", "rrf"]


@dataclass(frozen=True)
class Fusion:
    """Channel weights and how channels combine (a channel with weight 0 is not computed)."""

    weights: dict[str, float] = field(
        default_factory=lambda: {"dense": 1.0, "dense_unit": 0.0, "bm25": 1.0, "bm25_unit": 0.0})
    k: int = RRF_K
    method: Method = "score"
    fitted_on: str = ""
    figures: dict[str, Any] = field(default_factory=dict)

    def weight(self, channel: str) -> float:
        return float(self.weights.get(channel, 0.0))

    def restricted(self, family: str) -> Fusion:
        """Only the channels of one retriever ("dense" or "bm25"); each keeps its weight, and a
        family whose weights are all 0 gets its window channel alone."""
        kept = {c: (w if c.startswith(family) else 0.0) for c, w in self.weights.items()}
        if not any(kept.values()):
            kept[family] = 1.0
        return replace(self, weights=kept)

    @classmethod
    def load(cls, path: Path) -> Fusion:
        try:
            raw = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise FusionError(f"{path}: cannot read fusion weights: {exc}") from exc
        weights = raw.get("weights") if isinstance(raw, dict) else None
        if not isinstance(weights, dict):
            raise FusionError(f"{path}: field 'weights' must be an object of channel weights")
        for name, value in weights.items():
            if name not in CHANNELS:
                raise FusionError(f"{path}: weights.{name}: unknown channel (one of "
                                  f"{', '.join(CHANNELS)})")
            if not isinstance(value, int | float) or value < 0:
                raise FusionError(f"{path}: weights.{name}: must be a number >= 0")
        if not any(weights.values()):
            raise FusionError(f"{path}: weights: at least one channel needs a weight above 0")
        k = raw.get("k", RRF_K)
        if not isinstance(k, int) or k < 1:
            raise FusionError(f"{path}: field 'k' must be an integer >= 1")
        method = raw.get("method", "score")
        if method not in ("score", "rrf"):
            raise FusionError(f"{path}: field 'method' must be \"score\" or \"rrf\"")
        return cls({c: float(weights.get(c, 0.0)) for c in CHANNELS}, k, method,
                   str(raw.get("fitted_on", "")), dict(raw.get("figures", {})))

    def save(self, path: Path) -> None:
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2, ensure_ascii=False) + "\n")
        tmp.replace(path)


FIRST_SLICE = Fusion(method="rrf")
"""The first slice's hybrid: plain RRF of the dense and BM25 window rankings (the baseline the
benchmark prints beside the fitted fusion)."""


def load_fusion(index_dir: Path | None = None, path: Path | None = None) -> Fusion:
    """The fusion to use: ``path`` when given, else the index folder's ``fusion.json``, else
    the shipped default."""
    if path is not None:
        return Fusion.load(path)
    if index_dir is not None and (Path(index_dir) / INDEX_FILE).exists():
        return Fusion.load(Path(index_dir) / INDEX_FILE)
    return Fusion.load(DEFAULT_FILE) if DEFAULT_FILE.exists() else Fusion()


Ranking = tuple[np.ndarray, np.ndarray]
"""One channel's pool: rows best first and their scores."""


def top_pool(scores: np.ndarray, pool: int) -> Ranking:
    """The ``pool`` best finite scores of ``scores`` (one per row), best first, ties by row."""
    finite = np.flatnonzero(np.isfinite(scores))
    top = finite[np.argsort(-scores[finite], kind="stable")[:pool]]
    return top, scores[top]


def fuse(rankings: dict[str, Ranking], fusion: Fusion) -> list[tuple[int, float]]:
    """The channels' pools combined by ``fusion``; (row, fused score) best first."""
    fused: dict[int, float] = {}
    for channel, (rows, scores) in rankings.items():
        w = fusion.weight(channel)
        if not w or len(rows) == 0:
            continue
        if fusion.method == "rrf":
            values = w / (fusion.k + np.arange(1, len(rows) + 1))
        else:
            lo, hi = float(scores.min()), float(scores.max())
            values = w * (scores - lo) / (hi - lo) if hi > lo else np.full(len(rows), w)
        for row, v in zip(rows.tolist(), values.tolist(), strict=True):
            fused[row] = fused.get(row, 0.0) + v
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))


# --- fitting --------------------------------------------------------------------------------

Judge = Callable[[int, int], bool]
"""``judge(question_index, row)``: does this window overlap the question's gold span?"""


def span_figures(ranked: Sequence[Sequence[int]], judge: Judge, k: int = 5) -> dict[str, float]:
    """span-hit@1, span-hit@k and MRR@10 of ranked rows per question."""
    n = len(ranked)
    hit1 = hitk = rr = 0.0
    for qi, rows in enumerate(ranked):
        first = next((r for r, row in enumerate(rows[:10], 1) if judge(qi, row)), None)
        hit1 += first == 1
        hitk += bool(first and first <= k)
        rr += 1.0 / first if first else 0.0
    return {"span_hit@1": hit1 / max(n, 1), f"span_hit@{k}": hitk / max(n, 1),
            "mrr@10": rr / max(n, 1)}


GRID = (0.0, 0.5, 1.0, 2.0)


def fit(
    per_question: Sequence[dict[str, Ranking]],
    judge: Judge,
    *,
    grid: Iterable[float] = GRID,
    method: Method = "score",
    k: int = RRF_K,
    fitted_on: str = "",
) -> Fusion:
    """The weights of ``grid`` (per channel) that maximise span-hit@1 + span-hit@5 + MRR@10
    over ``per_question`` channel pools; ties go to the smaller total weight."""
    values = list(grid)
    present = [c for c in CHANNELS if all(c in q for q in per_question)]
    best: tuple[tuple[float, float], Fusion, dict[str, float]] | None = None
    for combo in itertools.product(values, repeat=len(present)):
        if not any(combo):
            continue
        fusion = Fusion({c: float(w) for c, w in zip(present, combo, strict=True)}, k, method)
        ranked = [[row for row, _ in fuse(q, fusion)[:10]] for q in per_question]
        figs = span_figures(ranked, judge)
        key = (sum(figs.values()), -sum(combo))
        if best is None or key > best[0]:
            best = (key, fusion, figs)
    if best is None:
        return Fusion()
    _, fusion, figs = best
    weights = {c: fusion.weight(c) for c in CHANNELS}
    return Fusion(weights, k, method, fitted_on, {key: round(v, 4) for key, v in figs.items()})
