"""What ``aula adapt`` keeps of the LLM's replies as training questions."""

from __future__ import annotations

from dataclasses import replace

from corpus.adapt.questions import Passage, parse_question, written

PASSAGE = Passage("k1", "aula-02", 60.0, 90.0,
                  "Então o uvicorn recebe a requisição e entrega pro FastAPI, que chama a "
                  "função do endpoint com os parâmetros validados pelo pydantic.")


def test_the_question_is_taken_out_of_the_reply() -> None:
    assert parse_question('Pergunta: "Quem valida os parâmetros do endpoint?"') == (
        "Quem valida os parâmetros do endpoint?")
    assert parse_question("1. Por que o uvicorn entrega pro FastAPI? Porque sim.") == (
        "Por que o uvicorn entrega pro FastAPI?")
    assert parse_question("O trecho fala do uvicorn.") is None
    assert parse_question("Oi?") is None


def test_a_question_the_passage_does_not_ground_is_not_kept() -> None:
    kept = written(PASSAGE, "Quem valida os parâmetros do endpoint no FastAPI?", "m")
    assert kept.question == "Quem valida os parâmetros do endpoint no FastAPI?"
    assert (kept.lecture_id, kept.start, kept.end) == ("aula-02", 60.0, 90.0)
    assert written(PASSAGE, "Como posso ajudar você hoje?", "m").question is None


def test_a_passage_s_most_specific_sentence_stands_for_its_question() -> None:
    from corpus.adapt.cloze import FROM_SENTENCES, cloze_question, cloze_questions

    spoken = Passage("k2", "aula-03", 90.0, 120.0,
                     "Beleza, pessoal. Então vamos lá. O pydantic valida o corpo da requisição "
                     "antes do endpoint rodar e devolve o erro 422 quando falta um campo. "
                     "Massa? Bora pro próximo.")
    q = cloze_question(spoken)
    assert q is not None and q.model == FROM_SENTENCES
    assert q.question == ("O pydantic valida o corpo da requisição antes do endpoint rodar e "
                          "devolve o erro 422 quando falta um campo.")
    assert (q.key, q.lecture_id, q.start, q.end) == ("k2", "aula-03", 90.0, 120.0)
    chatty = Passage("k3", "aula-03", 120.0, 150.0, "Oi, gente. Tudo bem com vocês? Bora lá.")
    assert cloze_question(chatty) is None
    assert [x.key for x in cloze_questions([chatty, spoken, PASSAGE], 1)] == ["k2"]


def test_the_sentence_is_taken_out_of_the_passage_the_model_learns_to_find() -> None:
    import numpy as np
    import pandas as pd

    from corpus.adapt.cloze import cloze_question
    from corpus.adapt.train import Miner
    from corpus.index import IndexData

    said = ("O pydantic valida o corpo da requisição antes do endpoint rodar e devolve o erro "
            "422 quando falta um campo.")
    texts = [f"Então vamos lá. {said} Massa? O próximo passo é o banco.",
             "Outra aula sobre o banco de dados e as migrações do alembic."]
    segments = pd.DataFrame({"corpus_id": [0, 1], "lecture_id": ["aula-03", "aula-04"],
                             "start": [60.0, 0.0], "end": [180.0, 120.0], "text": texts})
    lectures = pd.DataFrame({"lecture_id": ["aula-03", "aula-04"], "title": ["3", "4"],
                             "url": ["", ""]})
    vectors = np.eye(2, 3, dtype=np.float32)
    data = IndexData({"model_id": "test", "dim": 3}, segments, lectures, vectors)
    q = cloze_question(Passage("k", "aula-03", 90.0, 120.0, texts[0]))
    assert q is not None and q.question == said
    miner = Miner(data, lambda t: np.tile(np.array([1.0, 0, 0], np.float32), (len(t), 1)))
    (ex,) = miner.examples([q], same_lecture=0, other_lectures=1, gap=0)
    assert said not in ex.positive and "O próximo passo é o banco." in ex.positive
    # an LLM's question keeps its passage whole
    (kept,) = miner.examples([replace(q, question="quem valida o corpo da requisição?",
                                      model="llm")], same_lecture=0, other_lectures=1, gap=0)
    assert said in kept.positive
