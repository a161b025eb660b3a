"""Labels from the cheap signals alone, fitted on answers by another writer and read on the
new-style test part: a step towards a label model that holds across writers.

Signals, read once by the llama.cpp scorer and kept in ``bench/data/judge_writers_signals.jsonl``
(the first 61 answers of ``judge_styles_3b1b.jsonl``, 21 questions, and the 60 of
``judge_notes_3b1b.jsonl``): the answer's words against the reference (``reference_novelty``,
``reference_recall``), its gains from the reference (``reference_gain``, ``_low``), and the
recall direction, the reference read after the answer (``cover``: the reference's gain from the
answer as a share of its gain from itself; ``cover_low``: the worst 20-token stretch of that
share; ``recall_gain``: the mean gain). A logistic model per signal set is read by
leave-one-question-out on the fitting answers (the choice), then fitted on all of them and read
once on the test part.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.common import DATA, label_figures, read_jsonl, report

SETS = {
    "precision": ("reference_gain", "reference_gain_low", "reference_novelty",
                  "reference_recall"),
    "precision_recall": ("reference_gain", "reference_gain_low", "reference_novelty",
                         "reference_recall", "cover", "cover_low", "recall_gain"),
}


def _x(rows: list[dict[str, Any]], names: tuple[str, ...]) -> np.ndarray:
    return np.array([[r.get(n) or 0.0 for n in names] for r in rows], dtype=float)


def _fitted(x: np.ndarray, y: list[str]) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(x, y)


def main() -> None:
    rows = read_jsonl(DATA / "judge_writers_signals.jsonl")
    fit = [r for r in rows if r["id"].startswith("s-")]
    test = [r for r in rows if r["id"].startswith("n-")]
    groups = [r["id"].split("-")[1] for r in fit]
    y = [r["label"] for r in fit]
    figures: dict[str, Any] = {"fitting_answers": len(fit), "test_answers": len(test)}
    for name, names in SETS.items():
        x = _x(fit, names)
        loqo = list(y)
        for g in sorted(set(groups)):
            held = [i for i, q in enumerate(groups) if q == g]
            kept = [i for i, q in enumerate(groups) if q != g]
            model = _fitted(x[kept], [y[i] for i in kept])
            for i, label in zip(held, model.predict(x[held]), strict=True):
                loqo[i] = str(label)
        for k, v in label_figures(y, loqo).items():
            figures[f"{name}_fit_loqo_{k}"] = v
        auto = [str(a) for a in _fitted(x, y).predict(_x(test, names))]
        for k, v in label_figures([r["label"] for r in test], auto).items():
            figures[f"{name}_test_{k}"] = v
    report("judge_writers", figures)


if __name__ == "__main__":
    main()
