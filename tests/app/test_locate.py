"""Which questions ask where (a lecture, a minute), and how the moment is told."""

from __future__ import annotations

import pytest

from answer.locate import asks_where, clock, where_answer, where_topic
from corpus.context import Passage
from corpus.models import Hit


@pytest.mark.parametrize("question", [
    "em que parte do video ele explica a regra da cadeia",
    "em q parte do video ele explica o determinante",
    "em qual aula ele fala de autovetores?",
    "qual video fala sobre a transformada de fourier",
    "em que minuto ele resolve o problema",
    "onde o professor explica o determinante negativo?",
    "tem algum video sobre bitcoin?",
    "which video explains backpropagation?",
    "at what minute does he talk about softmax",
])
def test_questions_about_the_video_ask_where(question: str) -> None:
    assert asks_where(question)


@pytest.mark.parametrize("question", [
    "onde a derivada é zero?",
    "em que ponto a função é máxima?",
    "em que parte do grafico a derivada é negativa",
    "em que momento da evolução a função explode",
    "qual parte da matriz muda",
    "what time complexity does attention have",
    "where is the maximum of this function?",
    "no slide onde ele mostra a matriz girando, pq as colunas sao onde os vetores vao parar?",
    "o que ele quis dizer no trecho sobre a matriz inversa?",
    "no minuto 5 ele fala de pi, pq pi aparece ali?",
])
def test_questions_about_the_subject_do_not(question: str) -> None:
    assert not asks_where(question)


@pytest.mark.parametrize(("question", "topic"), [
    ("em qual aula ele explica a vantagem da ReLU?", "vantagem da ReLU?"),
    ("em que parte do vídeo ele fala sobre a regra da cadeia", "regra da cadeia"),
    ("which lecture covers backpropagation?", "backpropagation?"),
    ("em que aula vai ser a prova?", "vai ser a prova?"),
    ("o que é um autovetor?", "o que é um autovetor?"),
])
def test_the_topic_of_a_where_question_is_what_it_asks_about(question: str, topic: str) -> None:
    assert where_topic(question) == topic


def _passage(lecture: str, title: str, start: float, answer_start: float, text: str) -> Passage:
    hit = Hit(1, 0.9, lecture, title, "https://youtu.be/x", start, start + 120, text)
    return Passage(hit, text, start, start + 120, answer_start)


def test_the_moment_is_named_with_its_time_and_another_lecture_too() -> None:
    first = _passage("calc/chain", "Regra da cadeia", 600, 643.5,
                     "🎵Música🎵 A regra da cadeia diz que a derivada de g(h(x)) é g'(h(x)) h'(x).")
    near = _passage("calc/chain", "Regra da cadeia", 660, 700, "Outra frase.")
    other = _passage("calc/intro", "Essência do cálculo", 0, 14.9, "Olá.")
    text = where_answer([first, near, other], "pt")
    assert text.startswith("Isso está em «Regra da cadeia», a partir de 10:43 [1]. "
                           "Também em «Essência do cálculo», a partir de 0:14 [3].")
    assert "“A regra da cadeia diz que" in text and "Música" not in text
    assert "10:43" in where_answer([first], "pt") and "[2]" not in where_answer([first], "pt")
    assert where_answer([first], "en").startswith("That is in “Regra da cadeia”, from 10:43 [1].")
    assert clock(3725) == "1:02:05"
