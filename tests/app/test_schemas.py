"""What the HTTP API's bodies let through."""

from __future__ import annotations

import pytest

from app.schemas import CitationOut, HitOut, LectureOut, MomentOut


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
