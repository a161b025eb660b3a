"""An answer that hands the question back gets the lecture's words (answer/substance.py)."""

from __future__ import annotations

from answer.substance import MIN_NEW_WORDS, new_words, unloop, with_substance

PASSAGES = [
    "Se o primeiro bloco tiver uma massa 100 vezes maior que a do segundo, o número total de "
    "colisões tem os mesmos dígitos iniciais de pi: 31 colisões.",
    "A conservação da energia dá um círculo no espaço de estados, e cada colisão é um salto "
    "entre pontos desse círculo.",
]
QUESTION = "pq o numero de colisoes dos blocos da os digitos de pi"


def test_a_restated_question_is_replaced_by_the_best_passage() -> None:
    """The answer restates the question and cites [2]; the student gets the first passage,
    the best, whatever the empty answer's marker said."""
    made = with_substance("O número de colisões dos blocos dá os dígitos de pi é [2].",
                          QUESTION, PASSAGES, "pt")
    assert made.dropped == 1 and made.quoted == 1
    assert made.text.startswith("Trecho da aula que responde: “Se o primeiro bloco")
    assert made.text.endswith("[1]")


def test_an_answer_about_itself_says_nothing() -> None:
    made = with_substance("A resposta é [1, 2].", QUESTION, PASSAGES, "pt")
    assert made.quoted == 1 and "31 colisões" in made.text


def test_an_answer_with_content_stands_untouched() -> None:
    text = ("Com massas na razão 100 para 1 acontecem 31 colisões, e cada fator 100 acrescenta "
            "um dígito de pi [1].")
    made = with_substance(text, QUESTION, PASSAGES, "pt")
    assert made.text == text and made.quoted is None and made.dropped == 0
    assert made.new_words >= MIN_NEW_WORDS


def test_a_thin_answer_keeps_its_sentence_and_gains_the_quote() -> None:
    made = with_substance("Não é comutativa [1].", "multiplicaçao de matriz é comutativa?",
                          ["A ordem da multiplicação importa: AB e BA são diferentes."], "pt")
    assert made.text.startswith("Não é comutativa [1]. Trecho da aula")
    assert made.quoted == 1


def test_words_match_across_spelling_and_inflection() -> None:
    # stems and folded accents: "autovetores" answers nothing new to "autovetor"
    assert new_words("Os autovetores da rotação [1].", "rotacao tem autovetor?") == []
    assert new_words("Eles ficam na mesma reta [1].", "rotacao tem autovetor?") == ["fic",
                                                                                   "mesm",
                                                                                   "ret"]


def test_an_english_question_is_told_the_quote_is_the_lecture_s_words() -> None:
    made = with_substance("The answer is [1].", "why do the block collisions count pi?",
                          PASSAGES, "en")
    assert made.text.startswith("The lecture passage that answers")


def test_no_passages_leaves_the_answer_as_it_is() -> None:
    assert with_substance("X é [1].", "o que é X?", [], "pt").text == "X é [1]."


def test_a_sentence_said_twice_is_kept_once() -> None:
    text = ("Quarentena de metade dos infectados não faz metade da população adoecer [1]. "
            "Quarentena de metade dos infectados não faz metade da população adoecer [2].")
    made = with_substance(text, "se so metade dos infectados for pra quarentena?", PASSAGES, "pt")
    assert made.text == ("Quarentena de metade dos infectados não faz metade da população "
                         "adoecer [1, 2].")  # both passages said it: both stay cited
    assert made.dropped == 1


def test_a_looping_sentence_is_cut_where_it_loops() -> None:
    loop = ("R é a chance de um infectado contaminar outro, enquanto R0 é a probabilidade de "
            "uma pessoa infectada por outra, dividida pela probabilidade de uma pessoa infectada "
            "por outra, dividida pela probabilidade de uma pessoa infectada por outra, dividida "
            "pela probabilidade de uma pessoa [1].")
    assert unloop(loop) == ("R é a chance de um infectado contaminar outro, enquanto R0 é a "
                            "probabilidade de uma pessoa infectada por outra, dividida pela "
                            "probabilidade de uma pessoa infectada por outra… [1]")
    comparison = ("A área do círculo é pi r ao quadrado, e a da esfera é quatro vezes a área do "
                  "círculo é pi r ao quadrado [1].")
    assert unloop(comparison) == comparison  # said twice is not a loop


def test_a_sentence_cut_at_an_ellipsis_is_not_taken_for_a_restatement() -> None:
    text = "A soma 1 + 1/4 + 1/9 + ... da pi²/6 por causa dos faróis no lago [1]."
    made = with_substance(text, "como q a soma 1 + 1/4 + 1/9 + ... da pi²/6?", PASSAGES, "pt")
    assert made.text.startswith("A soma 1 + 1/4")


def test_a_restatement_cut_at_an_ellipsis_goes_whole() -> None:
    question = "pq a torre infinita x^x^x^... para de convergir quando x passa de e^(1/e)"
    made = with_substance("A torre infinita x^x^x^... para de convergir quando x passa de "
                          "e^(1/e) [2].", question, PASSAGES, "pt")
    assert made.dropped == 1 and made.quoted == 1
    assert made.text.startswith("Trecho da aula que responde:")  # no "A torre infinita x^x^x^..."


def test_a_loop_across_sentences_stops_at_the_third_opening() -> None:
    text = ("O log de a vezes b é log a mais log b, pois o log conta os zeros [1]. "
            "O log de 1000 vezes x é 3 mais o log de x [2]. "
            "O log de 1000 vezes x é log de x mais três zeros [2]. "
            "O log de 1000 vezes x é 3 elevado à potência de log de x [2].")
    made = with_substance(text, "pq log de a vezes b é igual a log a mais log b", PASSAGES, "pt")
    assert made.dropped == 1 and made.quoted is None
    assert made.text.endswith("mais três zeros [2].")
    assert made.text.count("O log de 1000 vezes x") == 2


def test_a_citation_written_before_its_sentence_moves_to_its_end() -> None:
    text = ("[1] Com massas na razão 100 para 1 acontecem 31 colisões, e cada fator 100 "
            "acrescenta um dígito de pi [2].")
    made = with_substance(text, QUESTION, PASSAGES, "pt")
    assert made.text == ("Com massas na razão 100 para 1 acontecem 31 colisões, e cada fator 100 "
                         "acrescenta um dígito de pi [1, 2].")


def test_a_citation_used_as_the_subject_is_named_a_passage() -> None:
    text = ("A resposta à pergunta é [1, 2]. [1] explica que com massas na razão 100 para 1 "
            "acontecem 31 colisões, enquanto [2] explica o círculo da energia.")
    made = with_substance(text, QUESTION, PASSAGES, "pt")
    assert made.text == ("O trecho [1] explica que com massas na razão 100 para 1 acontecem 31 "
                         "colisões, enquanto [2] explica o círculo da energia.")


def test_a_connective_left_hanging_before_the_citation_goes() -> None:
    passages = ["A derivada de e elevado a x é ela mesma: a inclinação do gráfico em cada "
                "ponto é igual à altura do gráfico naquele ponto."]
    out = with_substance("A inclinação do gráfico de e^x em cada ponto é igual à sua altura, "
                         "pois [1].", "a derivada de e^x é ela mesma? pq", passages, "pt")
    assert out.text == "A inclinação do gráfico de e^x em cada ponto é igual à sua altura [1]."
    # a word that ends a real clause stays
    kept = with_substance("A derivada de e^x é o próprio e^x, nada além disso [1].",
                          "a derivada de e^x é ela mesma?", passages, "pt")
    assert kept.text.endswith("nada além disso [1].")
    # nor the number e ending a sentence
    base = with_substance("A exponencial que é a própria derivada tem a base e [1].",
                          "a derivada de e^x é ela mesma?", passages, "pt")
    assert base.text.startswith("A exponencial que é a própria derivada tem a base e [1].")


def test_a_greeting_or_a_sponsor_s_thanks_is_never_the_quote() -> None:
    thin = "A soma dá -1/12 [1]."
    greeting = with_substance(thin, "pq a soma 1+2+3+4+... da -1/12",
                              ["🎵Música🎵 Bem-vindo de volta ao Lockdown Math."], "pt")
    assert greeting.quoted is None and "Lockdown" not in greeting.text
    outro = with_substance(
        "O triângulo aparece [1].", "oq a torre de hanoi tem a ver com o triangulo de sierpinski",
        ["Muito obrigado a todos que apoiam esses vídeos no Patreon. Contar em binário resolve "
         "a torre de Hanói, e os passos desenham o triângulo de Sierpinski."], "pt")
    assert outro.quoted == 1
    assert "Patreon" not in outro.text and "Contar em binário resolve" in outro.text


def test_a_passage_heading_copied_from_the_prompt_goes() -> None:
    """The generator sometimes copies the prompt's "[1] Aula: TÍTULO (mm:ss–mm:ss)" into its
    answer; the student reads the heading as a claim, and the post-check marks it."""
    passages = ["Se o determinante é negativo, a orientação do espaço foi invertida.",
                "O número esperado de pontos circulados é zero."]
    raw = ("Aula: O determinante (03:42–04:10) [1] Um determinante negativo quer dizer que a "
           "orientação do espaço foi invertida [1]. Lecture: Cross products (1:02:03 - 1:02:30) "
           "A área do paralelogramo muda de sinal quando a orientação inverte [2].")
    out = with_substance(raw, "determinante negativo significa oq?", passages, "pt")
    assert out.text == ("Um determinante negativo quer dizer que a orientação do espaço foi "
                        "invertida [1]. A área do paralelogramo muda de sinal quando a "
                        "orientação inverte [2].")
    # a title with its own parentheses goes whole
    titled = ("Aula: Por que fatiar um cone resulta em uma elipse (bela prova) (08:18–08:49) [1] "
              "As duas esferas tocam o plano inclinado nos focos da elipse [1].")
    assert with_substance(titled, "pq cortar um cone da elipse", passages, "pt").text == (
        "As duas esferas tocam o plano inclinado nos focos da elipse [1].")
    # copied on a line of its own without the span (a summary's first line)
    listed = ("Aula: Autovetores e autovalores | Capítulo 14, Essência da álgebra linear [2]\n\n"
              "Cada autovalor diz quanto a transformação estica ou comprime o seu autovetor, "
              "que continua na mesma reta [2].")
    assert with_substance(listed, "resumo de autovetores", passages, "pt").text == (
        "Cada autovalor diz quanto a transformação estica ou comprime o seu autovetor, que "
        "continua na mesma reta [2].")
    # a sentence that names a lecture in its own words stays
    kept = "Na aula sobre determinantes (a segunda), ele mostra a área mudando de sinal [1]."
    assert with_substance(kept, "determinante negativo?", passages, "pt").text == kept


BAYES = ["Steve é muito tímido e retraído, uma alma mansa e organizada. É mais provável que "
         "Steve seja bibliotecário ou agricultor? Há 20 agricultores para cada bibliotecário."]


def test_a_last_sentence_cut_at_the_token_limit_goes() -> None:
    text = ("No exemplo do bibliotecário, a maioria julga pela descrição de Steve e esquece "
            "que há 20 agricultores para cada bibliotecário [1]. Portanto, a probabilidade "
            "de Steve ser bibliotec [1]")
    made = with_substance(text, "explica o teorema de bayes com o exemplo do bibliotecario",
                          BAYES, "pt")
    assert made.text.endswith("para cada bibliotecário [1].")
    assert "bibliotec [1]" not in made.text and made.dropped == 1
    # an answer that is one unfinished sentence keeps it: there is nothing else to say
    alone = with_substance("A maioria esquece que há 20 agricultores para cada bibliotecário "
                           "e julga Steve pela descrição [1]", "o que é o exemplo do "
                           "bibliotecario", BAYES, "pt")
    assert alone.text.startswith("A maioria esquece que há 20 agricultores")


def test_a_loop_across_sentences_stops_at_the_third_closing() -> None:
    text = ("Há 20 agricultores para cada bibliotecário, e a descrição de Steve não muda "
            "isso [1]. Se Steve é bibliotecário, a probabilidade de Steve ser bibliotecário "
            "é 1/2 [1]. Se Steve não é bibliotecário, a probabilidade de Steve ser "
            "bibliotecário é 1/2 [1]. Se Steve é uma alma mansa e organizada, a probabilidade "
            "de Steve ser bibliotecário é 1/2 [1].")
    made = with_substance(text, "explica o teorema de bayes com o exemplo do bibliotecario",
                          BAYES, "pt")
    assert made.dropped == 1
    assert made.text.count("a probabilidade de Steve ser bibliotecário é 1/2") == 2
    assert "alma mansa" not in made.text
    # the generator cited only the first ("[1] A primeira ... [2] A segunda ... [3] ...", the
    # markers written before their sentences, [3] out of range): its close still counts
    newton = ("A primeira etapa do método de Newton é iterar x menos f de x sobre a derivada "
              "[1, 2]. A segunda etapa é iterar x menos f de x sobre a derivada. A terceira "
              "etapa é iterar x menos f de x sobre a derivada.")
    made = with_substance(newton, "quais as 3 etapas do metodo de newton", BAYES, "pt")
    assert made.dropped == 1 and "terceira" not in made.text and "segunda" in made.text
