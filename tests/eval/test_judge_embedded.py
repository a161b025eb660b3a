"""(slow) The judges on the real embedded LLM: the reference record, an irrelevant answer,
and a confidently wrong one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from eval.claims import verify_claims
from eval.judge import RELEVANCE, judge_item
from eval.record import parse_records
from tests.conftest import SHARED

REFERENCE = SHARED / "reference" / "report-pergunta-123.md"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not REFERENCE.exists(), reason="../shared/reference absent"),
]


@pytest.fixture(scope="module")
def client() -> Iterator[object]:
    from app.embedded_llm import EmbeddedLLM, assemble_gguf
    from app.llm import LLMClient

    with EmbeddedLLM(assemble_gguf(Path.home() / ".cache" / "aula")) as srv:
        yield LLMClient(srv.base_url, model=srv.model_id, timeout=600)


@pytest.fixture(scope="module")
def chat(client):  # type: ignore[no-untyped-def]
    return lambda messages: client.chat(messages, temperature=0.0, max_tokens=400)


@pytest.fixture(scope="module")
def record():  # type: ignore[no-untyped-def]
    return parse_records(REFERENCE.read_text(encoding="utf-8"))[0]


def test_reference_answer_scores_and_irrelevant_scores_lower(chat, record) -> None:  # type: ignore[no-untyped-def]
    good = judge_item(chat, RELEVANCE, {"question": record.question, "answer": record.answer})
    assert good.score is not None, good.raw
    bad = judge_item(chat, RELEVANCE, {
        "question": record.question,
        "answer": "A receita de pão de queijo leva polvilho, queijo minas, ovos e leite.",
    })
    assert bad.score is not None, bad.raw
    assert bad.score < good.score


def test_confidently_wrong_answer_scores_lower_on_correctness(client, record) -> None:  # type: ignore[no-untyped-def]
    contexts = [s.text for s in record.segments[:4]]
    right = verify_claims(client.first_token, record.answer, contexts)
    wrong = verify_claims(
        client.first_token,
        "O TensorBoard é um banco de dados SQL do PyTorch que guarda os pesos do modelo em "
        "tabelas; ele não mostra gráficos e só funciona depois que o treinamento termina.",
        contexts,
    )
    assert right.score is not None and wrong.score is not None, (right.raw, wrong.raw)
    assert wrong.score < right.score, (right.reasoning, wrong.reasoning)
    assert wrong.claims is not None and wrong.claims.supported < wrong.claims.total
