"""The answerer over real HTTP against the fake OpenAI-compatible server."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from answer.direct import answer, answer_stream, is_not_covered
from answer.prompts import NOT_COVERED, build_messages, fit_segments
from answer.replies import Answer
from app.llm import LLMClient, LLMError
from corpus.language import detect_language
from corpus.models import Hit
from tests.app.fake_llm import FakeLLMServer, Messages
from tests.app.test_citations import fake_embed

HITS = [
    Hit(10, 0.86, "redes", "Redes neurais 2", "https://youtu.be/abc", 95, 215,
        "A ReLU zera os valores negativos e é a ativação mais usada hoje."),
    Hit(11, 0.85, "redes", "Redes neurais 2", "https://youtu.be/abc", 3896, 4030,
        "A sigmoid satura nas pontas e fica lenta."),
]


def reply_for(messages: Messages) -> str:
    """Answers in the prompt's language; refuses when the question is about cooking."""
    user = messages[-1]["content"]
    if "bolo" in user or "cake" in user:
        return NOT_COVERED["pt"] if "Pergunta:" in user else NOT_COVERED["en"]
    if "Pergunta:" in user:
        return "A ReLU zera os negativos [1]. A sigmoid satura [2] [7]."
    return "ReLU zeroes negative values [1]."


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(responder=reply_for) as srv:
        yield srv


@pytest.fixture
def llm(server: FakeLLMServer) -> LLMClient:
    server.requests.clear()
    return LLMClient(server.base_url, model="fake", timeout=5.0, retries=1, backoff=0.01)


@pytest.mark.parametrize(
    ("question", "lang"),
    [
        ("Qual função de ativação é mais usada hoje e por quê?", "pt"),
        ("O que é o TensorBoard e como ele funciona?", "pt"),
        ("Explique backpropagation", "pt"),
        ("What is the most used activation function and why?", "en"),
        ("How does TensorBoard work?", "en"),
    ],
)
def test_detect_language(question: str, lang: str) -> None:
    assert detect_language(question) == lang


def test_prompt_numbers_the_segments_with_title_and_time() -> None:
    messages, used = build_messages("Qual ativação é mais usada?", HITS)
    user = messages[-1]["content"]
    assert used == 2
    assert "[1] Aula: Redes neurais 2 (01:35–03:35)" in user
    assert "[2] Aula: Redes neurais 2 (1:04:56–1:07:10)" in user
    assert user.index("A ReLU zera") < user.index("A sigmoid satura") < user.index("Pergunta:")
    assert NOT_COVERED["pt"] in messages[0]["content"]
    en, _ = build_messages("Which activation is most used?", HITS)
    assert "[1] Lecture: Redes neurais 2" in en[-1]["content"]
    assert NOT_COVERED["en"] in en[0]["content"]


def test_segments_are_cut_to_the_budget() -> None:
    long = [Hit(i, 0.9, "l", "t", "", 0, 1, ("palavra " * 400).strip()) for i in range(10)]
    texts = fit_segments(long, budget=6000, min_chars=400)
    assert len(texts) == 10 and sum(len(t) for t in texts) <= 6000
    assert all(t.endswith("…") for t in texts)
    few = fit_segments(long, budget=1000, min_chars=400)
    assert len(few) == 2  # lower-ranked segments dropped rather than shown as stubs
    assert len(fit_segments(long, budget=6000)) == 6  # default: at least 1,000 characters each
    short = [*HITS, long[0]]
    cut = fit_segments(short, budget=1000, min_chars=400)
    assert cut[:2] == [h.text for h in HITS] and len(cut[2]) <= 1000 - sum(map(len, cut[:2]))


def test_answer_in_portuguese_with_citations(server: FakeLLMServer, llm: LLMClient) -> None:
    result = answer("Qual função de ativação é mais usada hoje?", HITS, llm, embed=fake_embed)
    assert isinstance(result, Answer)
    assert result.covered and result.language == "pt" and result.model == "fake"
    assert result.text == "A ReLU zera os negativos [1]. A sigmoid satura [2]."
    assert [c.n for c in result.citations] == [[1], [2]]  # far apart in time: two spans
    assert result.citations[1].url == "https://youtu.be/abc?t=3896"
    assert result.timings["generate"] > 0
    sent = server.chat_requests[0]["messages"]
    assert "[1] Aula:" in sent[-1]["content"] and "Pergunta:" in sent[-1]["content"]


def test_answer_in_english(llm: LLMClient) -> None:
    result = answer("Which activation function is most used?", HITS, llm)
    assert result.language == "en" and result.covered
    assert result.text == "ReLU zeroes negative values [1]."


@pytest.mark.parametrize("question", ["Como fazer um bolo de cenoura?", "How do I bake a cake?"])
def test_not_covered_is_detected(llm: LLMClient, question: str) -> None:
    result = answer(question, HITS, llm, embed=fake_embed)
    assert not result.covered
    assert result.citations == []
    assert result.text == NOT_COVERED[detect_language(question)]


def test_no_hits_means_not_covered_without_calling_the_llm(
    server: FakeLLMServer, llm: LLMClient
) -> None:
    result = answer("O que é dropout?", [], llm)
    assert (result.covered, result.text) == (False, NOT_COVERED["pt"])
    assert server.chat_requests == []


@pytest.mark.parametrize(
    ("reply", "not_covered"),
    [
        ("As aulas não cobrem esta pergunta.", True),
        ("as aulas nao cobrem esta pergunta", True),
        ("The lectures don’t cover this question.", True),
        ("Os trechos não mencionam receitas de bolo.", True),
        ("", True),
        ("A ReLU zera os negativos [1].", False),
        ("As aulas não cobrem esta pergunta em detalhe, mas a ReLU zera negativos [1] e a "
         "sigmoid satura nas pontas [2], o que ajuda a entender a escolha entre as duas.", False),
    ],
)
def test_is_not_covered(reply: str, not_covered: bool) -> None:
    assert is_not_covered(reply) is not_covered


def test_stream_yields_deltas_then_the_final_answer(llm: LLMClient) -> None:
    pieces = list(answer_stream("Qual ativação é mais usada?", HITS, llm, embed=fake_embed))
    *deltas, final = pieces
    texts = [d for d in deltas if isinstance(d, str)]
    assert len(texts) == len(deltas) > 3
    assert "".join(texts) == "A ReLU zera os negativos [1]. A sigmoid satura [2] [7]."
    assert isinstance(final, Answer)
    assert final.text == "A ReLU zera os negativos [1]. A sigmoid satura [2]."
    assert final.timings["first_token"] <= final.timings["generate"]


def test_stream_with_no_hits(llm: LLMClient) -> None:
    pieces = list(answer_stream("What is dropout?", [], llm))
    assert pieces[0] == NOT_COVERED["en"]
    assert isinstance(pieces[-1], Answer) and not pieces[-1].covered


def test_uncited_answer_gets_citations_from_embeddings(llm: LLMClient) -> None:
    with FakeLLMServer(responder=lambda m: "A ReLU zera negativos. A sigmoid satura.") as srv:
        client = LLMClient(srv.base_url, model="fake", timeout=5.0)
        result = answer("Qual ativação?", HITS, client, embed=fake_embed)
    assert re.findall(r"\[\d\]", result.text) == ["[1]", "[2]"]
    assert len(result.citations) == 2


def test_llm_failure_surfaces_as_llm_error(server: FakeLLMServer, llm: LLMClient) -> None:
    server.fail_next(2, 500)
    with pytest.raises(LLMError, match=server.base_url):
        answer("Qual ativação?", HITS, llm)
