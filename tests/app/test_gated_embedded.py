"""(slow) The gated answer path on the real embedded model and the shipped gate (answer/gate.json):
two questions the lectures answer, two they don't, over four real 3b1b-pt lectures; and the quote
path's likelihood confidence, read by the embedded model in this process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

CORPUS = ROOT.parent / "shared" / "corpora" / "3b1b-pt"
VIDEOS = ["2016/eigenvalues", "2017/neural-networks", "2017/gradient-descent",
          "2016/cross-products"]
ANSWERABLE = [
    ("pq uma rotação de 90 graus no plano nao tem autovetor nenhum? e oq acontece qdo tenta "
     "calcular os autovalores dela", "eigenvalues"),
    ("pra q serve trocar pra uma base de autovetores? vi q fica facil elevar a matriz a 100 mas "
     "n entendi pq", "eigenvalues"),
]
UNANSWERABLE = [
    "meu container no docker nao sobe, fala q a porta ja ta em uso, oq eu faço",
    "como funciona o handshake de 3 vias do tcp?",
]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CORPUS.exists(), reason="../shared/corpora/3b1b-pt not found"),
]


@pytest.fixture(scope="module")
def index_root(tmp_path_factory, embedder) -> Path:  # type: ignore[no-untyped-def]
    from corpus.index import IndexStore
    from corpus.ingest import ingest

    root: Path = tmp_path_factory.mktemp("idx3b1b") / "index"
    # each video folder ingested on its own: lecture ids are the folder names ("eigenvalues")
    ingest([CORPUS / v for v in VIDEOS], IndexStore(root), embedder,
           include=["**/portuguese/sentence_translations.json"])
    return root


@pytest.fixture(scope="module")
def services(index_root: Path) -> Iterator[object]:
    from app.config import Settings
    from app.services import build_services

    svc = build_services(Settings(index_dir=index_root, llm_base_url=None,
                                  answer_strategy="gated"))
    with svc.stack:
        yield svc


@pytest.mark.parametrize(("question", "lecture"), ANSWERABLE)
def test_answerable_questions_are_answered_from_the_right_video(services, question, lecture
                                                                ) -> None:  # type: ignore[no-untyped-def]
    hits = services.retriever.search(question, 10)
    reply = services.pipeline.run(question, hits)
    assert reply.error is None
    assert reply.covered is True, reply.reason
    assert any(c.lecture_id == lecture for c in reply.answer.citations)
    assert reply.confidence is not None and reply.moments[0].url


@pytest.mark.parametrize("question", UNANSWERABLE)
def test_questions_the_lectures_do_not_cover_are_declined(services, question) -> None:  # type: ignore[no-untyped-def]
    hits = services.retriever.search(question, 10)
    reply = services.pipeline.run(question, hits)
    assert reply.covered is False, reply.reason
    assert "não parecem cobrir" in reply.answer.text
    assert reply.moments  # the closest moments are listed anyway


def test_each_answer_reads_its_prompt_start_from_the_cache(services) -> None:  # type: ignore[no-untyped-def]
    """Between two answers the server reads the first answer's sentence checks (another
    system prompt); the next answer still finds its system prompt and header cached, in
    llama.cpp's own count of the prompt tokens it took from the cache (``timings.cache_n``)."""
    from answer.prompts import gated_messages
    from tests.llm_counts import prompt_counts

    with prompt_counts(services.llm) as counts:
        for question, _ in ANSWERABLE:
            reply = services.pipeline.run(question, services.retriever.search(question, 10))
            assert reply.covered is True, reply.reason
    cached = [c for _, c in counts]
    start = len(gated_messages("x", [], "pt")[0]["content"]) // 4  # the system prompt, roughly
    assert len(cached) == 2
    assert cached[1] >= start, cached  # one slot: the second read it all again


@pytest.fixture(scope="module")
def quoting(index_root: Path, tmp_path_factory) -> Iterator[object]:  # type: ignore[no-untyped-def]
    """The quote strategy reading the question's likelihood, behind a gate that passes every
    question: what is quoted or declined is the likelihood's decision alone."""
    from answer.evidence import Gate
    from app.config import Settings
    from app.services import build_services

    gate_file = tmp_path_factory.mktemp("gate") / "gate.json"
    gate_file.write_text(Gate(p_covered=0.0, p_pass=0.0).to_json())
    svc = build_services(Settings(index_dir=index_root, llm_base_url=None,
                                  answer_strategy="quote", quote_confidence="likelihood",
                                  gate_file=gate_file))
    with svc.stack:
        yield svc


def test_a_quote_the_question_is_likely_after_is_shown_with_its_second(quoting) -> None:  # type: ignore[no-untyped-def]
    question, lecture = ANSWERABLE[0]
    reply = quoting.pipeline.run(question, quoting.retriever.search(question, 10))
    assert reply.covered is True, reply.reason
    assert "gain=" in reply.reason
    cited = reply.answer.citations[0]
    assert cited.lecture_id == lecture
    assert f"t={int(cited.start)}" in cited.url  # the link opens the video at the quote


def test_a_passage_that_does_not_make_the_question_likely_is_not_quoted(quoting) -> None:  # type: ignore[no-untyped-def]
    question = UNANSWERABLE[0]  # passed by the gate here; no lecture makes it more likely
    reply = quoting.pipeline.run(question, quoting.retriever.search(question, 10))
    assert reply.covered is False, reply.reason
    assert "no sentence answers: gain=" in reply.reason
    assert "Não achei a frase exata" in reply.answer.text
    assert reply.moments  # the closest moments instead of a quote
