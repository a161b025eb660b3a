"""The evidence gate that reads the course-adapted model's signals (pure parts): the signals,
the gate's own quote cut, and the default gate where an index has no adapted model."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from answer.evidence import Gate
from answer.pipeline import Pipeline
from app.config import Settings
from corpus.adapt.signals import AdaptedSignals
from corpus.errors import InputError


class Fixed:
    """An embedder whose question vector is fixed: the signals' arithmetic, by hand."""

    def embed(self, texts: list[str], kind: str) -> np.ndarray:
        return np.array([[1.0, 0.0]] * len(texts), dtype=np.float32)


def test_signals_are_the_best_unit_and_how_far_it_stands_out() -> None:
    units = np.array([[0.9, 0.1], [0.5, 0.5], [0.3, 0.7], [0.1, 0.9]], dtype=np.float32)
    got = AdaptedSignals(Fixed(), units)("qualquer pergunta")
    scores = units @ np.array([1.0, 0.0])
    assert got["adapted_top"] == pytest.approx(0.9)
    assert got["adapted_z"] == pytest.approx((0.9 - scores.mean()) / scores.std(), rel=1e-5)


def adapted_gate(tmp_path: Path, **extra: object) -> Path:
    gate = Gate(weights={"adapted_top": 40.0, "adapted_z": 1.0, "term_cov": 2.0}, bias=-40.0,
                min_p=0.7, **extra)  # type: ignore[arg-type]
    path = tmp_path / "gate.json"
    path.write_text(gate.to_json())
    return path


def test_the_gate_decides_on_the_adapted_signals() -> None:
    gate = Gate(weights={"adapted_top": 40.0, "adapted_z": 1.0, "term_cov": 2.0}, bias=-40.0)
    assert gate.reads_adapted and not Gate(weights={"top_unit": 1.0}).reads_adapted
    close = {"adapted_top": 0.85, "adapted_z": 6.0, "term_cov": 1.0}
    apart = {"adapted_top": 0.75, "adapted_z": 4.0, "term_cov": 1.0}
    assert gate.decide([None], [0.9], feats=close).covered
    assert not gate.decide([None], [0.9], feats=apart).covered


def test_a_gate_carries_its_own_quote_cut_unless_the_operator_sets_one(tmp_path: Path
                                                                        ) -> None:
    path = tmp_path / "gate.json"
    path.write_text(Gate(weights={"top_unit": 100.0, "term_cov": 2.0}, bias=-90.0,
                         quote_min_covered=0.6).to_json())
    assert Pipeline.from_settings(Settings(gate_file=path), None).quote.min_covered == 0.6
    own = Settings(gate_file=path, quote_min_covered=0.9)
    assert Pipeline.from_settings(own, None).quote.min_covered == 0.9
    # the shipped default gate leaves the quote's fitted cut as it is
    default = Pipeline.from_settings(Settings(gate_file=Path("default")), None)
    assert default.quote.min_covered == 0.86 and default.gate.weights == Gate.load().weights
    path.write_text('{"quote_min_covered": "high"}')
    with pytest.raises(InputError, match="quote_min_covered"):
        Gate.load(path)


def test_an_adapted_gate_without_an_adapted_model_gives_way_to_the_default(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        pipeline = Pipeline.from_settings(Settings(gate_file=adapted_gate(tmp_path)), None)
    assert not pipeline.gate.reads_adapted and pipeline.gate.weights == Gate.load().weights
    warned = [r.getMessage() for r in caplog.records if "course-adapted" in r.getMessage()]
    assert len(warned) == 1 and "aula adapt" in warned[0]


def test_signals_that_could_not_be_measured_leave_the_decision_to_the_default_gate() -> None:
    from answer.decide import Decider

    gate = Gate(weights={"top_unit": 150.0, "adapted_z": 2.0, "term_cov": 6.0}, bias=-150.0)
    decider = Decider(llm=None, gate=gate)
    measured = {"top_unit": 0.91, "adapted_z": 6.0, "term_cov": 1.0}
    assert decider.deciding(measured) is gate
    # read as 0, the missing z-score would decline every question; the default gate decides
    unmeasured = {"top_unit": 0.91, "term_cov": 1.0}
    assert not gate.decide([None], [0.9], feats=unmeasured).covered
    fallback = decider.deciding(unmeasured)
    assert fallback.weights == Gate.load().weights
    assert fallback.decide([None], [0.9], feats=unmeasured).covered
