"""The likelihood gain: how much the reference answer makes the judged answer more likely."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus.errors import InputError
from corpus.models import Hit
from eval.likelihood import (
    WINDOW,
    answer_gains,
    lowest_window_gain,
    messages,
    reference_gain,
    reference_gains,
)
from eval.run import Pipeline, evaluate_item

QUESTION = "quando o produto escalar de dois vetores da negativo? e zero?"
REFERENCE = ("É negativo quando os vetores apontam em direções geralmente opostas; é zero quando "
             "são perpendiculares, porque a projeção de um sobre o outro é o vetor zero.")
RIGHT = ("Dá negativo quando eles apontam em sentidos geralmente opostos, e zero quando são "
         "perpendiculares: a projeção de um no outro vira o vetor zero.")
WRONG = ("Dá negativo quando o ângulo entre eles é menor que 90 graus, e zero quando são "
         "paralelos, porque projetar um no outro não acrescenta nada.")
LECTURE = ("Quando os dois vetores apontam em direções geralmente opostas, o produto escalar "
           "dá negativo. Se eles são perpendiculares, a projeção de um sobre o outro é o vetor "
           "zero, e o produto escalar é zero.")


class ReadsReference:
    """A deterministic scorer: each word of the reply is likely (log-probability -0.1) when the
    conversation already says it, unlikely (-3) otherwise."""

    def __init__(self) -> None:
        self.calls: list[list[dict[str, str]]] = []

    def logprobs(self, messages: list[dict[str, str]], reply: str) -> list[float]:
        self.calls.append(messages)
        said = " ".join(m["content"] for m in messages).lower()
        return [-0.1 if w.lower() in said else -3.0 for w in reply.split()]


def test_the_reference_is_read_once_with_and_once_without() -> None:
    scorer = ReadsReference()
    right = reference_gain(scorer, QUESTION, RIGHT, REFERENCE)
    wrong = reference_gain(scorer, QUESTION, WRONG, REFERENCE)
    assert right is not None and wrong is not None
    assert right > wrong > 0
    assert len(scorer.calls) == 4  # two answers, each read once with and once without
    assert sum(REFERENCE in m[-1]["content"] for m in scorer.calls[:2]) == 1
    assert reference_gain(scorer, QUESTION, "  ", REFERENCE) is None
    assert reference_gain(scorer, QUESTION, RIGHT, "") is None


def test_the_worst_stretch_is_the_lowest_mean_gain_of_a_window() -> None:
    # a long stretch the reference says nothing of, inside an answer that follows it: the mean
    # stays well above zero, the worst stretch is that stretch (no gain at all)
    aside = " ".join(["pipoca"] * WINDOW)
    gains = reference_gains(ReadsReference(), QUESTION, f"{RIGHT} {aside} {RIGHT}", REFERENCE)
    assert gains is not None
    assert gains["reference_gain"] is not None and gains["reference_gain"] > 0.2
    assert gains["reference_gain_low"] == 0.0
    plain = reference_gains(ReadsReference(), QUESTION, RIGHT, REFERENCE)  # shorter than WINDOW
    assert plain is not None and plain["reference_gain"] is not None
    assert plain["reference_gain_low"] == plain["reference_gain"] > 0.2
    assert lowest_window_gain([1.0] * 20 + [-2.0] * WINDOW + [1.0] * 20,
                              [0.0] * (40 + WINDOW)) == -2.0
    assert lowest_window_gain([1.0, 3.0], [0.0, 0.0]) == 2.0  # shorter than a window: all of it
    assert lowest_window_gain([], []) is None


def test_a_judged_item_with_a_reference_stores_its_gain_and_one_without_does_not() -> None:
    def judge(_messages: list[dict[str, str]]) -> str:
        return "Criteria: ok\nSupporting Evidence: ok\nScore: 3"

    p = Pipeline(judge=judge, correctness=False, likelihood=ReadsReference())
    row = {"id": "a", "question": QUESTION, "answer": RIGHT, "reference_answer": REFERENCE}
    item = evaluate_item(row, p)
    assert item["reference_gain"] is not None and item["reference_gain"] > 0
    assert item["reference_gain_low"] is not None
    json.dumps(item)  # stored as data in items.jsonl
    bare = evaluate_item({**row, "reference_answer": None}, p)
    assert bare.get("reference_gain") is None


def test_without_a_reference_the_answer_is_read_after_what_the_lecture_says_at_the_gold_span(
        ) -> None:
    """No reference answer, but a gold lecture and span: the gain comes from what the lecture
    says there, and a right answer gains more than a wrong one; text retrieved for the
    question is not read for it."""
    def judge(_messages: list[dict[str, str]]) -> str:
        return "Criteria: ok\nSupporting Evidence: ok\nScore: 3"

    asked: list[tuple[str, float, float]] = []

    def span_text(lecture: str, start: float, end: float) -> str:
        asked.append((lecture, start, end))
        return LECTURE

    scorer = ReadsReference()
    p = Pipeline(judge=judge, correctness=False, likelihood=scorer, span_text=span_text)
    row = {"id": "a", "question": QUESTION, "gold_lecture": "2016/dot-products",
           "gold_start": 60.0, "gold_end": 180.0}
    right = evaluate_item({**row, "answer": RIGHT}, p)
    wrong = evaluate_item({**row, "answer": WRONG}, p)
    assert asked[0] == ("2016/dot-products", 60.0, 180.0)
    assert right["reference_gain"] is None
    assert right["evidence_gain"] > wrong["evidence_gain"]
    assert right["evidence_gain_low"] is not None
    assert any(LECTURE in m[-1]["content"] for m in scorer.calls)
    retrieved = evaluate_item({"id": "b", "question": QUESTION, "answer": RIGHT,
                               "contexts": [LECTURE]}, p)
    assert retrieved.get("evidence_gain") is None


def test_a_given_answer_with_a_reference_is_not_read_after_the_lecture() -> None:
    """Given answers with a reference answer are labelled without the lecture's gain, so the
    longest pass is not read for them; this service's own answers still get it."""
    def judge(_messages: list[dict[str, str]]) -> str:
        return "Criteria: ok\nSupporting Evidence: ok\nScore: 3"

    scorer = ReadsReference()
    p = Pipeline(judge=judge, correctness=False, likelihood=scorer,
                 span_text=lambda lecture, start, end: LECTURE)
    row = {"id": "a", "question": QUESTION, "answer": RIGHT, "reference_answer": REFERENCE,
           "gold_lecture": "2016/dot-products", "gold_start": 60.0, "gold_end": 180.0}
    given = evaluate_item(row, p)
    assert given["reference_gain"] is not None and given.get("evidence_gain") is None
    assert not any(LECTURE in m[-1]["content"] for m in scorer.calls)
    own = evaluate_item({**row, "origin": "aula"}, p)
    assert own["reference_gain"] == given["reference_gain"]
    assert own["evidence_gain"] is not None
    assert any(LECTURE in m[-1]["content"] for m in scorer.calls)


def test_with_neither_gold_span_nor_reference_the_answer_is_read_at_the_first_passage_found(
        embedder) -> None:  # type: ignore[no-untyped-def]
    """A plain item (question and answer only): the lecture's words, gain and token match (the
    embedded E5's) are read at the passage the search puts first for the question and the
    answer together, which the item names, so a right answer reads better than a wrong one
    there; with a gold span or a reference answer nothing is located."""
    def judge(_messages: list[dict[str, str]]) -> str:
        return "Criteria: ok\nSupporting Evidence: ok\nScore: 3"

    searched: list[str] = []

    def search(text: str, k: int) -> list[Hit]:
        searched.append(text)
        other = Hit(corpus_id=2, score=0.5, lecture_id="2016/cross-products", title="", url="",
                    start=0.0, end=120.0, text="O produto vetorial de dois vetores no espaço.")
        first = Hit(corpus_id=1, score=0.9, lecture_id="2016/dot-products", title="", url="",
                    start=60.0, end=180.0, text=LECTURE)
        return [first, other][:k]

    scorer = ReadsReference()
    p = Pipeline(judge=judge, correctness=False, likelihood=scorer, search=search,
                 matcher=embedder)
    right = evaluate_item({"id": "a", "question": QUESTION, "answer": RIGHT}, p)
    wrong = evaluate_item({"id": "b", "question": QUESTION, "answer": WRONG}, p)
    assert f"{QUESTION} {RIGHT}" in searched and f"{QUESTION} {WRONG}" in searched
    assert (right["located_lecture"], right["located_start"], right["located_end"]) == (
        "2016/dot-products", 60.0, 180.0)
    assert right["located_gain"] > wrong["located_gain"]
    assert right["located_gain_low"] is not None
    assert right["located_recall"] > wrong["located_recall"]
    assert right["located_novelty"] < wrong["located_novelty"]
    assert right["located_match"] > wrong["located_match"]
    assert right["located_match_late"] > wrong["located_match_late"]
    assert right["match_model"] == embedder.model_id  # the scale the match was read on
    assert any(LECTURE in m[-1]["content"] for m in scorer.calls)
    assert right.get("evidence_gain") is None  # no gold span: the located reading only
    without_scorer = evaluate_item({"id": "a", "question": QUESTION, "answer": RIGHT},
                                   Pipeline(judge=judge, correctness=False, search=search))
    assert without_scorer["located_gain"] is None
    assert without_scorer["located_recall"] == right["located_recall"]
    assert without_scorer["located_match"] is None  # no token vectors given: not read
    english = evaluate_item({"id": "e", "question": QUESTION, "answer": (
        "It is negative when they point in generally opposite directions, and zero when they "
        "are perpendicular.")}, p)
    assert english["located_lecture"] == "2016/dot-products"
    assert english["located_match"] is None  # another language than the lecture's: no match
    with_reference = evaluate_item({"id": "c", "question": QUESTION, "answer": RIGHT,
                                    "reference_answer": REFERENCE}, p)
    assert with_reference.get("located_gain") is None
    assert with_reference.get("located_lecture") is None


def test_reference_and_lecture_share_the_pass_without_either() -> None:
    scorer = ReadsReference()
    gains = answer_gains(scorer, QUESTION, RIGHT, REFERENCE, LECTURE)
    assert len(scorer.calls) == 3  # without, after the reference, after the lecture
    assert gains["reference_gain"] == reference_gain(ReadsReference(), QUESTION, RIGHT,
                                                     REFERENCE)
    assert gains["evidence_gain"] is not None and gains["evidence_gain"] > 0
    assert answer_gains(ReadsReference(), QUESTION, " ", REFERENCE, LECTURE) == dict.fromkeys(
        gains)


def test_an_unknown_scorer_setting_is_one_clear_error(tmp_path: Path) -> None:
    from app.config import Settings
    from app.judging import likelihood_scorer

    assert likelihood_scorer(Settings(judge_likelihood="off")) is None
    with pytest.raises(InputError, match="AULA_JUDGE_LIKELIHOOD"):
        likelihood_scorer(Settings(judge_likelihood=str(tmp_path / "missing.gguf")))
    # a folder that holds no model: one error naming it when the first answer is scored
    scorer = likelihood_scorer(Settings(judge_likelihood=str(tmp_path)))
    assert scorer is not None
    with pytest.raises(InputError, match=str(tmp_path)):
        reference_gain(scorer, QUESTION, RIGHT, REFERENCE)


def test_the_judge_reads_a_gguf_quantised_unless_told_to_de_quantise_it(tmp_path: Path) -> None:
    """The model id each judged item stores says how its gains were read."""
    from app.config import Settings
    from app.judging import likelihood_scorer

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"")
    default = likelihood_scorer(Settings(judge_likelihood=str(gguf)))
    old = likelihood_scorer(Settings(judge_likelihood=str(gguf),
                                     judge_likelihood_engine="transformers"))
    assert default is not None and default.model_id == "m@llama.cpp"
    assert old is not None and old.model_id == "m@float32"
    with pytest.raises(ValueError, match="likelihood_engine"):
        Settings(judge_likelihood_engine="onnx")


@pytest.mark.slow
def test_the_embedded_model_gains_more_from_the_reference_on_a_right_answer() -> None:
    """The real scorer: the embedded judge's GGUF read in-process by llama.cpp."""
    from app.config import Settings
    from app.judging import likelihood_scorer

    scorer = likelihood_scorer(Settings(judge_likelihood="embedded"))
    assert scorer is not None
    right = reference_gain(scorer, QUESTION, RIGHT, REFERENCE)
    wrong = reference_gain(scorer, QUESTION, WRONG, REFERENCE)
    vague = reference_gain(scorer, QUESTION, "Depende dos vetores, cada caso é um caso.",
                           REFERENCE)
    assert right is not None and wrong is not None and vague is not None
    assert right > wrong
    assert right > vague
    # and from the lecture's text alone, with no reference answer
    from_lecture = {name: answer_gains(scorer, QUESTION, text, None, LECTURE)["evidence_gain"]
                    for name, text in (("right", RIGHT), ("wrong", WRONG))}
    assert from_lecture["right"] > from_lecture["wrong"]
    assert len(messages(QUESTION, None)) == 2


def test_token_recall_is_how_much_of_the_passage_the_answer_matches() -> None:
    import numpy as np

    from eval.signals import token_recall

    e = np.eye(4, dtype=np.float32)  # four unrelated token vectors
    passage = e[:2]
    assert token_recall(passage, passage) == pytest.approx(1.0)  # says all of it
    assert token_recall(e[:1], passage) == pytest.approx(0.5)  # says half of it
    assert token_recall(e[2:], passage) == pytest.approx(0.0)  # says none of it
    assert token_recall(e[:0], passage) is None
