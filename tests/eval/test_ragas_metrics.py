"""ragas metrics against a deterministic fake OpenAI-compatible LLM over real HTTP, with the real
E5 embedder.

The fake reads what ragas asks for (the output model's name in instructor's JSON-mode system
message, the input JSON at the end of ragas' prompt) and answers valid JSON for it by simple
rules: statements are the answer's sentences, a statement is supported when all its long words
are in the context, generated questions come from a keyword table. An input containing
``LIXO`` gets a reply that is not JSON, one containing ``FORMATO`` JSON of the wrong shape, and
``VEREDITO`` non-binary verdicts.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

import pytest

from eval.ragas_metrics import (
    ANSWER_RELEVANCY,
    CONTEXT_PRECISION,
    CONTEXT_RECALL,
    FAITHFULNESS,
    METRICS,
    E5RagasEmbeddings,
    RagasItem,
    RagasScorer,
    ragas_scores,
    strip_markers,
)
from tests.app.fake_llm import FakeLLMServer

QUESTION = "Onde ocorre a fotossíntese e o que ela produz?"
CONTEXTS = [
    "Na aula de biologia, a professora explica que a fotossíntese ocorre nos cloroplastos "
    "das células vegetais.",
    "A clorofila absorve a luz. A fotossíntese produz glicose e libera oxigênio a partir de "
    "gás carbônico e água.",
    "A mitocôndria é a organela responsável pela respiração celular.",
]
GOOD = ("A fotossíntese ocorre nos cloroplastos [1]. "
        "A fotossíntese produz glicose e libera oxigênio [2].")
HALF_MADE_UP = ("A fotossíntese ocorre nos cloroplastos [1]. "
                "A fotossíntese produz proteínas no núcleo.")
OFF_TOPIC = "A mitocôndria é responsável pela respiração celular [3]."
EVASIVE = "Não sei; as aulas não tratam disso."
REFERENCE = "A fotossíntese ocorre nos cloroplastos. A fotossíntese produz glicose."

# what the fake "LLM" answers to "which question does this answer answer?", by keyword
GENERATED_QUESTIONS = [
    ("mitocôndria", "Qual é a função da mitocôndria?"),
    ("cloroplastos", QUESTION),
    ("não sei", "Onde ocorre a fotossíntese?"),
]


# --- the fake LLM ------------------------------------------------------------------------------


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w{4,}", text.lower())}


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?;])\s+", text) if re.search(r"\w", s)]


def _supported(statement: str, context: str) -> int:
    return int(_words(statement) <= _words(context))


def _asked(messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """(output model name, input fields) of a ragas request in instructor's JSON mode."""
    system = messages[0]["content"]
    title = re.search(r'"title": "(\w+)",\s*"type": "object"\s*\}\s*Make sure', system)
    assert title, system
    user = next(m["content"] for m in messages if m["role"] == "user")
    raw = user.rsplit("Now perform the same with the following input\ninput: ", 1)[1]
    raw = raw.rsplit("\nOutput:", 1)[0]
    return title.group(1), json.loads(raw)


def fake_ragas_llm(messages: list[dict[str, Any]]) -> str:
    model, data = _asked(messages)
    if "LIXO" in json.dumps(data, ensure_ascii=False):
        return "Desculpe, não entendi a tarefa."
    if "FORMATO" in json.dumps(data, ensure_ascii=False):
        return json.dumps({"resposta": "ok"})
    if model == "StatementGeneratorOutput":
        out: dict[str, Any] = {"statements": _sentences(data["answer"])}
    elif model == "NLIStatementOutput":
        out = {"statements": [
            {"statement": s, "reason": "palavras no contexto",
             "verdict": _supported(s, data["context"])}
            for s in data["statements"]
        ]}
    elif model == "AnswerRelevanceOutput":
        text = data["response"].lower()
        question = next((q for key, q in GENERATED_QUESTIONS if key in text), "Do que se trata?")
        out = {"question": question, "noncommittal": int("não sei" in text)}
    elif model == "ContextPrecisionOutput":
        useful = len(_words(data["context"]) & _words(data["answer"])) >= 2
        out = {"reason": "compartilham termos" if useful else "outro assunto",
               "verdict": 7 if "VEREDITO" in data["answer"] else int(useful)}
    elif model == "ContextRecallOutput":
        out = {"classifications": [
            {"statement": s, "reason": "no contexto",
             "attributed": _supported(s, data["context"])}
            for s in _sentences(data["answer"])
        ]}
    else:
        raise AssertionError(f"unexpected ragas prompt {model}")
    return json.dumps(out, ensure_ascii=False)


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(fake_ragas_llm) as srv:
        yield srv


@pytest.fixture
def score(llm, embedder):  # type: ignore[no-untyped-def]
    def run(items: list[Any], **options: Any):  # type: ignore[no-untyped-def]
        return ragas_scores(items, base_url=llm.base_url, api_key=None, model="fake-model",
                            embedder=embedder, **options)

    return run


def _item(answer: str, reference: str | None = REFERENCE, question: str = QUESTION) -> RagasItem:
    return RagasItem(question=question, answer=answer, contexts=tuple(CONTEXTS),
                     reference=reference)


# --- tests --------------------------------------------------------------------------------------


def test_good_item_gets_all_four_scores_in_unit_range(score) -> None:  # type: ignore[no-untyped-def]
    [r] = score([_item(GOOD)])
    assert r.errors == {}
    assert set(r.scores) == set(METRICS) and r.skipped == ()
    for name in METRICS:
        value = r.scores[name]
        assert value is not None and 0.0 <= value <= 1.0 and not math.isnan(value), (name, value)
    assert r.faithfulness == 1.0
    assert r.context_recall == 1.0
    assert r.context_precision == pytest.approx(1.0)  # useful, useful, then the unrelated one
    assert r.answer_relevancy == pytest.approx(1.0, abs=1e-4)  # regenerated the same question
    assert r.row() == {
        "ragas_answer_relevancy": r.answer_relevancy, "ragas_faithfulness": 1.0,
        "ragas_context_precision": r.context_precision, "ragas_context_recall": 1.0,
        "ragas_error": None,
    }


def test_unsupported_statements_lower_faithfulness(score) -> None:  # type: ignore[no-untyped-def]
    good, made_up = score([_item(GOOD), _item(HALF_MADE_UP)])
    assert good.faithfulness == 1.0
    assert made_up.faithfulness == 0.5  # "proteínas no núcleo" is in no context
    assert made_up.errors == {}


def test_off_topic_answer_less_relevant_and_evasive_answer_zero(score) -> None:  # type: ignore[no-untyped-def]
    good, off, evasive = score([_item(GOOD, None), _item(OFF_TOPIC, None), _item(EVASIVE, None)])
    assert good.answer_relevancy is not None and off.answer_relevancy is not None
    assert off.answer_relevancy < good.answer_relevancy - 0.05
    assert evasive.answer_relevancy == 0.0 and evasive.errors == {}  # a real 0, not a failure


def test_garbage_reply_gives_none_and_an_error_naming_the_metric(score) -> None:  # type: ignore[no-untyped-def]
    bad, good = score([_item("LIXO. " + GOOD, reference="LIXO"), _item(GOOD)], max_workers=4)
    assert good.errors == {} and good.faithfulness == 1.0  # the other item is unaffected
    assert set(bad.errors) == set(METRICS)
    for name in METRICS:
        assert bad.scores[name] is None
        assert bad.errors[name].startswith(f"{name}: ")
        assert "not valid" in bad.errors[name] and "JSON" in bad.errors[name]
    assert "StatementGeneratorOutput" in bad.errors[FAITHFULNESS]
    assert bad.row()["ragas_faithfulness"] is None
    assert bad.error is not None and bad.error.count(" | ") == 3


def test_wrong_json_shape_and_out_of_range_values_are_errors(score) -> None:  # type: ignore[no-untyped-def]
    wrong, odd = score([_item("FORMATO. " + GOOD, None), _item(GOOD, "VEREDITO " + REFERENCE)],
                       attempts=2)
    assert wrong.faithfulness is None and wrong.answer_relevancy is None
    assert wrong.errors[FAITHFULNESS] == (
        "faithfulness: LLM reply was not valid StatementGeneratorOutput JSON after 2 attempt(s): "
        "statements: Field required; it said: '{\"resposta\": \"ok\"}'")
    assert odd.context_precision is None
    assert odd.errors == {CONTEXT_PRECISION: "context_precision: value 7 outside [0, 1] "
                                             "(non-binary verdicts?)"}
    assert odd.faithfulness == 1.0 and odd.context_recall is not None


def test_context_precision_and_recall_only_with_a_reference(llm, score) -> None:  # type: ignore[no-untyped-def]
    before = len(llm.chat_requests)
    [r] = score([{"question": QUESTION, "answer": GOOD, "contexts": CONTEXTS,
                  "reference_answer": float("nan")}])
    asked = {_asked(req["messages"])[0] for req in llm.chat_requests[before:]}
    assert set(r.scores) == {ANSWER_RELEVANCY, FAITHFULNESS}
    assert r.skipped == (CONTEXT_PRECISION, CONTEXT_RECALL) and r.errors == {}
    assert r.context_precision is None and r.context_recall is None
    assert not asked & {"ContextPrecisionOutput", "ContextRecallOutput"}

    [with_ref] = score([{"question": QUESTION, "answer": GOOD, "contexts": CONTEXTS,
                         "reference_answer": REFERENCE}])
    assert with_ref.context_precision is not None and with_ref.context_recall is not None


def test_prompts_are_portuguese_and_ask_for_json(llm, score) -> None:  # type: ignore[no-untyped-def]
    before = len(llm.chat_requests)
    score([_item(GOOD)])
    requests = llm.chat_requests[before:]
    kinds = {_asked(r["messages"])[0] for r in requests}
    assert kinds == {"StatementGeneratorOutput", "NLIStatementOutput", "AnswerRelevanceOutput",
                     "ContextPrecisionOutput", "ContextRecallOutput"}
    for req in requests:
        assert req["response_format"] == {"type": "json_object"}
        assert req["model"] == "fake-model"
        user = next(m["content"] for m in req["messages"] if m["role"] == "user")
        assert "português" in user and "Einstein" not in user  # our examples, not ragas' own
        assert "[1]" not in user.rsplit("input:", 1)[1]  # citation markers removed


def test_statementless_answer_and_missing_contexts_are_errors(score) -> None:  # type: ignore[no-untyped-def]
    no_statements, no_contexts = score([
        _item("... ?", None),
        RagasItem(question=QUESTION, answer=GOOD, contexts=()),
    ], max_workers=2)
    assert no_statements.faithfulness is None
    assert no_statements.errors[FAITHFULNESS] == (
        "faithfulness: the LLM extracted no statements from the answer")
    assert no_contexts.faithfulness is None
    assert no_contexts.errors[FAITHFULNESS].startswith("faithfulness: ")
    assert "retrieved_contexts" in no_contexts.errors[FAITHFULNESS]
    assert no_contexts.answer_relevancy is not None  # needs no contexts


def test_unreachable_llm_is_reported_per_metric(embedder) -> None:  # type: ignore[no-untyped-def]
    [r] = ragas_scores([_item(GOOD, None)], base_url="http://127.0.0.1:9/v1", api_key=None,
                       model="m", embedder=embedder, retries=0)
    assert r.scores == {ANSWER_RELEVANCY: None, FAITHFULNESS: None}
    assert all("cannot reach the LLM" in e for e in r.errors.values())


def test_embeddings_use_the_e5_query_prefix(embedder) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    emb = E5RagasEmbeddings(embedder)
    text = "Onde ocorre a fotossíntese?"
    query = embedder.embed([text], "query")[0]
    passage = embedder.embed([text], "passage")[0]
    assert not np.allclose(query, passage)
    assert np.allclose(emb.embed_text(text), query, atol=1e-5)
    assert np.allclose(emb.embed_texts([text, text])[1], query, atol=1e-5)
    assert np.allclose(emb.embed_documents([text])[0], passage, atol=1e-5)


def test_options_are_checked(embedder) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="language"):
        RagasScorer(base_url="http://x/v1", api_key=None, model="m", embedder=embedder,
                    language="klingon")
    with pytest.raises(ValueError, match="unknown ragas metric"):
        RagasScorer(base_url="http://x/v1", api_key=None, model="m", embedder=embedder,
                    metrics=["bleu"])


def test_strip_markers() -> None:
    assert strip_markers("Ocorre nos cloroplastos [1]. Produz glicose [2, 3].") == (
        "Ocorre nos cloroplastos. Produz glicose.")


def test_english_keeps_ragas_own_prompts(llm, score) -> None:  # type: ignore[no-untyped-def]
    before = len(llm.chat_requests)
    [r] = score([_item(GOOD, None)], language="english")
    assert r.errors == {} and r.faithfulness == 1.0
    users = [next(m["content"] for m in q["messages"] if m["role"] == "user")
             for q in llm.chat_requests[before:]]
    assert users and not any("português" in u for u in users)
    assert any("Einstein" in u for u in users)


def test_eval_items_carry_ragas_columns_and_the_report_counts_them(llm, score) -> None:  # type: ignore[no-untyped-def]
    import pandas as pd

    from eval.report import summarise, summary_markdown
    from eval.run import Pipeline, evaluate_item

    def judge(messages):  # type: ignore[no-untyped-def]
        return "Criteria: c\nSupporting Evidence: e\nScore: 3"

    pipeline = Pipeline(judge=judge, correctness=False,
                        ragas=lambda item: score([item])[0])
    rows = [
        {"id": "a", "question": QUESTION, "answer": GOOD, "contexts": CONTEXTS,
         "reference_answer": REFERENCE},
        {"id": "b", "question": QUESTION, "answer": HALF_MADE_UP, "contexts": CONTEXTS},
    ]
    items = [evaluate_item(r, pipeline) for r in rows]
    assert items[0]["ragas_faithfulness"] == 1.0
    assert items[1]["ragas_faithfulness"] < 1.0 and items[1]["ragas_context_recall"] is None
    summary = summarise(pd.DataFrame(items))
    assert summary["ragas"]["faithfulness"]["n_scored"] == 2
    assert summary["ragas"]["context_recall"] == {
        "mean": 1.0, "n_scored": 1, "n_failed": 0, "n_skipped": 1}
    assert "## ragas" in summary_markdown(pd.DataFrame(items), summary)
