"""Hard negatives for ``aula adapt``: the windows of the same lecture that the base model likes
best for a generated question, kept apart from the question's own passage."""

from __future__ import annotations

import numpy as np
import pandas as pd

from corpus.adapt.questions import GeneratedQuestion
from corpus.adapt.train import Miner
from corpus.index import IndexData

# one lecture in two-minute windows every 90 s, another lecture of two windows
WINDOWS = [("a", 0, 120), ("a", 90, 210), ("a", 180, 300), ("a", 270, 390), ("a", 360, 480),
           ("a", 450, 570), ("b", 0, 120), ("b", 90, 210)]
# the base model's cosine of each window to the question: the neighbours of its passage first
LIKENESS = [0.70, 0.80, 0.95, 0.85, 0.60, 0.50, 0.40, 0.30]


def miner() -> Miner:
    segments = pd.DataFrame({
        "corpus_id": range(len(WINDOWS)),
        "lecture_id": [w[0] for w in WINDOWS],
        "start": [float(w[1]) for w in WINDOWS],
        "end": [float(w[2]) for w in WINDOWS],
        "text": [f"aula {lec} de {a} a {b} segundos" for lec, a, b in WINDOWS],
    })
    lectures = pd.DataFrame({"lecture_id": ["a", "b"], "title": ["A", "B"], "url": ["", ""]})
    s = np.asarray(LIKENESS, dtype=np.float32)
    vectors = np.stack([s, np.sqrt(1 - s**2), np.zeros_like(s)], axis=1)
    data = IndexData({"model_id": "test", "dim": 3}, segments, lectures, vectors)
    return Miner(data, lambda texts: np.tile(np.array([1.0, 0.0, 0.0], np.float32),
                                             (len(texts), 1)))


QUESTION = GeneratedQuestion("k", "a", 200.0, 230.0, "o que a aula diz aos 200 segundos?", "m")


def test_negatives_are_the_lectures_best_windows_that_do_not_hold_the_passage() -> None:
    (ex,) = miner().examples([QUESTION], same_lecture=2, other_lectures=1, gap=0)
    assert ex.positive == "aula a de 180 a 300 segundos"
    assert ex.negatives == ("aula a de 270 a 390 segundos", "aula a de 0 a 120 segundos",
                            "aula b de 0 a 120 segundos")


def test_a_gap_keeps_the_passages_neighbours_out_of_the_negatives() -> None:
    (ex,) = miner().examples([QUESTION], same_lecture=2, other_lectures=1, gap=90)
    # the windows within 90 s of the passage (0-120 ends 80 s before it, 270-390 starts 40 s
    # after it) may go on with the same explanation: the next best ones further away instead
    assert ex.negatives == ("aula a de 360 a 480 segundos", "aula a de 450 a 570 segundos",
                            "aula b de 0 a 120 segundos")
