"""The logistic model every fitted file reads (``eval.logistic``): the shipped gate, course check
and label model give the same P as before they shared it, and a bad file names its field."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from answer.course import CourseCheck
from answer.evidence import Gate
from corpus.errors import InputError
from eval.label_model import LabelModel
from eval.logistic import Logistic
from tests.conftest import ROOT

# P computed with each model's own sigmoid before the shared class existed
GATE_FEATURES = [
    {"top_unit": 0.89, "term_cov": 0.5, "top_score": 0.9, "idf_cov": 1.0},
    {"top_unit": 0.88, "term_cov": 1.0, "top_score": 0.93, "idf_cov": 0.995},
    {"top_unit": 0.905, "term_cov": 0.25, "top_score": 0.87, "idf_cov": 0.5},
]
GATE_P = [0.238183312748274, 0.23478814737639492, 0.6695078050580114]
GATE_FALLBACK_P = [None, 0.9688831052812614, None]
STRICT_P = [0.2974422114950151, 0.29409944752997735, 0.6432088429977939]
COURSE_P = {1: 0.6877772408853775, 2: 0.4960180181432621, 3: 0.44759442970666874}
LABEL_ROWS = [
    {"evidence_recall": 0.2, "coverage": 0.95, "evidence_gain": 0.7, "reference_novelty": 0.4,
     "reference_gain_low": 0.5, "claim_min": 0.7, "strict_min": 0.8, "claim_mean": 0.8,
     "ar": 1.0, "reference_gain": 0.6, "claim_share": 0.75},
    {"claim_share": 0.5, "evidence_novelty": 0.3, "claim_min": 0.6, "evidence_gain": 0.2,
     "claim_count": 0.25, "claim_mean": 0.7, "coverage": 0.9},
    {"strict_mean": 0.9},
    # an answer with a reference judged without the LLM: its words and gains alone (ordinal)
    {"reference_gain": 0.6, "reference_recall": 0.3, "reference_gain_low": 0.2},
]
LABEL_P = [
    {"C": 0.3198011650713632, "I": 0.1400551829841752, "PC": 0.5401436519444616},
    {"C": 0.12361126544948059, "I": 0.5929676633024732, "PC": 0.28342107124804616},
    {"C": 0.49576797736305467, "I": 0.09948899202808907, "PC": 0.4047430306088563},
    {"I": 0.3565641142073327, "PC": 0.4586492366560695, "C": 0.1847866491365978},
]


def test_the_shipped_gates_give_the_same_p_as_before() -> None:
    gate, strict = Gate.load(), Gate.load(Path("strict"))
    assert [gate.p_covered_of(f) for f in GATE_FEATURES] == GATE_P
    assert [gate.fallback_p(f) for f in GATE_FEATURES] == GATE_FALLBACK_P
    assert [strict.p_covered_of(f) for f in GATE_FEATURES] == STRICT_P


def test_the_shipped_course_check_gives_the_same_p_as_before() -> None:
    check = CourseCheck.load(None)
    assert check is not None
    for k, p in COURSE_P.items():
        assert check.p([math.sin(k * i + 1) * 0.05 for i in range(len(check.weights))]) == p


def test_the_shipped_label_model_gives_the_same_p_as_before() -> None:
    raw = json.loads((ROOT / "eval" / "labels.json").read_text(encoding="utf-8"))
    model = LabelModel.from_dict(raw["label_model"])
    # a refit on the same answers may move the last bit of a coefficient
    assert [model.probabilities(r) for r in LABEL_ROWS] == [pytest.approx(p, rel=1e-12)
                                                             for p in LABEL_P]


def test_a_model_round_trips_and_reads_named_features_or_a_vector() -> None:
    named = Logistic((2.0, -1.0), 0.5, ("a", "b"), mean=(1.0, 0.0), scale=(2.0, 1.0))
    assert Logistic.from_json(named.to_json()) == named
    assert named.p({"a": 3.0, "b": 0.5}) == pytest.approx(1 / (1 + math.exp(-2.0)))
    assert named.p({"a": 1.0}) == pytest.approx(1 / (1 + math.exp(-0.5)))  # b reads 0
    vector = Logistic((1.0, 1.0), -1.0)
    assert Logistic.from_json(vector.to_json()) == vector
    assert vector.predict([0.5, 0.5]) and not vector.predict([0.0, 0.5])
    with pytest.raises(ValueError, match="a vector of 3 numbers"):
        vector.p([1.0, 2.0, 3.0])


def test_a_bad_model_file_names_the_file_and_the_field() -> None:
    with pytest.raises(InputError, match="m.json: missing field 'bias'"):
        Logistic.from_json('{"weights": [1]}', "m.json")
    with pytest.raises(InputError, match="m.json: field 'weights' must be a list of numbers"):
        Logistic.from_json('{"weights": ["x"], "bias": 0}', "m.json")
    with pytest.raises(InputError, match="gate.json: field 'fallback.bias' must be a number"):
        Gate.from_json('{"weights": {"top_unit": 1}, "fallback": {"weights": {"top_unit": 1},'
                       ' "bias": "high"}}', "gate.json")
    with pytest.raises(InputError, match="course.json: field 'bias' must be a number"):
        CourseCheck.from_json('{"model_id": "e5", "weights": [1], "bias": null, '
                              '"threshold": 0.7}', "course.json")
    with pytest.raises(InputError, match=r"labels.json: missing field 'models\[0\].classes'"):
        LabelModel.from_dict({"models": [{"features": ["ar"]}]}, "labels.json")
