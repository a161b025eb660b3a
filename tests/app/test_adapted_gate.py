"""The evidence gate that reads the course-adapted model's signals (pure parts): the signals,
the gate's own quote cut, and the default gate where an index has no adapted model."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from answer.evidence import Gate
from answer.pipeline import Pipeline
from answer.quote import QUOTE, QuoteSettings
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
    covered = {"top_unit": 0.9, "term_cov": 1.0}
    pipeline = Pipeline.from_settings(Settings(gate_file=path), None)
    assert pipeline.gate.decide([None], [0.9], feats=covered).quote_cut == 0.6
    assert pipeline.quote.gate_cut
    own = Settings(gate_file=path, quote_min_covered=0.9)
    assert not Pipeline.from_settings(own, None).quote.gate_cut
    # the shipped default gate carries none: the quote's fitted cut holds
    default = Pipeline.from_settings(Settings(gate_file=Path("default")), None)
    assert default.gate.decide([None], [0.9], feats=covered).quote_cut is None
    assert default.quote.min_covered == 0.86 and default.gate.weights == Gate.load().weights
    path.write_text('{"quote_min_covered": "high"}')
    with pytest.raises(InputError, match="quote_min_covered"):
        Gate.load(path)


def test_the_quote_is_held_to_the_cut_of_the_gate_that_decided() -> None:
    from answer.decide import Decider
    from answer.evidence import Decision
    from answer.question import understand
    from answer.quoting import Quoter
    from answer.replies import Reply
    from corpus.context import Passage
    from corpus.models import Hit

    class Doubting:  # an LLM that reads no passage as answering
        model_id = "fake"

        def first_token(self, messages: object, **kw: object) -> tuple[str, dict[str, float]]:
            return "Não", {"Não": 0.9, "Sim": 0.1}

    hit = Hit(1, 0.9, "aula-01", "Aula 1", "", 10.0, 40.0, "Um autovetor fica na sua reta.")
    passage = Passage(hit, hit.text, hit.start, hit.end, hit.start)

    def reply(decision: Decision, settings: QuoteSettings = QUOTE) -> Reply:
        quoter = Quoter(llm=Doubting(), embed=lambda texts, kind: np.zeros((len(texts), 2)),
                        settings=settings)
        events = quoter.events(understand("o que é um autovetor?"), [passage], [], decision, {})
        return next(e for e in events if isinstance(e, Reply))

    # P(covered) 0.7: over the adapted gate's own cut (0.5), under the default gate's (0.86)
    adapted = Gate(weights={"top_unit": 150.0, "adapted_z": 2.0, "term_cov": 6.0},
                   bias=-150.0, quote_min_covered=0.5)
    passed = Decision(True, [0], None, "P(covered)=0.70", 0.7, quote_cut=0.5)
    assert "no sentence answers" in reply(passed).reason  # read (no passage here), not declined
    # where the adapted signals are missing the default gate decides, and its cut holds
    unmeasured = {"top_unit": 0.91, "term_cov": 1.0}
    fallback = Decider(llm=None, gate=adapted).deciding(unmeasured)
    by_default = replace(passed, quote_cut=fallback.decide([None], [0.9],
                                                           feats=unmeasured).quote_cut)
    assert by_default.quote_cut is None
    assert "P(covered) < 0.86 to quote" in reply(by_default).reason
    # and an operator's cut holds whatever the gate
    operator = replace(QUOTE, min_covered=0.6, gate_cut=False)
    assert "no sentence answers" in reply(by_default, operator).reason
    assert "P(covered) < 0.80 to quote" in reply(passed, replace(operator, min_covered=0.8)
                                                 ).reason


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


def test_a_course_question_is_answered_only_where_the_default_gate_is_sure() -> None:
    # the course check took it for the course's organisation; the gate's decision says whether
    # the lectures say it: the default gate covered at the quote's cut (0.86) or over, not by
    # its fallback; never a gate with a cut of its own, which reads such questions as covered
    from answer.evidence import Decision

    said = Pipeline(llm=None).lectures_say
    assert said(Decision(True, [0], None, "P(covered)=0.90", 0.90))
    assert not said(Decision(True, [0], None, "P(covered)=0.80", 0.80))
    assert not said(Decision(True, [0], None, "fallback", 0.95, by_fallback=True))
    assert not said(Decision(False, [], None, "P(covered)=0.40", 0.40))
    assert not said(Decision(True, [0], None, "P(covered)=0.99", 0.99, quote_cut=0.5))
