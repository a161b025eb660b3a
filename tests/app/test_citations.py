"""Citation markers, auto-attached citations, merged spans and video links."""

from __future__ import annotations

import re

import numpy as np
import pytest

from answer.citations import (
    attach_citations,
    build_citations,
    cite,
    cite_also,
    cited_numbers,
    clean_markers,
    fmt_ts,
    parse_marker,
    repoint,
    sentence_spans,
    video_link,
)
from corpus.models import Hit

TOPICS = ["relu", "sigmoid", "gradiente", "tensorboard"]


def fake_embed(texts: list[str], kind: str) -> np.ndarray:
    """A bag of topic words: deterministic, L2-normalised, like E5's rows."""
    rows = []
    for text in texts:
        low = text.lower()
        vec = np.array([low.count(t) for t in TOPICS] + [0.05], dtype=np.float32)
        rows.append(vec / np.linalg.norm(vec))
    return np.vstack(rows)


def hit(cid: int, lecture: str, start: float, end: float, text: str = "", url: str = "") -> Hit:
    return Hit(cid, 0.9, lecture, f"Aula {lecture}", url, start, end, text)


HITS = [
    hit(1, "redes", 0, 120, "A ReLU zera os negativos. ReLU é rápida.", "https://youtu.be/abc"),
    hit(2, "redes", 90, 210, "A sigmoid satura nas pontas; sigmoid saturada.",
        "https://youtu.be/abc"),
    hit(3, "otim", 600, 720, "O gradiente aponta a subida; descida do gradiente.",
        "https://example.org/v.mp4"),
]


@pytest.mark.parametrize(
    ("body", "numbers"),
    [("1", [1]), ("1, 3", [1, 3]), ("2-4", [2, 3, 4]), ("1,3-4", [1, 3, 4]), ("2 – 3", [2, 3])],
)
def test_parse_marker(body: str, numbers: list[int]) -> None:
    assert parse_marker(body) == numbers


def test_markers_to_missing_segments_are_dropped() -> None:
    text = "A ReLU zera negativos [1]. A sigmoid satura [9]. Ambas [2, 7]. Faixa [2-5]."
    assert clean_markers(text, 3) == (
        "A ReLU zera negativos [1]. A sigmoid satura. Ambas [2]. Faixa [2, 3]."
    )


def test_cited_numbers_in_order_of_appearance() -> None:
    assert cited_numbers("x [3]. y [1, 3]. z [2-3].") == [3, 1, 2]


def test_sentence_spans_skip_bare_markers_and_keep_decimals() -> None:
    text = "A taxa é 0.5 no início. Depois cai!\n[1]\nFim"
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "A taxa é 0.5 no início.", "Depois cai!", "Fim",
    ]


def test_under_cited_answer_gets_markers_at_sentence_ends() -> None:
    text = "A ReLU zera os negativos. A sigmoid satura nas pontas. Isso é tudo."
    out = attach_citations(text, [h.text for h in HITS], fake_embed, threshold=0.8)
    assert out == "A ReLU zera os negativos [1]. A sigmoid satura nas pontas [2]. Isso é tudo."


def test_well_cited_answer_is_left_alone() -> None:
    text = "A ReLU zera os negativos [1]. A sigmoid satura nas pontas."
    assert attach_citations(text, [h.text for h in HITS], fake_embed) == text


def test_below_threshold_nothing_is_attached() -> None:
    text = "Nada a ver com as aulas. Outra frase qualquer."
    assert attach_citations(text, [h.text for h in HITS], fake_embed, threshold=0.8) == text


def test_overlapping_windows_of_one_lecture_merge() -> None:
    hits = [*HITS, hit(4, "redes", 210, 330, "", "https://youtu.be/abc"),
            hit(5, "redes", 900, 1000, "", "https://youtu.be/abc")]
    cits = build_citations([4, 1, 2, 3, 5], hits)
    spans = [(c.n, c.lecture_id, c.start, c.end) for c in cits]
    assert spans == [
        ([1, 2, 4], "redes", 0, 330),  # 0-120 overlaps 90-210, which touches 210-330
        ([3], "otim", 600, 720),
        ([5], "redes", 900, 1000),
    ]
    assert cits[0].corpus_ids == [1, 2, 4]
    assert set(cits[0].to_dict()) == {"n", "lecture_id", "title", "start", "end", "url"}


@pytest.mark.parametrize(
    ("url", "seconds", "link"),
    [
        ("https://www.youtube.com/watch?v=abc", 75.9, "https://www.youtube.com/watch?v=abc&t=75"),
        ("https://www.youtube.com/watch?v=abc&t=10s&list=x", 3000,
         "https://www.youtube.com/watch?v=abc&list=x&t=3000"),
        ("https://youtu.be/abc", 61, "https://youtu.be/abc?t=61"),
        ("https://youtu.be/abc?t=5", 61, "https://youtu.be/abc?t=61"),
        ("https://example.org/aula.mp4", 42.2, "https://example.org/aula.mp4#t=42"),
        ("https://example.org/aula.mp4#t=5", 42, "https://example.org/aula.mp4#t=42"),
        ("", 42, ""),
        # an index built before links were normalised at ingest: never a broken or unsafe href
        ("youtube.com/watch?v=abc", 75, "https://youtube.com/watch?v=abc&t=75"),
        ("javascript:alert(document.cookie)//youtube.com", 5, ""),
        ("data:text/html,<script>alert(1)</script>", 5, ""),
    ],
)
def test_video_links_open_at_the_second(url: str, seconds: float, link: str) -> None:
    assert video_link(url, seconds) == link


def test_fmt_ts() -> None:
    assert fmt_ts(0) == "00:00:00"
    assert fmt_ts(2996.4) == "00:49:56"
    assert fmt_ts(3897) == "01:04:57"


def test_cite_end_to_end() -> None:
    raw = "A ReLU zera os negativos. A sigmoid satura [2] [8]. O gradiente aponta a subida."
    text, cits = cite(raw, HITS, fake_embed, threshold=0.8)
    assert "[8]" not in text
    assert re.findall(r"\[\d\]", text) == ["[1]", "[2]", "[3]"]
    assert [(c.n, c.url) for c in cits] == [
        ([1, 2], "https://youtu.be/abc?t=0"),
        ([3], "https://example.org/v.mp4#t=600"),
    ]


def test_cite_without_embed_only_cleans() -> None:
    text, cits = cite("Sem marcadores. Nenhum.", HITS)
    assert (text, cits) == ("Sem marcadores. Nenhum.", [])


def test_markers_are_tidied() -> None:
    assert clean_markers("Dois x. [1]\nOutra [2] [3], fim.", 3) == "Dois x [1].\nOutra [2, 3], fim."
    assert clean_markers("A [1][2]. B. [3] C.", 3) == "A [1, 2]. B [3]. C."
    # a marker the next sentence starts with, as its subject, stays there
    assert clean_markers("Veja os trechos. [2] explica que i^i é real.", 3) == \
        "Veja os trechos. [2] explica que i^i é real."
    # the small model's closing line of markers alone cites the sentence before it
    assert clean_markers("A autoatenção olha a própria frase [1].\n\n[1, 2]", 3) == \
        "A autoatenção olha a própria frase [1, 2]."
    assert clean_markers("Derivada [2].  Limite [3].  [2, 3]", 3) == "Derivada [2].  Limite [2, 3]."


def test_a_sentence_can_cite_one_more_passage_in_its_own_marker() -> None:
    assert cite_also("A ReLU é rápida [1].", [2]) == "A ReLU é rápida [1, 2]."
    assert cite_also("A ReLU é rápida [1, 2].", [2]) == "A ReLU é rápida [1, 2]."
    assert cite_also("A ReLU é rápida.", [3]) == "A ReLU é rápida [3]."


def test_a_sentence_can_cite_another_passage_instead() -> None:
    assert repoint("A ReLU é rápida [2].", [1]) == "A ReLU é rápida [1]."
    assert repoint("A ReLU [2], que é rápida, vence [2, 3].", [1]) == \
        "A ReLU, que é rápida, vence [1]."
    assert repoint("A ReLU é rápida", [3]) == "A ReLU é rápida [3]"
