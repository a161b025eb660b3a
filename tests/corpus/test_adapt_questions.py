"""What ``aula adapt`` keeps of the LLM's replies as training questions."""

from __future__ import annotations

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
