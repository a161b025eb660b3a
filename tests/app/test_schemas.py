"""What the HTTP API's bodies let through."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.api.review import AnnotationIn, ImportIn
from app.schemas import AskIn, CitationOut, HitOut, LectureOut, MomentOut


@pytest.mark.parametrize(
    ("stored", "sent"),
    [
        ("https://www.youtube.com/watch?v=abc", "https://www.youtube.com/watch?v=abc"),
        ("youtube.com/watch?v=abc", "https://youtube.com/watch?v=abc"),
        ("javascript:alert(document.cookie)", ""),
        ("data:text/html,<script>alert(1)</script>", ""),
        ("", ""),
    ],
)
def test_only_web_links_leave_the_api(stored: str, sent: str) -> None:
    # an index built before ingest normalised links may still hold these
    where = {"lecture_id": "aula", "title": "Aula", "start": 0.0, "end": 9.0}
    bodies = [
        HitOut(corpus_id=0, score=0.9, text="t", url=stored, **where),
        CitationOut(n=[1], url=stored, **where),
        MomentOut(answer_start=1.0, snippet="s", score=0.9, url=stored, **where),
        LectureOut(lecture_id="aula", title="Aula", course="", segments=1, url=stored),
    ]
    assert [b.url for b in bodies] == [sent] * 4


@pytest.mark.parametrize("question", ["o que é a derivada \ud800?", "\udfff", "a\ud83d"])
def test_a_lone_surrogate_is_refused_saying_why(question: str) -> None:
    with pytest.raises(ValidationError, match="lone surrogate"):
        AskIn(question=question)
    with pytest.raises(ValidationError, match="surrogate|unicode"):
        AnnotationIn(label="PC", comment=question, version=1)
    with pytest.raises(ValidationError, match="surrogate|unicode"):
        ImportIn(text=question)


def test_a_question_has_one_line_ending() -> None:
    """A bare CR is a line break to every reader after this one (the Markdown records, the
    spreadsheets): the question is stored with LF only."""
    assert AskIn(question=" o que é?\r\r**x**\r\ny\r").question == "o que é?\n\n**x**\ny"
    assert AskIn(question="o que é 😀?").question == "o que é 😀?"
