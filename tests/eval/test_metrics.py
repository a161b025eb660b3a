"""Agreement and retrieval maths, checked against hand-computed values (and sklearn/scipy)."""

from __future__ import annotations

import math

import pytest

from corpus.models import Hit
from eval.metrics import (
    Span,
    accuracy,
    agreement,
    ar_by_class,
    cohen_kappa,
    confusion_matrix,
    first_hit_rank,
    hit_at_k,
    mrr,
    spearman,
    spearman_ar_manual,
)

# Hand-computed example (n = 10):
#   agreements 7 -> p_o = 0.7
#   manual marginals C 4, PC 3, I 3; automated C 4, PC 2, I 4
#   p_e = (4*4 + 3*2 + 3*4) / 100 = 0.34 -> kappa = 0.36 / 0.66 = 6/11
#   linear weights |i - j| on I=0 < PC=1 < C=2:
#     observed: three disagreements one class apart -> 0.30
#     expected: distance 1: 3*2 + 3*4 + 3*4 + 4*2 = 38; distance 2: 3*4 + 4*4 = 28 -> (38 + 56)/100
#     kappa_linear = 1 - 0.30 / 0.94 = 32/47
MANUAL = ["C", "C", "C", "PC", "PC", "I", "I", "C", "PC", "I"]
AUTO = ["C", "C", "PC", "PC", "I", "I", "I", "C", "C", "I"]


def test_kappa_hand_computed() -> None:
    assert accuracy(MANUAL, AUTO) == pytest.approx(0.7)
    assert cohen_kappa(MANUAL, AUTO) == pytest.approx(6 / 11)
    assert cohen_kappa(MANUAL, AUTO, weights="linear") == pytest.approx(32 / 47)


def test_kappa_matches_sklearn() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    order = {"I": 0, "PC": 1, "C": 2}
    m, a = [order[x] for x in MANUAL], [order[x] for x in AUTO]
    for weights in (None, "linear", "quadratic"):
        expected = metrics.cohen_kappa_score(m, a, labels=[0, 1, 2], weights=weights)
        assert cohen_kappa(MANUAL, AUTO, weights=weights) == pytest.approx(expected)


def test_agreement_leaves_missing_out() -> None:
    manual = [*MANUAL, "C", "PC", None]
    auto = [*AUTO, None, float("nan"), "C"]
    result = agreement(manual, auto)
    assert result["n"] == 10
    assert result["missing"] == 2  # manual present, automated missing; the third has no manual
    assert result["accuracy"] == pytest.approx(0.7)  # not dragged down by the missing ones
    assert result["kappa"] == pytest.approx(6 / 11)
    assert result["kappa_linear"] == pytest.approx(32 / 47)


def test_agreement_undefined_is_none_not_nan() -> None:
    empty = agreement(["C", "PC"], [None, None])
    assert {k: empty[k] for k in ("accuracy", "kappa", "kappa_linear", "n", "missing")} == {
        "accuracy": None, "kappa": None, "kappa_linear": None, "n": 0, "missing": 2}
    assert empty["accuracy_ci"] is None and empty["per_class"]["C"]["recall"] is None
    constant = agreement(["C", "C", "C"], ["C", "C", "C"])
    assert constant["accuracy"] == 1.0
    assert constant["kappa"] is None  # chance agreement is already perfect


def test_unknown_label_is_an_error() -> None:
    with pytest.raises(ValueError, match="'maybe'"):
        accuracy(["C"], ["maybe"])


def test_confusion_matrix_order_and_counts() -> None:
    table = confusion_matrix(MANUAL, AUTO)
    assert list(table.index) == ["C", "PC", "I"]
    assert list(table.columns) == ["C", "PC", "I"]
    assert table.index.name == "manual" and table.columns.name == "automated"
    assert table.loc["C"].tolist() == [3, 1, 0]
    assert table.loc["PC"].tolist() == [1, 1, 1]
    assert table.loc["I"].tolist() == [0, 0, 3]
    assert int(table.to_numpy().sum()) == 10


def test_ar_by_class() -> None:
    table = ar_by_class(["C", "C", "PC", "I", "C"], [1.0, 2 / 3, 1 / 3, None, 1.0])
    assert table.loc["C", "count"] == 3
    assert table.loc["C", "mean"] == pytest.approx((1 + 2 / 3 + 1) / 3)
    assert table.loc["C", "median"] == pytest.approx(1.0)
    assert table.loc["I", "count"] == 0
    assert math.isnan(table.loc["I", "mean"])


def test_spearman_with_ties_matches_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    ar = [1.0, 1.0, 2 / 3, 1 / 3, 0.0, 1.0, None]
    manual = ["C", "PC", "C", "PC", "I", "C", "I"]
    ordinal = [2, 1, 2, 1, 0, 2]
    expected = stats.spearmanr(ar[:6], ordinal).statistic
    assert spearman_ar_manual(ar, manual) == pytest.approx(expected)
    assert spearman([1, 1, 1], [1, 2, 3]) is None
    assert spearman([1], [2]) is None


def _hit(lecture: str, start: float, end: float) -> Hit:
    return Hit(
        corpus_id=0, score=0.8, lecture_id=lecture, title="", url="", start=start, end=end, text=""
    )


def test_first_hit_rank_needs_same_lecture_and_overlap() -> None:
    gold = Span("aula-2", 100.0, 200.0)
    hits = [
        _hit("aula-1", 100.0, 200.0),  # other lecture
        _hit("aula-2", 0.0, 100.0),  # only touches
        _hit("aula-2", 190.0, 300.0),  # overlaps
    ]
    assert first_hit_rank(gold, hits) == 3
    assert first_hit_rank(gold, hits[:2]) is None
    assert first_hit_rank([Span("aula-1", 150, 160), gold], hits) == 1
    as_dicts = [h.to_dict() for h in hits]
    assert first_hit_rank(gold, as_dicts) == 3
    assert first_hit_rank(Span("aula-2", 50.0, 50.0), hits) == 2  # a point inside


def test_hit_at_k_and_mrr() -> None:
    ranks = [1, 3, None, 2, float("nan")]
    assert hit_at_k(ranks, 1) == pytest.approx(1 / 5)
    assert hit_at_k(ranks, 3) == pytest.approx(3 / 5)
    assert mrr(ranks) == pytest.approx((1 + 1 / 3 + 1 / 2) / 5)
    assert hit_at_k([], 5) is None and mrr([]) is None


def test_agreement_says_how_far_to_trust_it() -> None:
    result = agreement(MANUAL, AUTO)
    lo, hi = result["accuracy_ci"]
    assert lo < result["accuracy"] < hi and 0.0 <= lo and hi <= 1.0
    k_lo, k_hi = result["kappa_linear_ci"]
    assert k_lo < result["kappa_linear"] < k_hi
    assert agreement(MANUAL, AUTO)["accuracy_ci"] == [lo, hi]  # seeded: the report is stable
    wide = agreement(MANUAL[:4], AUTO[:4])["accuracy_ci"]
    assert wide[1] - wide[0] > hi - lo  # fewer items, less certainty
    for c, row in result["per_class"].items():
        manual_c = [i for i, m in enumerate(MANUAL) if m == c]
        given_c = [i for i, a in enumerate(AUTO) if a == c]
        both = len(set(manual_c) & set(given_c))
        assert row["support"] == len(manual_c)
        assert row["recall"] == pytest.approx(both / len(manual_c))
        assert row["precision"] == pytest.approx(both / len(given_c))
