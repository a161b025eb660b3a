"""Fitting logistic models (scikit-learn) into ``eval.logistic`` objects, and the
cross-validation that chooses them: the evidence gate's signals (``select_logistic``), the
course check (``fit_logistic``, ``cross_validated_p``), the label model's per-label scores
(``fit_classes``). Serving reads the fitted models without scikit-learn.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from eval.logistic import Logistic


def balanced_accuracy(pairs: Sequence[tuple[bool, bool]]) -> float:
    """Balanced accuracy of (truth, predicted) pairs."""
    pos = [p for t, p in pairs if t]
    neg = [not p for t, p in pairs if not t]
    parts = [sum(xs) / len(xs) for xs in (pos, neg) if xs]
    return sum(parts) / len(parts) if parts else 0.0


def _regression(c: float, max_iter: int = 100) -> Any:
    # scikit-learn is imported only to fit: the service predicts without it
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, class_weight="balanced", max_iter=max_iter)


def _scaled(rows: np.ndarray, min_scale: float = 0.0
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``rows`` standardised, with their mean and scale (a scale of 0, or under ``min_scale``,
    reads 1)."""
    mu, sd = rows.mean(axis=0), rows.std(axis=0)
    sd[(sd == 0) | (sd < min_scale)] = 1.0
    return (rows - mu) / sd, mu, sd


def _standardised(rows: np.ndarray, labels: Any, c: float, max_iter: int = 100,
                  min_scale: float = 0.0) -> tuple[Any, np.ndarray, np.ndarray]:
    """A balanced logistic regression fitted on ``rows`` standardised (``_scaled``), with their
    mean and scale."""
    z, mu, sd = _scaled(rows, min_scale)
    return _regression(c, max_iter).fit(z, labels), mu, sd


def leave_one_out(x: np.ndarray, y: np.ndarray, c: float) -> list[tuple[bool, bool]]:
    """(truth, prediction of a model fitted without it) for each row, on standardised
    features; a row whose leaving out leaves one class is skipped."""
    out = []
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        if len(set(y[keep])) < 2:
            continue
        m, mu, sd = _standardised(x[keep], y[keep], c)
        out.append((bool(y[i]), bool(m.predict(((x[i] - mu) / sd)[None])[0])))
    return out


def select_logistic(rows: Sequence[Mapping[str, float]], truth: Sequence[bool],
                    names: Sequence[str], allowed: Callable[[Sequence[str]], bool],
                    c_grid: Sequence[float] = (0.3, 1.0, 3.0)
                    ) -> tuple[Logistic, float, list[dict[str, Any]]]:
    """Balanced logistic regression on standardised features, the subset of ``names`` (one
    that ``allowed`` accepts) and the regularisation chosen by leave-one-out balanced accuracy
    (ties: fewer features, then stronger regularisation): the model in raw units (weights
    rounded to 6 places), its leave-one-out figure, and the 8 best rows of the table."""
    x_all = np.array([[r[k] for k in names] for r in rows], dtype=float)
    y = np.array(truth)
    table: list[dict[str, Any]] = []
    for n in range(1, len(names) + 1):
        for cols in itertools.combinations(range(len(names)), n):
            if not allowed([names[j] for j in cols]):
                continue
            for c in c_grid:
                hits = leave_one_out(x_all[:, cols], y, c)
                table.append({"features": [names[j] for j in cols], "C": c,
                              "loo": round(balanced_accuracy(hits), 4)})
    best = max(table, key=lambda r: (r["loo"], -len(r["features"]), -r["C"]))
    cols = tuple(names.index(f) for f in best["features"])
    m, mu, sd = _standardised(x_all[:, cols], y, best["C"])
    coef = m.coef_[0] / sd
    bias = float(m.intercept_[0] - (m.coef_[0] * mu / sd).sum())
    top = sorted(table, key=lambda r: -r["loo"])[:8]
    model = Logistic(tuple(round(float(w), 6) for w in coef), round(bias, 6),
                     tuple(best["features"]))
    return model, float(best["loo"]), top


def fit_logistic(x: Any, y: Any, *, c: float, max_iter: int = 100) -> Logistic:
    """A balanced logistic regression on the features as they are (a vector model)."""
    lr = _regression(c, max_iter).fit(x, y)
    return Logistic(tuple(lr.coef_[0].tolist()), float(lr.intercept_[0]))


def cross_validated_p(x: Any, y: Any, *, c: float, folds: int, max_iter: int = 100
                      ) -> np.ndarray:
    """Each row's P(positive) from a model fitted on the other folds (stratified, shuffled
    with seed 0)."""
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    return cross_val_predict(_regression(c, max_iter), x, y, method="predict_proba",
                             cv=StratifiedKFold(folds, shuffle=True, random_state=0))[:, 1]


def fit_classes(x: np.ndarray, labels: Sequence[str], *, c: float, max_iter: int = 100
                ) -> dict[str, Any]:
    """A balanced multinomial regression on standardised features: ``mean``, ``scale``, one
    ``coef`` row and ``intercept`` per class (two for two classes, P by softmax) and
    ``classes``, as lists."""
    lr, mean, scale = _standardised(x, list(labels), c, max_iter, min_scale=1e-9)
    coef, intercept = lr.coef_, lr.intercept_
    if len(lr.classes_) == 2:  # binary: scikit-learn keeps one row; make it two
        coef = np.vstack([-coef[0] / 2, coef[0] / 2])
        intercept = np.array([-intercept[0] / 2, intercept[0] / 2])
    return {"mean": mean.tolist(), "scale": scale.tolist(), "coef": coef.tolist(),
            "intercept": intercept.tolist(), "classes": lr.classes_.tolist()}


def fit_ordinal(x: np.ndarray, labels: Sequence[str], order: Sequence[str], *, c: float
                ) -> dict[str, Any]:
    """A balanced cumulative-logit (proportional odds) regression on standardised features:
    one score ``coef · z`` for every label, with ``order``'s labels from lowest to highest cut
    apart at increasing ``intercept``s (``P(label ≤ order[k]) = sigmoid(intercept[k] - score)``);
    an L2 penalty of ``1 / (2c)`` on the weights, classes weighed as scikit-learn's "balanced".
    Returns ``mean``, ``scale``, ``coef`` (one row), ``intercept`` (one cut fewer than labels)
    and ``classes`` (``order``), as lists."""
    from scipy.optimize import minimize
    from scipy.special import expit

    z, mean, scale = _scaled(x, min_scale=1e-9)
    y = np.array([list(order).index(lab) for lab in labels])
    counts = np.bincount(y, minlength=len(order))
    if (counts == 0).any():
        raise ValueError(f"no item labelled {order[int(np.argmin(counts))]!r} to fit on")
    weight = (len(y) / (len(order) * counts))[y]
    k, cuts = z.shape[1], len(order) - 1

    def thresholds(p: np.ndarray) -> np.ndarray:
        # the first cut, then positive steps: the cuts stay in order
        return np.cumsum(np.concatenate([p[k:k + 1], np.exp(p[k + 1:])]))

    def loss(p: np.ndarray) -> float:
        cum = expit(thresholds(p)[None, :] - (z @ p[:k])[:, None])
        edges = np.hstack([np.zeros((len(y), 1)), cum, np.ones((len(y), 1))])
        prob = edges[np.arange(len(y)), y + 1] - edges[np.arange(len(y)), y]
        return float(-(weight * np.log(np.clip(prob, 1e-12, None))).sum()
                     + (p[:k] @ p[:k]) / (2 * c))

    start = np.concatenate([np.zeros(k), [-1.0], np.zeros(cuts - 1)])
    p = minimize(loss, start, method="L-BFGS-B").x
    return {"mean": mean.tolist(), "scale": scale.tolist(), "coef": [p[:k].tolist()],
            "intercept": thresholds(p).tolist(), "classes": list(order)}
