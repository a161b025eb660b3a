"""``aula ask`` answers in-process (no web app), prints a record the report parser reads back,
and stores nothing unless ``--save``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from eval.record import parse_records
from tests.app.fake_llm import FakeLLMServer
from tests.cli.inprocess import Ran, run_aula


def responder(messages: list[dict]) -> str:
    user = messages[-1]["content"]
    if "PERGUNTA DE UM ESTUDANTE" in user or "AFIRMAÇÃO:" in user:
        return "SIM@0.97"
    return "A ReLU devolve o máximo entre zero e a entrada [1]."


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(responder) as srv:
        yield srv


def ask(args: list[str], env_extra: dict[str, str], cwd: Path) -> Ran:
    return run_aula("ask", *args, cwd=cwd, **env_extra)


def test_ask_prints_a_record_and_stores_nothing(tmp_path: Path, sample_index, llm) -> None:  # type: ignore[no-untyped-def]
    gate = tmp_path / "gate.json"
    gate.write_text('{"p_covered": 0.5}')
    db = tmp_path / "aula.db"
    env = {"AULA_INDEX_DIR": str(sample_index.root), "AULA_LLM_BASE_URL": llm.base_url,
           "AULA_LLM_MODEL": "fake-model", "AULA_GATE_FILE": str(gate),
           "AULA_DATABASE_URL": f"sqlite:///{db}"}
    res = ask(["O que a função ReLU faz?", "-k", "4"], env, tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    [rec] = parse_records(res.stdout)
    assert rec.question == "O que a função ReLU faz?"
    assert rec.answer.startswith("A ReLU devolve") and rec.segments and rec.references
    assert not db.exists()  # nothing stored, no review queue touched

    res = ask(["O que a função ReLU faz?", "-k", "4", "--json", "--save"], env, tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    body = json.loads(res.stdout)
    assert body["covered"] is True and body["moments"] and body["strategy"] == "gated"
    assert "guardada para revisão: #1" in res.stderr
    assert db.exists()


def test_ask_with_the_llm_down_prints_the_moments_and_exits_1(tmp_path: Path, sample_index
                                                              ) -> None:  # type: ignore[no-untyped-def]
    env = {"AULA_INDEX_DIR": str(sample_index.root), "AULA_LLM_BASE_URL": "http://127.0.0.1:9/v1",
           "AULA_LLM_MODEL": "x", "AULA_LLM_RETRIES": "0"}
    res = ask(["O que a função ReLU faz?", "--json"], env, tmp_path)
    assert res.returncode == 1
    body = json.loads(res.stdout)
    assert body["answer"] is None and body["moments"] and "Não consegui" in body["note"]
    assert "erro:" in res.stderr


def test_a_reply_that_cites_nothing_lists_the_moments_it_points_to(tmp_path: Path, sample_index
                                                                  ) -> None:  # type: ignore[no-untyped-def]
    env = {"AULA_INDEX_DIR": str(sample_index.root), "AULA_LLM_BASE_URL": "http://127.0.0.1:9/v1",
           "AULA_LLM_MODEL": "x", "AULA_LLM_RETRIES": "0"}
    text = ask(["O que a função ReLU faz?"], env, tmp_path)
    body = json.loads(ask(["O que a função ReLU faz?", "--json"], env, tmp_path).stdout)
    [rec] = parse_records(text.stdout)
    assert rec.answer.startswith("Não consegui") and not body["citations"]
    assert [r.url for r in rec.references] == [m["url"] for m in body["moments"]]
    assert body["moments"] and all(f"{m['title']} (" in r.title
                                   for r, m in zip(rec.references, body["moments"], strict=True))


def test_a_question_that_cannot_be_asked_gets_one_line_naming_the_field(
        tmp_path: Path, sample_index) -> None:  # type: ignore[no-untyped-def]
    env = {"AULA_INDEX_DIR": str(sample_index.root), "AULA_LLM_BASE_URL": "http://127.0.0.1:9"}
    empty = ask(["   "], env, tmp_path)
    assert empty.returncode == 2
    assert empty.stderr.strip() == "erro: question: the question is empty"
    many = ask(["o que é ReLU?", "-k", "0"], env, tmp_path)
    assert many.returncode == 2 and many.stderr.strip().startswith("erro: k: ")
    assert "Value error" not in empty.stderr + many.stderr
