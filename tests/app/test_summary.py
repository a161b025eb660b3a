"""Requests to sum up a lecture: told from questions, read as their subject, decided by the
lecture's own words."""

from __future__ import annotations

import pytest

from answer.evidence import Decision
from answer.summary import (
    asks_summary,
    lecture_covers,
    spread,
    summary_decision,
    summary_lecture,
    summary_topic,
)


@pytest.mark.parametrize(("request_", "topic"), [
    ("resume o video sobre bitcoin", "bitcoin"),
    ("me faz um resumo da aula de autovetores pfv", "autovetores"),
    ("vc pode resumir a aula de gradiente descendente?", "gradiente descendente"),
    ("quais os pontos principais do vídeo sobre a série de taylor?", "a série de taylor"),
    ("do que se trata o vídeo do problema de basel?", "problema de basel"),
    ("summarize the lecture about backpropagation", "backpropagation"),
    ("tl;dr do video de bayes", "bayes"),
])
def test_a_summary_request_is_read_as_its_subject(request_: str, topic: str) -> None:
    assert asks_summary(request_)
    assert summary_topic(request_) == topic


@pytest.mark.parametrize("question", [
    "o que é um autovetor?",
    "resume como funciona o bitcoin",  # a question of its own: answered as one
    "pq a fórmula resume tudo em uma linha e o que ela diz sobre e^x?",
    "a fórmula de euler resume o quê?",
])
def test_a_question_is_not_a_summary_request(question: str) -> None:
    assert not asks_summary(question)


BITCOIN = ["O bitcoin é um livro-razão público de transações.",
           "Cada bloco do bitcoin aponta para o anterior pelo seu hash.",
           "A prova de trabalho decide qual cadeia de blocos vale.",
           "Quem minera um bloco de bitcoin ganha uma recompensa."]


def test_a_lecture_is_about_a_topic_its_windows_keep_saying() -> None:
    assert lecture_covers("bitcoin", BITCOIN)[0]
    # said once in passing is not what the lecture is about
    covered, why = lecture_covers("prova de trabalho", BITCOIN)
    assert not covered and "1 of its 4 windows" in why
    assert not lecture_covers("química orgânica", BITCOIN)[0]
    # a word in the lecture's title counts: the sample lecture says "neurais" once
    assert lecture_covers("prova de trabalho", BITCOIN, "Bitcoin e a prova de trabalho")[0]
    # an English name the Portuguese lecture translates ("transformers": "transformador")
    attention = ["Um transformador lê os tokens e aplica a atenção."] * 3
    assert lecture_covers("transformers", attention)[0]
    # ... also where the lecture writes it with accents the glossary leaves out
    assert lecture_covers("backpropagation", ["Um trecho."] * 4,
                          "O que a retropropagação está realmente fazendo?")[0]
    assert summary_lecture(["2024/gpt", "2017/backpropagation"],
                           ["Mas o que é um GPT?", "O que a retropropagação está fazendo?"],
                           "backpropagation") == "2017/backpropagation"


def test_the_decision_follows_the_lecture_not_the_gate() -> None:
    declined = Decision(False, [], None, "P(covered)=0.49 < 0.50")
    covered = summary_decision(declined, "bitcoin", "2017/bitcoin", BITCOIN)
    assert covered.covered and covered.order == [0] and "2017/bitcoin" in covered.reason
    passed = Decision(True, [0, 1], None, "P(covered)=0.55", 0.55)
    refused = summary_decision(passed, "química orgânica", "2017/bitcoin", BITCOIN)
    assert not refused.covered and refused.order == [] and refused.p_covered == 0.55


def test_the_lecture_summed_up_is_the_one_most_first_hits_are_from() -> None:
    assert summary_lecture(["a", "b", "b", "a", "a"]) == "b"  # first three only
    assert summary_lecture(["a", "b", "c"]) == "a"  # a tie: the first hit's


def test_a_lecture_titled_by_the_subject_is_the_one_summed_up() -> None:
    # "convolução": a lecture that uses convolutions held two of the first three hits
    lectures = ["2022/borwein", "2022/convolutions", "2022/borwein"]
    titles = ["Integrais de Borwein", "Mas o que é uma convolução?", "Integrais de Borwein"]
    assert summary_lecture(lectures, titles, "convolução") == "2022/convolutions"
    assert summary_lecture(lectures, titles, "integrais") == "2022/borwein"
    assert summary_lecture(lectures, titles, "transformada de fourier") == "2022/borwein"


def test_spread_takes_the_lecture_from_its_opening_to_its_close() -> None:
    assert spread(list(range(11)), 5) == [0, 2, 5, 8, 10]
    assert spread([1, 2, 3], 5) == [1, 2, 3]
    assert spread([1, 2, 3], 1) == [1]


def test_a_lecture_named_by_its_number_is_the_one_summed_up(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    import json
    import shutil

    from answer.decide import Decider
    from corpus.index import IndexStore
    from corpus.ingest import ingest
    from corpus.retrieve import Retriever
    from tests.conftest import SAMPLES

    src = tmp_path / "curso"
    shutil.copytree(SAMPLES, src)
    for lecture, title in (("derivadas", "Curso de cálculo (2025), aula 01 (ao vivo)"),
                           ("redes-neurais", "Curso de cálculo (2025), aula 02 (ao vivo)")):
        (src / lecture / "title.json").write_text(json.dumps(title), encoding="utf-8")
    store = IndexStore(tmp_path / "index")
    ingest([src], store, embedder)
    retriever = Retriever(store.load(), embedder)
    decider = Decider(llm=None, lecture_windows=retriever.lecture_windows,
                      numbered_lecture=retriever.numbered_lecture)
    declined = Decision(False, [], None, "P(covered)=0.05 < 0.50")
    for asked, lecture in (("resume a aula 2", "redes-neurais"),
                           ("me faz um resumo da aula 01", "derivadas")):
        hits = retriever.search(asked, 10)
        decision, windows = decider.summary_decision(summary_topic(asked), hits, declined, asked)
        assert decision.covered and "named by its number" in decision.reason, decision.reason
        assert windows and {w.lecture_id for w in windows} == {lecture}
    # a number no lecture has: read as before, by the topic
    decision, _ = decider.summary_decision("7", retriever.search("resume a aula 7", 10),
                                           declined, "resume a aula 7")
    assert not decision.covered
