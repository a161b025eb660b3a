"""One judging pipeline: the service's background judge labels an answer exactly as `aula judge`
does, with the thresholds the settings name, keeps what it measured as data, and still labels
when the judge endpoint gives no logprobs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from app.config import Settings
from app.db import store
from app.db.session import Database
from app.judging import judge_pipeline
from app.llm import LLMClient
from app.recorder import judge_answer
from tests.app.fake_llm import FakeLLMServer
from tests.conftest import ROOT
from tests.review.conftest import Site, judge_or_answer, seed
from tests.review.test_api import wait_for

CONTEXTS = ["A ReLU zera os valores negativos e deixa os positivos como estão."]
ANSWER = "A ReLU devolve o máximo entre zero e a entrada [1]."


def test_the_service_and_aula_judge_label_an_answer_alike(site: Site, tmp_path: Path) -> None:
    question = "Pra que serve a ReLU numa rede?"
    r = httpx.post(site.url + "/ask", json={"question": question, "k": 3}, timeout=60)
    assert r.status_code == 200

    def judged() -> dict | None:
        with site.db.read() as s:
            rows, _ = store.queue(s, limit=1000)
            mine = [x for x in rows if x["question"] == question]
            it = store.get_item(s, mine[-1]["id"]) if mine else None
        return it if it and it["judged_at"] else None

    it = wait_for(judged)
    signals = it["judge_signals"]
    assert signals["ar_score"] == it["ar_score"] == 2
    assert signals["claim_p"] and all(0.0 <= p <= 1.0 for p in signals["claim_p"])
    assert signals["thresholds"]["support_at"] == pytest.approx(0.85)

    # The batch judge, on the same answer (the service's, as `aula review export` marks it)
    # and the segments the service judged it against.
    row = {"id": "q1", "question_id": "x1", "question": question, "answer": it["answer"],
           "contexts": [seg["text"] for seg in it["segments"]], "label": "I", "origin": "aula"}
    file = tmp_path / "answers.jsonl"
    file.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "AULA_LLM_BASE_URL": site.llm.base_url,
           "AULA_LLM_MODEL": "fake-model", "AULA_INDEX_DIR": str(site.settings.index.dir)}
    res = subprocess.run([sys.executable, "-m", "app.cli", "judge", str(file), "--json"],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    [batch] = out["items"]
    assert (batch["automated"], batch["ar_score"]) == (it["automated"], it["ar_score"])
    assert batch["origin"] == signals["origin"] == "aula"
    assert batch["correctness_claim_p"] == pytest.approx(signals["claim_p"])
    assert out["summary"]["accuracy"] == 1.0 and out["summary"]["n"] == 1


def test_the_background_judge_labels_with_the_configured_thresholds(db: Database,
                                                                    tmp_path: Path) -> None:
    lenient = tmp_path / "thresholds.json"  # as `aula fit-labels` writes them
    lenient.write_text(json.dumps({"c_hi": 0, "a_min": 0, "c_lo": -1, "a_lo": -1,
                                   "support_at": 0.85}))
    [answer_id] = seed(db, 1)
    with FakeLLMServer(judge_or_answer) as llm:
        client = LLMClient(llm.base_url, model="fake-model")
        default = judge_answer(db, judge_pipeline(Settings(), client), answer_id,
                               "O que a ReLU faz?", ANSWER, CONTEXTS)
        assert default["automated"] == "I"  # the fake claim checker confirms nothing
        fitted = judge_answer(db, judge_pipeline(Settings(label_thresholds=lenient), client),
                              answer_id, "O que a ReLU faz?", ANSWER, CONTEXTS)
    assert fitted["automated"] == "C"
    with db.read() as s:
        it = store.get_item(s, answer_id)
    assert it["automated"] == "C" and it["judge_model"] == "fake-model"
    assert it["judge_signals"]["thresholds"]["c_hi"] == 0


def test_a_judge_without_logprobs_still_labels(db: Database) -> None:
    [answer_id] = seed(db, 1)
    with FakeLLMServer(judge_or_answer) as llm:
        llm.logprobs = False
        client = LLMClient(llm.base_url, model="fake-model")
        item = judge_answer(db, judge_pipeline(Settings(), client), answer_id,
                            "O que a ReLU faz?", ANSWER, CONTEXTS)
    assert item["automated"] == "I" and item["ar_score"] == 2
    with db.read() as s:
        assert store.get_item(s, answer_id)["automated"] == "I"


def test_the_background_judge_labels_with_a_fitted_label_model(db: Database,
                                                               tmp_path: Path) -> None:
    from eval.label_model import LabelModel, Submodel
    from eval.run import relabel

    def model_file(judge_model: str) -> Path:
        # a label model on AR alone, as `aula fit-labels` stores it beside the thresholds
        model = LabelModel(models=(Submodel(
            features=("ar",), mean=(0.5,), scale=(0.25,), coef=((2.0,), (0.0,), (-2.0,)),
            intercept=(-1.5, 1.0, -1.5), classes=("C", "PC", "I")),), judge_model=judge_model)
        path = tmp_path / f"labels-{judge_model}.json"
        path.write_text(json.dumps({"support_at": 0.85, "fitted_items": 60,
                                    "label_model": model.to_dict()}))
        return path

    [answer_id] = seed(db, 1)
    with FakeLLMServer(judge_or_answer) as llm:
        client = LLMClient(llm.base_url, model="fake-model")
        fitted = judge_answer(db, judge_pipeline(Settings(label_thresholds=model_file(
            "fake-model")), client), answer_id, "O que a ReLU faz?", ANSWER, CONTEXTS)
        with db.read() as s:  # the model's probability for its label, stored for the page
            sure = store.get_item(s, answer_id)["judge_signals"]["label_confidence"]
        other = judge_answer(db, judge_pipeline(Settings(label_thresholds=model_file(
            "another-model")), client), answer_id, "O que a ReLU faz?", ANSWER, CONTEXTS)
    # AR 2 of 3 reads PC in the model; the thresholds say I (no claim confirmed)
    assert fitted["automated"] == "PC" and fitted["ar_score"] == 2
    # a model fitted on another judge's probabilities is not applied to this one's
    assert other["automated"] == "I"
    with db.read() as s:
        it = store.get_item(s, answer_id)
    assert it["judge_signals"]["label_by"] == "thresholds"  # the last judge: `other`
    assert fitted["label_by"] == "model"
    # P(PC) of the model above at AR 2/3: e^1 / (e^1 + e^(-1/6) + e^(-17/6))
    assert sure == fitted["automated_confidence"] == pytest.approx(0.750, abs=0.001)
    assert it["judge_signals"]["label_confidence"] is None  # the thresholds have none
    # relabelling a batch run's item with the same file gives the service's label
    from app.judging import load_label_model, load_thresholds

    path = model_file("fake-model")
    [batch] = relabel([{**other, "automated": None}], load_thresholds(path),
                      load_label_model(path))
    assert batch["automated"] == fitted["automated"]
