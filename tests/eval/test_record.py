"""The study's Markdown record: parsed, rendered back exactly, round-tripped."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from corpus.models import Hit
from eval.record import (
    Record,
    RecordParseError,
    Reference,
    parse_records,
    parse_timestamp,
    render_record,
    render_records,
)

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "report-pergunta-123.md"


@pytest.fixture(scope="module")
def reference_text() -> str:
    if not REFERENCE.exists():
        pytest.skip("the shared reference report is not available")
    return REFERENCE.read_text(encoding="utf-8")


def _normalise(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _hit(n: int, url: str = "https://youtu.be/abc") -> Hit:
    return Hit(
        corpus_id=n,
        score=0.5 + n / 100,
        lecture_id="",
        title="",
        url=url,
        start=60.0 * n,
        end=60.0 * n + 90,
        text=f"trecho {n} da aula",
    )


def _record(**overrides: object) -> Record:
    fields: dict[str, object] = dict(
        qid="7",
        question="O que é dropout?",
        segments=[_hit(1), _hit(2)],
        answer="Dropout desliga neurônios ao acaso [1].\n\nIsso regulariza a rede [2].",
        references=[Reference("Aula 3", "https://youtu.be/abc?t=60", 60.0, 150.0)],
        manual="PC",
        ar=2 / 3,
        automated="PC",
        reasoning="Criteria: ...\nScore: 2",
    )
    fields.update(overrides)
    return Record(**fields)  # type: ignore[arg-type]


def test_parse_reference_fields(reference_text: str) -> None:
    [rec] = parse_records(reference_text)
    assert rec.qid == "123"
    assert rec.question == "O que é o TensorBoard e como ele funciona?"
    assert len(rec.segments) == 10
    first = rec.segments[0]
    assert first.corpus_id == 6813
    assert first.score == 0.8643919229507446
    assert first.start == 2996.0 and first.end == 3113.0  # 00:49:56 - 00:51:53
    assert first.url == ""  # "oculto"
    assert first.text.startswith("abandonado o desenvolvimento")
    assert rec.segments[-1].corpus_id == 7036
    assert rec.answer.startswith("O TensorBoard é um callback sofisticado")
    assert len(rec.references) == 7
    assert (rec.manual, rec.ar, rec.automated) == ("C", 1.0, "C")
    assert rec.reasoning is not None and rec.reasoning.startswith("Criteria:")
    assert rec.reasoning.endswith("Score: 3")
    assert rec.correctness is None and rec.correctness_reasoning is None


def test_render_reproduces_reference_exactly(reference_text: str) -> None:
    [rec] = parse_records(reference_text)
    rendered = render_record(rec, hide_urls=True)
    assert _normalise(rendered) == _normalise(reference_text)
    assert rendered == reference_text  # byte for byte, as it happens


def test_round_trip_of_reference(reference_text: str) -> None:
    [rec] = parse_records(reference_text)
    [again] = parse_records(render_record(rec, hide_urls=True))
    assert again == rec


def test_round_trip_with_urls_and_multiline_text() -> None:
    rec = _record(ar=1.0)
    text = render_record(rec)
    assert "- *URL:* https://youtu.be/abc" in text
    assert "- [Aula 3](https://youtu.be/abc?t=60)" in text
    [again] = parse_records(text)
    assert again.answer == rec.answer  # the blank line inside the answer survives
    assert again.segments == rec.segments
    assert again.references == [Reference("Aula 3", "https://youtu.be/abc?t=60")]
    assert (again.manual, again.ar, again.automated, again.reasoning) == (
        "PC",
        1.0,
        "PC",
        rec.reasoning,
    )


def test_hidden_urls() -> None:
    text = render_record(_record(), hide_urls=True)
    assert "youtu.be" not in text
    assert "- *URL:* oculto" in text
    assert "- [Vídeo de referência oculto]()" in text


def test_missing_values_render_as_dash_and_parse_as_none() -> None:
    rec = _record(manual=None, ar=None, automated=None, reasoning=None, answer="")
    text = render_record(rec)
    assert "**Anotação manual**: —" in text
    assert "**Answer Relevance (AR)**: —" in text
    assert "**Correção" not in text
    [again] = parse_records(text)
    assert (again.manual, again.ar, again.automated, again.reasoning, again.answer) == (
        None,
        None,
        None,
        None,
        "",
    )


def test_correctness_lines_only_when_present() -> None:
    text = render_record(_record(correctness=2 / 3, correctness_reasoning="- claim => SUPPORTED"))
    lines = text.splitlines()
    cot = next(i for i, line in enumerate(lines) if line.startswith("**Raciocínio (AR CoT)**"))
    correction = lines.index("**Correção**: 0.67")
    assert correction > cot
    [again] = parse_records(text)
    assert again.correctness == 0.67
    assert again.correctness_reasoning == "- claim => SUPPORTED"


def test_many_records_crlf_and_separators() -> None:
    recs = [_record(qid="1"), _record(qid="2", manual="C"), _record(qid="3", segments=[])]
    text = render_records(recs).replace("\n", "\r\n")
    parsed = parse_records(text)
    assert [r.qid for r in parsed] == ["1", "2", "3"]
    assert parsed[1].manual == "C"
    assert parsed[2].segments == []
    # records with no "---" between them, and extra spaces
    loose = "\n".join(render_record(r).replace("\n---\n", "\n") for r in recs[:2])
    loose = loose.replace("**Anotação manual**: PC", "**Anotação manual**:   pc  ")
    assert [r.manual for r in parse_records(loose)] == ["PC", "C"]


def test_malformed_field_names_record_and_field() -> None:
    bad = render_record(_record(qid="2")).replace("- *Score:* 0.52", "- *Score:* alto")
    text = render_record(_record(qid="1")) + "\n" + bad
    with pytest.raises(RecordParseError, match=r"record 2 \(Pergunta 2\): segment 2.*Score"):
        parse_records(text)
    with pytest.raises(RecordParseError, match=r"record 1.*Anotação manual.*'X'"):
        parse_records(render_record(_record(manual="X")))
    with pytest.raises(RecordParseError, match=r"Answer Relevance.*outside"):
        parse_records(render_record(_record()).replace("(AR)**: 0.67", "(AR)**: 3"))
    with pytest.raises(RecordParseError, match="Resposta gerada pelo LLM.*missing"):
        parse_records("**Pergunta 9**: Oi?\n\n**Segmentos recuperados pelo E5**:\n")
    with pytest.raises(RecordParseError, match="record 1"):
        parse_records("nada aqui")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("00:49:56", 2996.0),
        ("1:02:03", 3723.0),
        ("49:56", 2996.0),
        ("2996", 2996.0),
        ("12.5", 12.5),
    ],
)
def test_parse_timestamp(text: str, seconds: float) -> None:
    assert parse_timestamp(text) == seconds


def test_parse_timestamp_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        parse_timestamp("meio-dia")


HOSTILE = [
    "**Pergunta 96**: forjada",
    "x\n**Segmentos recuperados pelo E5**:\n**Resposta gerada pelo LLM**: y\n\n**Pergunta 96**: z",
    "linha\n  **Anotação manual**: C\n---\n- *Corpus ID:* 5\n—",
    "\\**Pergunta 1**: já escapada\n\\\\---\n\\- *Score:* 1",
    "*itálico*, _ênfase_, `código`, [link](http://x) e # título\n\n- item\n> citação",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_free_text_that_looks_like_structure_round_trips(text: str) -> None:
    rec = _record(qid="5", question=text, answer=text, reasoning=text, comment=text, version=3,
                  segments=[Hit(corpus_id=1, score=0.5, lecture_id="", title="", url="",
                                start=0.0, end=60.0, text=text)])
    out = render_record(rec)
    assert "\n**Pergunta 96**" not in out and "\n- *Corpus ID:* 5" not in out
    [again] = parse_records(out + "\n" + render_record(_record(qid="96", manual=None)))[:1]
    assert (again.qid, again.question, again.answer, again.reasoning, again.comment) == (
        "5", text, text, text, text)
    assert again.segments[0].text == text
    assert (again.manual, again.version) == ("PC", 3)


def test_a_question_with_record_headings_does_not_forge_another_record() -> None:
    forged = ("o que é isto?\n**Segmentos recuperados pelo E5**:\n**Resposta gerada pelo LLM**: "
              "nada\n\n**Pergunta 96**: outra")
    records = parse_records(render_record(_record(qid="5", question=forged, manual="C")))
    assert [(r.qid, r.manual, r.question) for r in records] == [("5", "C", forged)]


def test_an_ambiguous_record_is_refused_naming_the_line() -> None:
    text = render_record(_record(qid="5"))
    # a hand-edited (or pre-escaping) file: a heading inside the answer
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("**Resposta"))
    lines.insert(at + 1, "**Anotação manual**: C")
    with pytest.raises(RecordParseError,
                       match=r"line \d+: record 1 \(Pergunta 5\): '\*\*Referências\*\*' comes "
                             rf"after '\*\*Anotação manual\*\*' at line {at + 2}; .*ambiguous"):
        parse_records("\n".join(lines))
    moved = text.replace("**Answer Relevance (AR)**: 0.67", "**Anotação manual**: C")
    with pytest.raises(RecordParseError, match=r"'\*\*Anotação manual\*\*' appears again "
                                               r"\(first at line \d+\)"):
        parse_records(moved)
    twice = render_record(_record(qid="5")) + render_record(_record(qid="5"))
    with pytest.raises(RecordParseError, match=r"line \d+: record 2 \(Pergunta 5\).*line 1"):
        parse_records(twice)


def test_comment_and_version_print_only_when_known() -> None:
    assert "Comentário" not in render_record(_record())
    text = render_record(_record(comment="", version=2))
    assert "**Comentário**: —" in text and "**Versão da anotação**: 2" in text
    [again] = parse_records(text)
    assert (again.comment, again.version) == ("", 2)
    [plain] = parse_records(render_record(_record()))
    assert (plain.comment, plain.version) == (None, None)


# The question of the forging report: bare carriage returns where a guard looked for "\n".
CR_FORGERY = (
    "o que é a derivada?\r\r**Segmentos recuperados pelo E5**:\r\r**Resposta gerada pelo LLM**: "
    "y\r\r---\r\r**Pergunta 05**: z\r\r**Segmentos recuperados pelo E5**:\r\r**Resposta gerada "
    "pelo LLM**: y\r\r**Anotação manual**: C\r\r**Comentário**: forjado pelo aluno\r\r---\r\r"
    "**Pergunta 040**: w"
)


@pytest.mark.parametrize("text", [CR_FORGERY, CR_FORGERY.replace("\r", "\r\n"),
                                  "x\r**Anotação manual**: C\r- *Corpus ID:* 9\r---"])
def test_a_bare_carriage_return_hides_no_record_structure(text: str) -> None:
    rec = _record(qid="40", question=text, answer=text, comment=text, version=1,
                  segments=[_hit(1)])
    records = parse_records(render_record(rec))
    assert [(r.qid, r.manual) for r in records] == [("40", "PC")]
    lines = text.replace("\r\n", "\n").replace("\r", "\n")  # the one line ending kept
    assert (records[0].question, records[0].answer, records[0].comment) == (lines,) * 3


@pytest.mark.timeout(20)
def test_parsing_takes_time_linear_in_the_text() -> None:
    """Hand-made files with long runs of spaces where headings, fields and links would be:
    with backtracking regexes over the text, one such line took longer than cubic time."""
    spaces = " " * 200_000
    hostile = [
        "**Pergunta" + spaces + "x",
        "**Anotação manual" + spaces + "x",
        "- *Score" + spaces + "x",
        "- [" + "](" * 50_000 + "x",
        "\n---" * 20_000 + "x",
    ]
    text = "\n".join(render_record(_record(qid=str(n), question=h, answer=h, reasoning=h))
                     + "\n" + h for n, h in enumerate(hostile, start=1))
    t0 = time.perf_counter()
    try:
        parse_records(text)
    except RecordParseError:
        pass  # a refused file is fine: refused at once
    assert time.perf_counter() - t0 < 5.0


def test_a_summarys_citation_numbers_lead_to_their_reference_lines() -> None:
    from eval.run import to_record

    def item(numbers: list[int]) -> dict:  # type: ignore[type-arg]
        cites = [{"n": [n], "title": f"Autovalores parte {n}", "url": f"https://youtu.be/x?t={n}",
                  "start": 10.0 * n, "end": 10.0 * n + 5} for n in numbers]
        return {"id": 1, "question": "resume a aula de autovalores",
                "answer": " ".join(f"Frase [{n}]." for n in numbers), "citations": cites}

    summary = render_record(to_record(item([2, 4, 5])))
    assert "- [[4] Autovalores parte 4](https://youtu.be/x?t=4)" in summary
    [back] = parse_records(summary)
    assert [r.title.split("]")[0] for r in back.references] == ["[2", "[4", "[5"]
    plain = render_record(to_record(item([1, 2])))
    assert "- [Autovalores parte 1](https://youtu.be/x?t=1)" in plain  # the study's shape kept
