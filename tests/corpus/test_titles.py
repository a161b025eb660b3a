"""A lecture whose title names what a short question asks about comes first (corpus.titles)."""

from __future__ import annotations

import pytest

from corpus.titles import Titles, titled_first

TITLES = Titles.of({
    "2023/clt": "Mas o que é o Teorema do Limite Central?",
    "2023/gaussian-convolution": "Uma bela razão pela qual Gaussiano + Gaussiano = Gaussiano",
    "2016/snells-law": "Prova da lei de Snell usando molas",
    "2017/derivatives": "O paradoxo da derivada | Capítulo 2, Essência do cálculo",
    "2017/higher-order-derivatives": "Derivados de ordem superior | Capítulo 10",
    "2017/derivative-formulas-geometrically": "Fórmulas derivadas através da geometria",
    "2018/derivatives-and-transforms": "A outra maneira de visualizar derivadas",
    "2023/gaussian-integral": "Por que π está na distribuição normal (Gaussiana)",
})


@pytest.mark.parametrize(("question", "lectures"), [
    ("o que é o teorema do limite central?", {"2023/clt"}),
    ("o que significa o teorema do limite central", {"2023/clt"}),  # an asking word is none
    ("o que é a lei de snell?", {"2016/snells-law"}),
    ("O que é a Lei de Snell?", {"2016/snells-law"}),
    ("o que é a ordem superior?", {"2017/higher-order-derivatives"}),
    # a few titles hold its words: each is named
    ("o que é a derivada de ordem superior?", {"2017/higher-order-derivatives"}),
    ("o que é a gaussiana?", {"2023/gaussian-convolution", "2023/gaussian-integral"}),
    # many titles hold its words: none is named
    ("o que é a derivada?", set()),
    # a word no title holds: a longer question is the retriever's to order
    ("pq o teorema do limite central precisa de variáveis independentes?", set()),
    ("o que é?", set()),
])
def test_a_question_names_the_few_lectures_whose_titles_hold_all_its_words(
        question: str, lectures: set[str]) -> None:
    assert TITLES.named(question) == lectures


def test_the_named_lecture_s_best_hit_comes_first_and_the_rest_keep_their_order() -> None:
    hits = ["gauss@550", "gauss@0", "clt@1465", "clt@0", "snell@10"]
    of = lambda h: h.split("@")[0]  # noqa: E731
    assert titled_first(hits, {"clt"}, of) == ["clt@1465", "gauss@550", "gauss@0", "clt@0",
                                               "snell@10"]
    assert titled_first(hits, {"snell", "clt"}, of)[0] == "clt@1465"  # the best of them
    assert titled_first(hits, {"gauss"}, of) == hits  # already first
    assert titled_first(hits, {"derivadas"}, of) == hits  # no hit of it
    assert titled_first(hits, set(), of) == hits
