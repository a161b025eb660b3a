"""``aula adapt`` as a user runs it: questions written by an LLM over real HTTP (a fake server,
deterministic), the real E5 model fine-tuned on them, and search that loads the result."""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

import pytest

from tests.app.fake_llm import FakeLLMServer, Messages
from tests.cli.inprocess import Ran, run_aula
from tests.conftest import SAMPLES


def student_question(messages: Messages) -> str:
    """A question about the passage's own words, as a student might type it."""
    passage = re.search(r'"""\n(.*?)\n"""', messages[-1]["content"], re.S)
    words = [w for w in re.findall(r"\w+", passage.group(1) if passage else "") if len(w) > 4]
    return f"Pergunta: o que a aula fala sobre {' '.join(words[2:6]).lower()}?"


def run(*args: str, index: Path, llm: FakeLLMServer | None = None) -> Ran:
    env = {"AULA_INDEX_DIR": str(index)}
    if llm is not None:
        env["AULA_LLM_BASE_URL"] = llm.base_url
    return run_aula(*args, **env)


@pytest.fixture(scope="module")
def adapted(tmp_path_factory) -> tuple[Path, dict, FakeLLMServer]:  # type: ignore[no-untyped-def]
    index = tmp_path_factory.mktemp("adapt") / "index"
    assert run("ingest", str(SAMPLES), index=index).returncode == 0
    with FakeLLMServer(responder=student_question) as llm:
        res = run("adapt", "--questions", "16", "--json", index=index, llm=llm)
        assert res.returncode == 0, res.stderr
        yield index, json.loads(res.stdout), llm


def test_adapt_writes_questions_and_a_model(adapted) -> None:  # type: ignore[no-untyped-def]
    index, out, llm = adapted
    lines = (index / "adapted" / "questions.jsonl").read_text().splitlines()
    assert len(lines) == 16 == len(llm.chat_requests)
    asked = [json.loads(x) for x in lines]
    # a question that names nothing its passage says (only everyday words) is stored as none
    assert out["questions"] == sum(1 for r in asked if r["question"]) >= 12
    first = next(r for r in asked if r["question"])
    assert first["question"].startswith("o que a aula fala sobre")  # the label is gone
    assert first["lecture_id"] in {"derivadas", "redes-neurais"} and first["end"] > first["start"]
    model = Path(out["model_dir"])
    assert model == index / "adapted" / "model"
    manifest = json.loads((model / "adapted.json").read_text())
    assert manifest["questions"] == out["questions"]
    assert manifest["trained_on"] + manifest["held_out"] == manifest["kept"] >= 12
    assert not [p for p in (index / "adapted").iterdir() if p.name.startswith(".model")]


def test_search_loads_the_adapted_model(adapted) -> None:  # type: ignore[no-untyped-def]
    from app.config import Settings
    from app.services import embedder_from_settings, retriever_for
    from corpus.index import IndexStore

    index, _, _ = adapted
    settings = Settings(index_dir=index, rerank="adapted")
    data = IndexStore(index).load()
    retriever = retriever_for(settings, data, embedder_from_settings(settings))
    assert retriever.reranker is not None and retriever.reranker.name.startswith("adapted:")
    found = retriever.search_timed("qual a derivada do seno?", k=3)
    assert found.hits[0].lecture_id == "derivadas" and found.timings.rerank_s > 0
    default = retriever_for(Settings(index_dir=index), data, embedder_from_settings(settings))
    assert default.reranker is None  # the fusion alone unless the operator asks for it


def test_a_rerun_resumes_and_asks_only_for_what_is_missing(adapted, tmp_path) -> None:  # type: ignore[no-untyped-def]
    index, _, _ = adapted
    copy = tmp_path / "index"
    shutil.copytree(index, copy)
    questions = copy / "adapted" / "questions.jsonl"
    lines = questions.read_text().splitlines()
    # an interrupted run: its last line cut in the middle
    questions.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:25])
    with FakeLLMServer(responder=student_question) as llm:
        res = run("adapt", "--questions", "18", "--no-train", "--json", index=copy, llm=llm)
    assert res.returncode == 0, res.stderr
    assert len(llm.chat_requests) == 3  # the cut passage again and two new ones
    rows = [json.loads(x) for x in questions.read_text().splitlines()]
    assert len(rows) == len({r["key"] for r in rows}) == 18
    assert json.loads(res.stdout)["questions_written_now"] == 3


def test_a_corrupt_adapted_model_falls_back_with_one_warning(adapted, tmp_path, caplog
                                                             ) -> None:  # type: ignore[no-untyped-def]
    index, _, _ = adapted
    copy = tmp_path / "index"
    shutil.copytree(index, copy)
    (copy / "adapted" / "model" / "model.safetensors").write_bytes(b"not a model")
    with caplog.at_level(logging.WARNING):
        res = run_aula("search", "qual a derivada do seno?", "-k", "2", "--json",
                       AULA_INDEX_DIR=str(copy), AULA_RERANK="adapted")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)[0]["lecture_id"] == "derivadas"
    warned = [r for r in caplog.records if "adapted model" in r.getMessage()]
    assert len(warned) == 1 and "aula adapt" in warned[0].getMessage()


def test_too_few_questions_is_one_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    index = tmp_path / "index"
    assert run("ingest", str(SAMPLES), index=index).returncode == 0
    with FakeLLMServer(responder=lambda m: "Não sei.") as llm:
        res = run("adapt", "--questions", "12", index=index, llm=llm)
    assert res.returncode != 0
    assert "0 generated questions" in res.stderr and "--questions" in res.stderr
    assert len((index / "adapted" / "questions.jsonl").read_text().splitlines()) == 12


def test_questions_written_on_ray_workers(tmp_path) -> None:  # type: ignore[no-untyped-def]
    index = tmp_path / "index"
    assert run("ingest", str(SAMPLES), index=index).returncode == 0
    try:
        with FakeLLMServer(responder=student_question) as llm:
            res = run("adapt", "--questions", "6", "--no-train", "--ray", "local",
                      "--ray-workers", "2", "--json", index=index, llm=llm)
    finally:
        import ray

        ray.shutdown()
    assert res.returncode == 0, res.stderr
    assert len(llm.chat_requests) == 6
    rows = [json.loads(x) for x in (index / "adapted" / "questions.jsonl").read_text().splitlines()]
    assert len({r["key"] for r in rows}) == 6
    assert all(r["question"].startswith("o que a aula fala sobre") for r in rows)


def test_the_adapted_gate_reads_the_course_from_the_adapted_model(adapted, tmp_path
                                                                  ) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    from app.config import Settings
    from app.services import embedder_from_settings, retriever_for
    from corpus.index import IndexStore

    index, _, _ = adapted
    copy = tmp_path / "index"
    shutil.copytree(index, copy)
    data = IndexStore(copy).load()
    vectors = copy / "adapted" / "unit_vectors.npz"
    with np.load(vectors) as kept:  # read once by `aula adapt`
        first = kept["vectors"]
    assert first.shape[0] == len(data.units)
    written = vectors.stat().st_mtime_ns
    settings = Settings(index_dir=copy, gate_file="adapted")
    retriever = retriever_for(settings, data, embedder_from_settings(settings))
    assert retriever.adapted is not None and vectors.stat().st_mtime_ns == written  # reused
    # unset, the gate is the adapted one wherever the index has an adapted model
    auto = retriever_for(Settings(index_dir=copy), data, embedder_from_settings(settings))
    assert auto.adapted is not None
    covered = retriever.adapted("qual a derivada do seno?")
    elsewhere = retriever.adapted("qual a capital da Mongólia?")
    assert covered["adapted_top"] > elsewhere["adapted_top"]
    assert covered["adapted_z"] > elsewhere["adapted_z"] > 0
    # another index version (its first unit gone, another changed): the kept units' vectors
    # are reused, only the changed one is read, and the stored ones follow the new version
    units = data.units.iloc[1:].reset_index(drop=True)
    units.loc[0, ["text", "text_hash"]] = ["a derivada do seno é o cosseno", "changed"]
    again = retriever_for(settings, replace_units(data, units), embedder_from_settings(settings))
    assert again.adapted is not None
    with np.load(vectors) as kept:
        assert kept["vectors"].shape[0] == len(units) and kept["text_hash"][0] == "changed"
        assert np.allclose(kept["vectors"][1:], first[2:])
        assert not np.allclose(kept["vectors"][0], first[1])


def replace_units(data, units):  # type: ignore[no-untyped-def]
    from dataclasses import replace

    return replace(data, units=units, unit_vectors=None)


def test_an_answer_over_an_adapted_index_is_decided_by_the_adapted_gate(adapted, caplog
                                                                      ) -> None:  # type: ignore[no-untyped-def]
    index, _, _ = adapted
    with FakeLLMServer() as llm, caplog.at_level(logging.WARNING):
        res = run_aula("ask", "qual a derivada do seno?", "--json", AULA_INDEX_DIR=str(index),
                       AULA_LLM_BASE_URL=llm.base_url)
    assert res.returncode == 0, res.stderr
    reply = json.loads(res.stdout)
    # the service's gate read the adapted model's z-score: it did not fall back to the default
    assert "adapted_z=" in reply["reason"], reply["reason"]
    assert not [r for r in caplog.records if "course-adapted" in r.getMessage()]


def test_the_adapted_gate_without_an_adapted_model_gives_way_to_the_default(
        tmp_path, caplog) -> None:  # type: ignore[no-untyped-def]
    index = tmp_path / "index"
    assert run("ingest", str(SAMPLES), index=index).returncode == 0
    with FakeLLMServer() as llm, caplog.at_level(logging.WARNING):
        res = run_aula("ask", "o que é sobreajuste?", "--json", AULA_INDEX_DIR=str(index),
                       AULA_GATE_FILE="adapted", AULA_LLM_BASE_URL=llm.base_url)
    assert res.returncode == 0, res.stderr
    reply = json.loads(res.stdout)
    assert reply["covered"] and "P(covered)" in reply["reason"]
    warned = [r.getMessage() for r in caplog.records if "course-adapted" in r.getMessage()]
    assert len(warned) == 1 and "aula adapt" in warned[0]


def test_adapt_from_the_passages_sentences_asks_no_llm(tmp_path) -> None:  # type: ignore[no-untyped-def]
    index = tmp_path / "index"
    assert run("ingest", str(SAMPLES), index=index).returncode == 0
    mixed = run("adapt", "--from-sentences", "--ray", "local", index=index)
    assert mixed.returncode == 1 and "--ray" in mixed.stderr
    with FakeLLMServer(responder=student_question) as llm:
        res = run("adapt", "--from-sentences", "--questions", "16", "--json", index=index,
                  llm=llm)
        assert res.returncode == 0, res.stderr
        assert llm.chat_requests == []
    out = json.loads(res.stdout)
    assert out["from_sentences"] is True and out["questions"] >= 10
    manifest = json.loads((index / "adapted" / "model" / "adapted.json").read_text())
    assert manifest["questions_from"] == ["passage sentence"]
    assert manifest["trained_on"] + manifest["held_out"] == manifest["kept"] >= 10
    assert not (index / "adapted" / "questions.jsonl").exists()
    # search reranks with it, and the units' vectors the adapted gate reads are written
    from app.config import Settings
    from app.services import embedder_from_settings, retriever_for
    from corpus.index import IndexStore

    settings = Settings(index_dir=index, rerank="adapted")
    retriever = retriever_for(settings, IndexStore(index).load(),
                              embedder_from_settings(settings))
    assert retriever.reranker is not None and retriever.reranker.name.startswith("adapted:")
    assert retriever.search_timed("qual a derivada do seno?", k=3).hits[0].lecture_id == (
        "derivadas")
    assert (index / "adapted" / "unit_vectors.npz").exists()


def test_ingest_adapts_a_course_large_enough_and_only_once(tmp_path, monkeypatch
                                                            ) -> None:  # type: ignore[no-untyped-def]
    index = tmp_path / "index"
    # the sample lectures are fewer passages than a course needs: the default gate decides
    res = run("ingest", str(SAMPLES), "--json", index=index)
    assert res.returncode == 0, res.stderr
    said = json.loads(res.stdout)["adaptation"]
    assert said["adapted"] is False and "fewer than" in said["why"]
    assert not (index / "adapted" / "model").exists()
    # a course of enough passages (here: the bar lowered to the samples' size) gets a model
    # from its own sentences, and the adapted gate reads it
    monkeypatch.setattr("app.adapting.MIN_PASSAGES", 1)
    with FakeLLMServer(responder=student_question) as llm:
        res = run("ingest", str(SAMPLES), index=index, llm=llm)
        assert res.returncode == 0, res.stderr
        assert llm.chat_requests == []
    assert "adapted model:" in res.stderr
    model = index / "adapted" / "model"
    manifest = json.loads((model / "adapted.json").read_text())
    assert manifest["questions_from"] == ["passage sentence"]
    assert (index / "adapted" / "unit_vectors.npz").exists()
    with FakeLLMServer() as llm:
        res = run_aula("ask", "qual a derivada do seno?", "--json", AULA_INDEX_DIR=str(index),
                       AULA_LLM_BASE_URL=llm.base_url)
    assert res.returncode == 0, res.stderr
    assert "adapted_z=" in json.loads(res.stdout)["reason"]
    # ingesting again keeps the model it has
    written = manifest["written"]
    res = run("ingest", str(SAMPLES / "derivadas"), "--json", index=index)
    assert json.loads(res.stdout)["adaptation"]["why"] == "the index already has an adapted model"
    assert json.loads((model / "adapted.json").read_text())["written"] == written
    # --no-adapt trains nothing and says nothing of it
    other = tmp_path / "other"
    res = run("ingest", str(SAMPLES), "--no-adapt", "--json", index=other)
    assert "adaptation" not in json.loads(res.stdout)
    assert not (other / "adapted").exists()
