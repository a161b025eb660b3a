"""The gate's fitting and decision (pure), and the bench question reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.evidence import Gate, GateSample, fit, read_questions, term_coverage


def sample(answerable: bool, p: float, score: float, gold: bool | None = None) -> GateSample:
    feats = {"best_p": p, "top_score": score, "best_sim": score - 0.02,
             "term_cov": 1.0 if answerable else 0.5}
    return GateSample(answerable, [p, p - 0.3], [score, score - 0.05],
                      None if gold is None else [gold, False], feats)


def test_fit_separates_answerable_from_uncovered_and_reports_leave_one_out() -> None:
    samples = ([sample(True, 0.9 + i / 100, 0.88 + i / 200, True) for i in range(6)]
               + [sample(False, 0.6 + i / 50, 0.80 + i / 200) for i in range(6)])
    gate = fit(samples, model="m")
    assert gate.weights and gate.fitted["balanced_accuracy"] == 1.0
    assert gate.fitted["leave_one_out_balanced_accuracy"] >= 0.8
    yes = gate.decide([0.95, 0.5], [0.9], feats=samples[0].feats)
    no = gate.decide([0.65, 0.4], [0.8], feats=samples[-1].feats)
    assert yes.covered and yes.order[0] == 0
    assert not no.covered and no.order == [] and "P(covered)" in no.reason
    assert Gate.from_json(gate.to_json()) == gate  # stored and read back unchanged


def test_threshold_gate_keeps_the_best_passage_and_those_above_p_pass() -> None:
    gate = Gate(p_covered=0.7, p_pass=0.6)
    d = gate.decide([0.65, 0.9, 0.2], [0.9, 0.85, 0.8], max_passages=3)
    assert d.covered and d.order == [0, 1]
    assert not gate.decide([0.5, None], [0.9]).covered
    assert not gate.decide([None, None], [0.9]).covered


def test_term_coverage_finds_missing_subjects() -> None:
    texts = ["a derivada mede a taxa de variação da função"]
    assert term_coverage("oq a derivada da funçao mede?", texts) == 1.0
    assert term_coverage("como faço merge de dataframes no pandas", texts) == 0.0


def test_a_bad_question_line_is_named(tmp_path: Path) -> None:
    f = tmp_path / "q.jsonl"
    f.write_text('{"id": "a1", "question": "x", "answerable": false}\n{"id": "a2"}\n')
    with pytest.raises(ValueError, match=r"q.jsonl, line 2: missing field 'question'"):
        read_questions(f)
    f.write_text('{"id": "a1", "question": "x", "answerable": true}\n')
    with pytest.raises(ValueError, match="line 1: an answerable question needs gold_lecture"):
        read_questions(f)
