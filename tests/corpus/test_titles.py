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


@pytest.mark.parametrize(("text", "named"), [
    ("resume a aula 4", {("aula", 4)}),
    ("FastAPI do Zero (2025), aula 04 (ao vivo)", {("aula", 4)}),
    ("aula-04", {("aula", 4)}),
    ("summarize lecture 12", {("aula", 12)}),
    ("Autovetores e autovalores | Capítulo 14, Essência da álgebra linear", {("cap", 14)}),
    ("resume o vídeo sobre bitcoin", set()),
    ("a aula de hoje foi sobre a regra 2", set()),
])
def test_a_numbered_lecture_is_read_from_a_request_a_title_or_an_id(
        text: str, named: set[tuple[str, int]]) -> None:
    from corpus.titles import numbered

    assert numbered(text) == named


def test_a_number_names_a_lecture_only_when_one_lecture_has_it() -> None:
    titles = Titles.of({"aula-04": "FastAPI do Zero (2025), aula 04 (ao vivo)",
                        "2016/eigenvalues": "Autovetores | Capítulo 14, Essência da álgebra",
                        "2017/chain": "Regra da cadeia | Capítulo 4, Essência do cálculo",
                        "2016/matmul": "Multiplicação | Capítulo 4, Essência da álgebra"})
    assert titles.by_number("resume a aula 4") == "aula-04"
    assert titles.by_number("resumo do capítulo 14") == "2016/eigenvalues"
    assert titles.by_number("resume o capítulo 4") is None  # two series have one
    assert titles.by_number("resume a aula 9") is None
