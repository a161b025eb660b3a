"""The quote strategy: the lecture's own words quoted at their second (by default the first two
passages that answer, with no generated sentence; optionally one passage led by one generated
sentence the quote confirms), and an honest "not found" when no passage answers.

Pure parts on plain data; the strategy itself over real HTTP against the fake LLM, which answers
the yes/no on a quote by whether the quote says what the question asks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from answer.evidence import Gate
from answer.quote import (
    QUOTE,
    Quote,
    QuoteSettings,
    continued,
    quote_answer,
    quotes_answer,
    runs,
    sentences,
)
from app.config import Settings
from app.main import create_app
from corpus.context import Passage
from corpus.models import Cue, Hit
from corpus.readers import read_cues
from tests.app.fake_llm import FakeLLMServer
from tests.servers import ServedApp

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "lectures"
LEAD = {"text": "A ReLU devolve o máximo entre zero e a entrada."}


def _passage(cues: list[Cue]) -> Passage:
    hit = Hit(1, 0.9, "aula-01", "Aula 1", "", cues[0].start, cues[-1].end,
              " ".join(c.text for c in cues))
    return Passage(hit, hit.text, hit.start, hit.end, hit.start, cues=tuple(cues))


def test_a_spoken_cue_is_cut_into_sentences_with_their_own_seconds() -> None:
    cue = Cue(100.0, 130.0, "Massa? Então o JWT assinado não é criptografado, qualquer um lê o "
                            "conteúdo dele. Por isso não coloque senha no token, tá bom?")
    got = sentences(_passage([cue]))
    assert [s.text for s in got] == [
        "Massa? Então o JWT assinado não é criptografado, qualquer um lê o conteúdo dele.",
        "Por isso não coloque senha no token, tá bom?"]
    # the short "Massa?" joins the sentence after it; the second sentence starts later in the
    # cue, in proportion to the characters before it
    assert got[0].start == pytest.approx(100.0)
    assert 100.0 + 30 * 0.5 < got[1].start < 130.0
    assert got[1].end == pytest.approx(130.0)


def test_runs_stay_within_the_quote_budget_but_a_long_sentence_stands_alone() -> None:
    long = "x" * 500 + "."
    cues = [Cue(0, 10, "Primeira frase com bastante texto aqui."), Cue(10, 20, long),
            Cue(20, 30, "Terceira frase com bastante texto também.")]
    sents = sentences(_passage(cues))
    got = runs(sents, max_run=3, max_chars=360)
    assert (1, 2) in got  # the long sentence alone
    assert (0, 2) not in got and (1, 3) not in got  # nothing longer than the budget with it


def test_the_answer_names_the_lecture_and_the_second_and_cites_the_quote() -> None:
    q = Quote(0, 101.9, 114.7, "Hoje em dia a função mais usada é a ReLU.", 0.9, 0.95)
    text = quote_answer("A mais usada é a ReLU", q, "Redes neurais", "pt")
    lead, body = text.split("\n\n")
    assert lead == "A mais usada é a ReLU. [1]"
    assert body == ("Na aula “Redes neurais”, em 01:41, o professor diz: "
                    "“Hoje em dia a função mais usada é a ReLU.” [1]")
    assert quote_answer(None, q, "Redes neurais", "pt") == body


def test_two_quoted_moments_each_name_their_lecture_and_second_and_the_lead_cites_its_own(
        ) -> None:
    a = Quote(0, 61.0, 75.0, "O uvicorn é o servidor que roda a aplicação.", 0.9, 0.93)
    b = Quote(1, 905.5, 930.0, "O reload reinicia o servidor quando um arquivo muda.", 0.9, 0.91)
    text = quotes_answer("O reload vem do uvicorn", 2, [(a, "Aula 01"), (b, "Aula 02")], "pt")
    lead, first, second = text.split("\n\n")
    assert lead == "O reload vem do uvicorn. [2]"
    assert first == ("Na aula “Aula 01”, em 01:01, o professor diz: "
                     "“O uvicorn é o servidor que roda a aplicação.” [1]")
    assert second.startswith("Na aula “Aula 02”, em 15:05, o professor diz: ")
    assert second.endswith(" [2]")
    assert quotes_answer(None, 1, [(a, "Aula 01")], "pt") == quote_answer(None, a, "Aula 01", "pt")


def responder(messages: list[dict]) -> str:
    user = messages[-1]["content"]
    if "PERGUNTA DE UM ESTUDANTE" in user:  # the yes/no on a passage or a quote
        text = user.split("PERGUNTA DE UM ESTUDANTE")[0]
        asked = user.split("PERGUNTA DE UM ESTUDANTE")[1].lower()
        if "ativação" in asked:
            return "SIM@0.95" if "máximo entre zero" in text else "NÃO@0.9"
        return "NÃO@0.95"
    if "AFIRMAÇÃO:" in user:  # the claim check of the lead against the quote
        text, claim = user.split("AFIRMAÇÃO:", 1)
        return "SIM@0.95" if "máximo" in claim and "máximo" in text else "NÃO@0.9"
    if "Frases da aula" in user:  # the one lead sentence
        return LEAD["text"]
    return "Resposta livre que não deveria aparecer [1]."


@pytest.fixture(scope="module")
def fake_llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(responder) as srv:
        yield srv


@contextmanager
def quote_service(sample_index, tmp_path_factory, llm: FakeLLMServer,  # type: ignore[no-untyped-def]
                  gate: Gate | None = None, **settings: object) -> Iterator[str]:
    """The service over the sample lectures answering by quote through ``llm``, with ``gate``
    (default: one that lets every question through; the quote's own yes/no decides)."""
    gate_file = tmp_path_factory.mktemp("gate") / "gate.json"
    gate_file.write_text((gate or Gate(p_covered=0.0, p_pass=0.0)).to_json())
    served = Settings(
        index_dir=sample_index.root, llm_base_url=llm.base_url, llm_model="fake-model",
        llm_retries=0, llm_timeout=5, answer_strategy="quote", gate_file=gate_file,
        quote_confidence="yesno",  # the fake's yes/no decides (the likelihood: slow tests)
        database_url=f"sqlite:///{tmp_path_factory.mktemp('db') / 'aula.db'}",
        ask_rate_per_minute=0, search_rate_per_minute=0, **settings,
    )
    with ServedApp(create_app(served)) as srv:
        yield srv.url


@pytest.fixture(scope="module")
def service(sample_index, fake_llm, tmp_path_factory) -> Iterator[str]:  # type: ignore[no-untyped-def]
    # one passage led by one generated sentence the quote confirms
    with quote_service(sample_index, tmp_path_factory, fake_llm, quote_passages=1,
                       quote_checks=1, quote_lead=True, quote_min_p=0.9) as url:
        yield url


def ask(url: str, question: str) -> dict:
    res = httpx.post(f"{url}/ask", json={"question": question, "k": 4}, timeout=30)
    assert res.status_code == 200
    return res.json()


def test_a_quoted_answer_opens_the_video_where_the_quoted_sentence_is_said(
        service: str) -> None:
    body = ask(service, "Qual função de ativação é a mais usada hoje?")
    _, cues = read_cues(SAMPLES / "redes-neurais" / "redes-neurais.srt")
    (says,) = [c for c in cues if "máximo entre zero e a entrada" in c.text]
    assert body["strategy"] == "quote" and body["covered"] is True, body["reason"]
    lead, quoted = body["answer"].split("\n\n")
    assert lead == "A ReLU devolve o máximo entre zero e a entrada. [1]"
    assert "devolve o máximo entre zero e a entrada" in quoted
    assert "Resposta livre" not in body["answer"]  # nothing free-written reaches the student
    (cite,) = body["citations"]
    assert cite["start"] == pytest.approx(says.start, abs=0.5)
    assert cite["url"].endswith(f"t={int(cite['start'])}")
    assert f"{int(says.start) // 60:02d}:{int(says.start) % 60:02d}" in quoted


def test_a_lead_the_quote_does_not_confirm_is_not_shown(service: str) -> None:
    LEAD["text"] = "A ReLU foi criada em 1950 por um matemático russo."
    try:
        body = ask(service, "Qual função de ativação é a mais usada hoje?")
    finally:
        LEAD["text"] = "A ReLU devolve o máximo entre zero e a entrada."
    assert body["covered"] is True
    assert "1950" not in body["answer"]
    assert body["answer"].startswith("Na aula “")
    assert "máximo entre zero" in body["answer"]


def test_when_no_sentence_answers_the_reply_says_so_and_shows_the_moments(
        service: str) -> None:
    body = ask(service, "Qual a diferença entre a derivada e a integral de uma função?")
    assert body["covered"] is False
    assert body["answer"].startswith("Não achei a frase exata")
    assert body["citations"] == []
    assert body["moments"], "the closest moments are still listed"


def test_a_whole_passage_quote_keeps_the_passage_words_and_its_sentences_seconds() -> None:
    from answer.quote import whole_passage

    cues = [Cue(10.0, 20.0, "O uvicorn é o servidor. O FastAPI é só a aplicação."),
            Cue(20.0, 30.0, "Por isso o reload vem do servidor, não da aplicação.")]
    q = whole_passage(0, _passage(cues))
    assert q.text == ("O uvicorn é o servidor. O FastAPI é só a aplicação. "
                      "Por isso o reload vem do servidor, não da aplicação.")
    assert (q.start, q.end) == (10.0, 30.0)
    assert [s.start for s in q.sentences][0] == 10.0


def test_a_quote_is_continued_with_the_lecture_s_next_whole_sentences_to_its_length() -> None:
    q = Quote(0, 10.0, 20.0, "O uvicorn é o servidor que roda a aplicação.", 0.9)
    after = [Cue(5.0, 10.0, "Antes disso falamos de rotas."),
             Cue(20.0, 30.0, "Por isso o reload vem do servidor. "
                             "Ele observa os arquivos do projeto."),
             Cue(30.0, 40.0, "Quando um arquivo muda, ele reinicia a aplicação sozinho."),
             Cue(40.0, 50.0, "Agora vamos falar de testes, que é outro assunto.")]
    got = continued(q, after, 100)
    # the explanation that follows is joined, sentence by sentence, until the quote reaches
    # 100 characters; the sentence said before the quote is not
    assert got.text == ("O uvicorn é o servidor que roda a aplicação. Por isso o reload vem do "
                        "servidor. Ele observa os arquivos do projeto.")
    assert got.start == 10.0 and got.end == pytest.approx(30.0)
    longer = continued(q, after, 120)
    assert longer.text.endswith("reinicia a aplicação sozinho.") and longer.end == 40.0
    assert continued(q, after, 0) == q and continued(q, after, 30) == q
    assert continued(q, [], 500) == q


def test_a_quote_cut_mid_sentence_goes_on_to_the_sentence_s_end_however_long_it_is() -> None:
    q = Quote(0, 10.0, 20.0, "O limit e o offset servem pra paginação, porque imagina o seguinte",
              0.9)
    after = [Cue(20.0, 28.0, "tem mil usuários no banco e o get traz todos de uma vez"),
             Cue(28.0, 33.0, "e a resposta fica gigante. Aí o limit corta em dez."),
             Cue(33.0, 40.0, "Agora vamos falar de testes, que é outro assunto.")]
    got = continued(q, after, 40)  # already longer than 40 characters
    assert got.text.endswith("de uma vez e a resposta fica gigante.")
    assert got.end < 33.0 and "limit corta" not in got.text
    # a sentence that does not end within reach leaves the quote where it stopped
    rambling = [Cue(20.0 + n, 21.0 + n, "e aí a gente vai mexendo aqui mais um pouco")
                for n in range(12)]
    assert continued(q, rambling, 40) == q
    whole = Quote(0, 10.0, 20.0, "O limit serve pra paginação.", 0.9)
    assert continued(whole, after, 20) == whole  # long enough, and it ends a sentence


def test_a_quote_goes_on_only_up_to_where_the_next_quote_of_its_lecture_starts() -> None:
    from answer.quoting import Quoter

    lecture = [Cue(10.0, 20.0, "O uvicorn é o servidor que roda a aplicação."),
               Cue(20.0, 30.0, "Por isso o reload vem do servidor, não da aplicação."),
               Cue(30.0, 40.0, "O FastAPI só descreve as rotas e os esquemas da API."),
               Cue(40.0, 50.0, "Quando um arquivo muda, o servidor reinicia sozinho.")]

    def cues_for(hit: Hit) -> list[Cue]:
        return [c for c in lecture if c.end > hit.start and c.start < hit.end]

    passages = [_passage(lecture[:1]), _passage(lecture[2:3])]
    first = Quote(0, 10.0, 20.0, lecture[0].text, 0.9)
    second = Quote(1, 30.0, 40.0, lecture[2].text, 0.9)
    quoter = Quoter(None, lambda texts, kind: None, replace(QUOTE, chars=500),  # type: ignore[arg-type]
                    cues_for=cues_for)
    got = quoter.continued(passages, [first, second])
    # the first stops before the second's words; the second goes on to the lecture's end
    assert got[0].text == f"{lecture[0].text} {lecture[1].text}" and got[0].end == 30.0
    assert got[1].text == f"{lecture[2].text} {lecture[3].text}" and got[1].end == 50.0
    assert Quoter(None, lambda texts, kind: None).continued(passages, [first]) == [first]  # type: ignore[arg-type]


def two_passages_responder(messages: list[dict]) -> str:
    user = messages[-1]["content"]
    if "PERGUNTA DE UM ESTUDANTE" in user:  # the yes/no on each quoted passage
        text = user.split("PERGUNTA DE UM ESTUDANTE")[0]
        said = text.lower()
        return "SIM@0.95" if "ativaç" in said or "gradiente" in said else "NÃO@0.95"
    if "AFIRMAÇÃO:" in user:
        return "NÃO@0.9"  # no lead: the quotes stand alone
    if "Frases da aula" in user:
        return "Uma frase que nenhum trecho confirma."
    return "Resposta livre que não deveria aparecer [1]."


@pytest.fixture(scope="module")
def two_quote_service(sample_index, tmp_path_factory) -> Iterator[str]:  # type: ignore[no-untyped-def]
    with FakeLLMServer(two_passages_responder) as llm, quote_service(
            sample_index, tmp_path_factory, llm, quote_passages=2, quote_checks=2,
            quote_min_p=0.5, quote_chars=0) as url:  # each passage as read
        yield url


def test_two_passages_are_quoted_each_at_its_own_second_and_one_that_does_not_answer_is_not(
        two_quote_service: str) -> None:
    body = ask(two_quote_service, "Qual função de ativação é a mais usada e como o gradiente "
                                  "é calculado?")
    assert body["covered"] is True, body["reason"]
    paragraphs = body["answer"].split("\n\n")
    assert all(p.startswith("Na aula “") for p in paragraphs)  # no unconfirmed lead
    assert "Resposta livre" not in body["answer"] and "nenhum trecho" not in body["answer"]
    assert len(paragraphs) == len(body["citations"]) == 2
    assert "sobreajuste" not in body["answer"]  # a passage the LLM reads as not answering
    _, cues = read_cues(SAMPLES / "redes-neurais" / "redes-neurais.srt")
    for n, (para, cite) in enumerate(zip(paragraphs, body["citations"], strict=True), 1):
        assert para.endswith(f"[{n}]")
        start = int(cite["start"])
        assert f"em {start // 60:02d}:{start % 60:02d}" in para
        assert cite["url"].endswith(f"t={start}")
        # the quote's second is where one of the lecture's cues starts
        assert min(abs(c.start - cite["start"]) for c in cues) < 1.0


def test_by_default_the_embedded_model_quotes_the_lecture_and_an_endpoint_writes(
        sample_index) -> None:  # type: ignore[no-untyped-def]
    from answer.pipeline import Pipeline

    embedded = Settings(_env_file=None, index_dir=sample_index.root,  # type: ignore[call-arg]
                        llm_base_url=None)
    endpoint = embedded.model_copy(update={"llm_base_url": "http://127.0.0.1:9/v1"})
    assert embedded.answer.strategy == "auto"
    assert Pipeline.from_settings(embedded, None).strategy == "quote"
    assert Pipeline.from_settings(endpoint, None).strategy == "gated"
    chosen = endpoint.model_copy(update={"answer_strategy": "direct"})
    assert Pipeline.from_settings(chosen, None).strategy == "direct"


@pytest.fixture(scope="module")
def no_lead(sample_index, tmp_path_factory) -> Iterator[tuple[str, FakeLLMServer]]:  # type: ignore[no-untyped-def]
    with FakeLLMServer(responder) as llm, quote_service(sample_index, tmp_path_factory,
                                                        llm, quote_checks=2) as url:
        yield url, llm


def test_by_default_the_quote_is_the_whole_answer_and_no_sentence_is_generated(
        no_lead: tuple[str, FakeLLMServer]) -> None:
    url, llm = no_lead
    body = ask(url, "Qual função de ativação é a mais usada hoje?")
    assert body["covered"] is True, body["reason"]
    assert body["answer"].startswith("Na aula “") and "\n\n" not in body["answer"]
    assert "devolve o máximo entre zero e a entrada" in body["answer"]
    asked = [json.dumps(r, ensure_ascii=False) for r in llm.chat_requests]
    assert asked and not any("Frases da aula" in a for a in asked)  # no lead was written


def test_a_question_the_gate_is_unsure_of_is_declined_before_any_quote_is_read(
        sample_index, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    # a fitted gate that passes every question with P(covered) = 0.5 (bias 0, weight 0), and
    # an LLM that reads every quote as answering: only the quote's cut on P(covered) decides
    unsure = Gate(weights={"best_p": 0.0}, bias=0.0, min_p=0.0)
    question = "Qual função de ativação é a mais usada hoje?"
    with FakeLLMServer(two_passages_responder) as llm:
        with quote_service(sample_index, tmp_path_factory, llm, unsure) as url:
            body = ask(url, question)
        assert body["covered"] is False, body["reason"]
        assert body["answer"].startswith("As aulas não parecem cobrir")
        assert body["citations"] == [] and body["moments"]
        with quote_service(sample_index, tmp_path_factory, llm, unsure,
                           quote_min_covered=0.4) as url:
            body = ask(url, question)
        assert body["covered"] is True, body["reason"]
        assert body["answer"].startswith("Na aula “") and body["citations"]


def test_the_demo_question_is_quoted_with_the_shipped_gate_though_its_fallback_passed_it(
        sample_index, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    # on the sample lectures the main model's P(covered) is low (short clean lectures score
    # under its cosine threshold) and the fallback passes the question with a P on its own
    # scale: the quote's cut on P(covered) must not decline it
    shipped = Gate.from_json((SAMPLES.parents[1] / "answer" / "gate.json").read_text())
    with FakeLLMServer(two_passages_responder) as llm:
        with quote_service(sample_index, tmp_path_factory, llm, shipped) as url:
            body = ask(url, "Qual função de ativação é mais usada hoje e por quê?")
    assert "fallback" in body["reason"]
    assert body["covered"] is True, body["reason"]
    assert "ReLU" in body["answer"] and body["citations"]


def test_each_quote_setting_is_read_from_its_environment_variable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"AULA_QUOTE_MIN_P": "0.6", "AULA_QUOTE_MIN_COVERED": "0.5",
           "AULA_QUOTE_READ": "sentences", "AULA_QUOTE_CHECKS": "4", "AULA_QUOTE_PASSAGES": "1",
           "AULA_QUOTE_LEAD": "true", "AULA_QUOTE_SPAN": "sentences",
           "AULA_QUOTE_CONFIDENCE": "off", "AULA_QUOTE_MIN_GAIN": "0.3",
           "AULA_QUOTE_CHARS": "0"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    got = QuoteSettings.of(Settings(_env_file=None).answer)  # type: ignore[call-arg]
    assert got == QuoteSettings(min_p=0.6, min_covered=0.5, read="sentences", checks=4,
                                shown=1, lead=True, span="sentences", confidence="off",
                                min_gain=0.3, chars=0, gate_cut=False)
    for name in env:
        monkeypatch.delenv(name)
    assert QuoteSettings.of(Settings(_env_file=None).answer) == QUOTE  # type: ignore[call-arg]


def test_by_default_the_yes_no_reads_the_first_passage_and_the_next_is_quoted_with_it(
        sample_index, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    with FakeLLMServer(responder) as llm, quote_service(sample_index, tmp_path_factory,
                                                        llm) as url:
        body = ask(url, "Qual função de ativação é a mais usada hoje?")
    assert body["covered"] is True, body["reason"]
    assert "devolve o máximo entre zero e a entrada" in body["answer"]
    assert "[1]" in body["answer"] and "[2]" in body["answer"]  # two passages, one read
    assert len(body["citations"]) == 2
    asked = [r for r in llm.chat_requests
             if "PERGUNTA DE UM ESTUDANTE" in json.dumps(r, ensure_ascii=False)]
    # this test's gate reads the LLM's check of each candidate; the quote reads one more
    candidates = Settings(_env_file=None).answer.gate_candidates  # type: ignore[call-arg]
    assert len(asked) == candidates + 1, len(asked)


def test_a_quoted_passage_goes_on_to_the_lecture_s_next_sentences_with_their_seconds(
        no_lead: tuple[str, FakeLLMServer], sample_index, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    question = "Qual função de ativação é a mais usada hoje?"
    url, _ = no_lead
    body = ask(url, question)
    with FakeLLMServer(responder) as llm, quote_service(
            sample_index, tmp_path_factory, llm, quote_checks=2, quote_chars=0) as plain:
        focused = ask(plain, question)
    assert body["covered"] is True and focused["covered"] is True
    said = body["answer"].split("“", 2)[2].rsplit("”", 1)[0]
    as_focused = focused["answer"].split("“", 2)[2].rsplit("”", 1)[0]
    assert said.startswith(as_focused) and len(said) > len(as_focused)
    # what was added is what the lecture says next, and the citation ends where it is said
    _, cues = read_cues(SAMPLES / "redes-neurais" / "redes-neurais.srt")
    (cite,) = body["citations"]
    (before,) = focused["citations"]
    assert cite["start"] == before["start"] and cite["end"] > before["end"]
    last = [c for c in cues if c.text.strip() and c.text.strip() in said][-1]
    assert cite["end"] == pytest.approx(last.end, abs=0.5)


def yes_responder(messages: list[dict]) -> str:
    user = messages[-1]["content"]
    if "PERGUNTA DE UM ESTUDANTE" in user or "AFIRMAÇÃO:" in user:
        return "SIM@0.95"
    return "Resposta livre que não deveria aparecer [1]."


def test_a_comparison_quotes_one_passage_more_so_each_subject_s_lecture_is_quoted(
        sample_index, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    with FakeLLMServer(yes_responder) as llm, quote_service(
            sample_index, tmp_path_factory, llm, quote_chars=0) as url:
        compared = ask(url, "qual a diferença entre a regra da cadeia e a função de ativação "
                            "ReLU?")
        single = ask(url, "o que a regra da cadeia diz sobre funções compostas?")
    assert compared["covered"] is True, compared["reason"]
    assert len(compared["citations"]) == 3
    assert {c["lecture_id"] for c in compared["citations"]} == {"derivadas", "redes-neurais"}
    assert len(single["citations"]) == 2  # a question of one subject: the settings' two
