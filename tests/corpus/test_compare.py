"""Questions that compare two subjects: which subjects are read out of them, and how each
subject's best window joins the whole question's hits."""

from __future__ import annotations

import pytest

from corpus.compare import compared_subjects, with_sides


@pytest.mark.parametrize(("question", "sides"), [
    ("qual a diferença entre produto escalar e produto vetorial?",
     ("produto escalar", "produto vetorial")),
    ("qual a diferenca entre serie de fourier e transformada de fourier",
     ("serie de fourier", "transformada de fourier")),
    ("qual a diferença de span pra base", ("span", "base")),
    ("derivada vs limite, qual a relação?", ("derivada", "limite")),
    ("em que a atenção difere do MLP num transformer?", ("atenção", "MLP")),
    ("pq o produto vetorial é diferente do produto escalar?",
     ("produto vetorial", "produto escalar")),
    ("vc pode comparar convolução e transformada de fourier",
     ("convolução", "transformada de fourier")),
    ("tem diferença entre o teorema central do limite e a lei dos grandes números?",
     ("teorema central do limite", "lei dos grandes números")),
    ("what's the difference between the dot product and the cross product?",
     ("dot product", "cross product")),
    ("how does gradient descent differ from backpropagation?",
     ("gradient descent", "backpropagation")),
    ("how is a fourier series different from a fourier transform?",
     ("fourier series", "fourier transform")),
])
def test_the_two_compared_subjects_are_read_out_of_how_students_ask(
        question: str, sides: tuple[str, str]) -> None:
    assert compared_subjects(question) == sides


@pytest.mark.parametrize("question", [
    "o que é um autovetor?",
    "pq a derivada de e^x é ela mesma e a de 2^x não?",
    # a side that is no subject of its own: "R" alone finds anything
    "qual a diferença entre R e R0 numa epidemia?",
    # "compara" inside a question about something else
    "a função de custo compara a saída com o rótulo?",
    "o determinante é diferente de zero quando?",
    # a "vs" in an aside
    "pensando em teoria de grupos (deslizar vs girar o plano), pq e^(i pi) da -1?",
    # a clause, not a subject
    "qual a diferença entre o que ele fez no começo do vídeo quando desenhou a seta e o fim?",
])
def test_a_question_that_compares_no_two_subjects_is_left_alone(question: str) -> None:
    assert compared_subjects(question) is None


def test_each_sides_best_hit_comes_up_just_after_the_first_hit() -> None:
    whole = ["a1", "a2", "a3", "a4", "b9"]
    got = with_sides(whole, [["x1", "x2"], ["b9"]], key=str, k=5)
    assert got == ["a1", "x1", "b9", "a2", "a3"]  # no hit twice, k at most


def test_a_side_already_among_the_two_first_hits_changes_nothing() -> None:
    whole = ["a1", "b1", "c1", "d1"]
    assert with_sides(whole, [["b1"], ["a1"], []], key=str, k=10) == whole
    # third is not near enough: the answer reads two passages
    assert with_sides(whole, [["b1"], ["c1"]], key=str, k=10) == ["a1", "c1", "b1", "d1"]
