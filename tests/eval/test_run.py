"""Resuming a batch run from its item log: finished work is never lost or judged again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from eval.run import ITEMS, ItemLogError, Pipeline, run_batch
from tests.conftest import ROOT


def item(qid: str) -> str:
    return json.dumps({"id": qid, "question": f"pergunta {qid}", "answer": "resposta",
                       "ar_score": 3, "ar": 1.0, "automated": "C"}) + "\n"


def questions(*ids: str) -> pd.DataFrame:
    return pd.DataFrame([{"id": i, "question": f"pergunta {i}", "answer": "resposta",
                          "contexts": ["um trecho"]} for i in ids])


class CountingJudge:
    """Gives every answer 3 and counts the questions it judged."""

    def __init__(self) -> None:
        self.judged: list[str] = []

    def __call__(self, messages: list[dict[str, str]]) -> str:
        self.judged.append(messages[-1]["content"])
        return "Criteria: ok. Supporting Evidence: ok. Score: 3"


def run(out: Path, judge: CountingJudge, *ids: str) -> list[dict]:
    return run_batch(questions(*ids), Pipeline(judge=judge, correctness=False), out,
                     progress=False)


def test_a_bad_line_before_finished_items_is_an_error_that_changes_nothing(
    tmp_path: Path,
) -> None:
    log = tmp_path / ITEMS
    text = item("q1") + '{"id": "q2", "quest\n' + item("q3") + item("q4")
    log.write_text(text)
    judge = CountingJudge()
    with pytest.raises(ItemLogError) as err:
        run(tmp_path, judge, "q1", "q2", "q3", "q4")
    assert str(log) in str(err.value) and "line 2" in str(err.value)
    assert judge.judged == []  # q3 and q4 are not judged again
    assert log.read_text() == text  # nor dropped from the log


def test_only_a_line_cut_short_at_the_end_is_dropped(tmp_path: Path) -> None:
    log = tmp_path / ITEMS
    log.write_text(item("q1") + item("q3") + '{"id": "q2", "quest')
    judge = CountingJudge()
    items = run(tmp_path, judge, "q1", "q2", "q3")
    assert [i["id"] for i in items] == ["q1", "q2", "q3"]
    assert len(judge.judged) == 1 and "pergunta q2" in judge.judged[0]
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert sorted(x["id"] for x in lines) == ["q1", "q2", "q3"]


def test_a_whole_last_item_without_its_newline_is_kept(tmp_path: Path) -> None:
    log = tmp_path / ITEMS
    log.write_text(item("q1") + item("q2").rstrip("\n"))
    judge = CountingJudge()
    run(tmp_path, judge, "q1", "q2", "q3")
    assert len(judge.judged) == 1 and "pergunta q3" in judge.judged[0]
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["id"] for x in lines] == ["q1", "q2", "q3"]


def test_report_of_a_damaged_log_fails_with_one_line_naming_it(tmp_path: Path) -> None:
    log = tmp_path / ITEMS
    log.write_text(item("q1") + "não é JSON\n" + item("q3"))
    proc = subprocess.run([sys.executable, "-m", "app.cli", "report", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{log}: line 2" in lines[0], proc.stderr


def test_a_given_answer_is_checked_against_the_passages_its_own_claims_find() -> None:
    from corpus.models import Hit
    from eval.run import evaluate_item

    def hit(lecture: str, start: float, text: str) -> Hit:
        return Hit(corpus_id=int(start), score=1.0, lecture_id=lecture, title=lecture, url="",
                   start=start, end=start + 120, text=text)

    near_question = [hit("redes", 0.0, "Hoje falamos de redes neurais e camadas."),
                     hit("redes", 90.0, "Uma rede tem camadas de neurônios."),
                     hit("redes", 180.0, "Vamos ao exercício.")]
    about_relu = hit("ativacao", 300.0, "A ReLU devolve zero para entradas negativas.")

    def search(text: str, k: int) -> list[Hit]:
        return [about_relu][:k] if "ReLU" in text else near_question[:k]

    read: list[str] = []

    def verify(messages):  # type: ignore[no-untyped-def]
        read.append(messages[-1]["content"])
        return "SIM", {"SIM": 0.9, "NÃO": 0.1}

    p = Pipeline(judge=CountingJudge(), verify=verify, search=search, k=3)
    row = {"id": "a1", "question": "O que faz uma rede neural?",
           "answer": "A ReLU devolve zero para entradas negativas, o que ajuda a rede."}
    out = evaluate_item(row, p)
    claim_checks = [u for u in read if "AFIRMAÇÃO" in u]
    assert claim_checks and all("A ReLU devolve zero" in u.split("AFIRMAÇÃO")[0]
                                for u in claim_checks)
    # the segments listed for the record are still the question's
    assert [s["start"] for s in out["segments"]] == [0.0, 90.0, 180.0]
    # the third window near the question (not among its best two) is not read
    assert not any("Vamos ao exercício" in u for u in claim_checks)


def test_an_answer_the_pipeline_wrote_is_labelled_as_the_services_own() -> None:
    from types import SimpleNamespace

    from eval.label_model import LabelModel, Submodel
    from eval.run import evaluate_item

    def on_ar(aula_only: bool, label: str) -> Submodel:
        # a submodel on AR alone that says ``label`` whatever AR is
        classes = ("C", "PC", "I")
        return Submodel(features=("ar",), mean=(0.5,), scale=(1.0,),
                        coef=((0.0,), (0.0,), (0.0,)),
                        intercept=tuple(5.0 if c == label else 0.0 for c in classes),
                        classes=classes, aula_only=aula_only)

    model = LabelModel(models=(on_ar(True, "PC"), on_ar(False, "C")))
    answered = SimpleNamespace(text="A ReLU zera os negativos [1].", citations=[])
    p = Pipeline(judge=CountingJudge(), correctness=False, label_model=model,
                 answer=lambda question, hits: answered, search=lambda text, k: [])
    mine = evaluate_item({"id": "a", "question": "O que a ReLU faz?"}, p)
    given = evaluate_item({"id": "b", "question": "O que a ReLU faz?",
                           "answer": "A ReLU zera os negativos.", "contexts": ["trecho"]}, p)
    assert (mine["origin"], mine["automated"], mine["label_by"]) == ("aula", "PC", "model")
    assert (given["origin"], given["automated"]) == (None, "C")
    # a judged file may say a given answer is the service's (`aula review export` does)
    marked = evaluate_item({"id": "c", "question": "O que a ReLU faz?", "origin": "aula",
                            "answer": "A ReLU zera os negativos.", "contexts": ["trecho"]}, p)
    assert marked["automated"] == "PC"


def test_an_answer_with_a_gold_span_is_read_against_what_the_lecture_says_there() -> None:
    """No reference answer, only where the lecture answers: a right answer says the span's
    words, a wrong one brings words of its own, and one in another language gets neither."""
    from eval.run import evaluate_item

    lecture = ("Uma transformação linear mantém as retas como retas e a origem fixa. As linhas "
               "da grade continuam paralelas e igualmente espaçadas depois da transformação.")
    asked: list[tuple[str, float, float]] = []

    def span_text(lecture_id: str, start: float, end: float) -> str:
        asked.append((lecture_id, start, end))
        return lecture

    p = Pipeline(judge=CountingJudge(), correctness=False, span_text=span_text)
    gold = {"question": "o que faz uma transformação ser linear?",
            "gold_lecture": "2016/linear-transformations", "gold_start": 60.0, "gold_end": 150.0}
    right = evaluate_item({**gold, "id": "r", "answer": "Ela mantém as retas como retas e a "
                           "origem fixa: a grade continua paralela e igualmente espaçada."}, p)
    wrong = evaluate_item({**gold, "id": "w", "answer": "Ela precisa ter determinante "
                           "positivo e multiplicar cada vetor por um número inteiro."}, p)
    english = evaluate_item({**gold, "id": "e", "answer": "It keeps lines straight and the "
                             "origin fixed, so the grid stays parallel and evenly spaced."}, p)
    assert asked[0] == ("2016/linear-transformations", 60.0, 150.0)
    assert right["evidence_novelty"] < wrong["evidence_novelty"]
    assert right["evidence_recall"] > wrong["evidence_recall"]
    assert english["evidence_novelty"] is None and english["evidence_recall"] is None
    # without a gold span there is nothing to read them against
    plain = evaluate_item({"id": "p", "question": gold["question"], "answer": right["answer"],
                           "contexts": [lecture]}, p)
    assert "evidence_novelty" not in plain


def test_an_answer_whose_item_names_only_its_lecture_is_checked_against_that_lecture() -> None:
    """A set that says which lecture answers but not the minute: the claims are checked against
    that lecture's passages, not those of another lecture that shares the question's words."""
    from corpus.models import Hit
    from eval.run import evaluate_item

    def hit(lecture: str, start: float, text: str) -> Hit:
        return Hit(corpus_id=int(start), score=1.0, lecture_id=lecture, title=lecture, url="",
                   start=start, end=start + 120, text=text)

    passages = [hit("derivadas-2", 0.0, "A derivada de x ao cubo é x ao quadrado."),
                hit("derivadas", 300.0, "A derivada de x ao cubo é três x ao quadrado.")]
    searched: list[list[str] | None] = []

    def search_in(text: str, k: int, lectures: list[str] | None = None) -> list[Hit]:
        searched.append(lectures)
        return [h for h in passages if lectures is None or h.lecture_id in lectures][:k]

    read: list[str] = []

    def verify(messages):  # type: ignore[no-untyped-def]
        read.append(messages[-1]["content"])
        return "SIM", {"SIM": 0.9, "NÃO": 0.1}

    p = Pipeline(judge=CountingJudge(), verify=verify, search=lambda t, k: search_in(t, k),
                 search_in=search_in, k=2)
    row = {"id": "c", "question": "qual a derivada de x ao cubo?", "gold_lecture": "derivadas",
           "answer": "É três x ao quadrado."}
    evaluate_item(row, p)
    claims = [u for u in read if "AFIRMAÇÃO" in u]
    assert claims and all("três x ao quadrado" in u.split("AFIRMAÇÃO")[0] for u in claims)
    assert not any("x ao cubo é x ao quadrado" in u for u in claims)
    assert searched and all(s == ["derivadas"] for s in searched)
    # an item that names no lecture is searched over every lecture, as before
    searched.clear()
    evaluate_item({k: v for k, v in row.items() if k != "gold_lecture"}, p)
    assert searched and all(s is None for s in searched)
    # and so is one naming a lecture the index does not hold (`aula judge` says so)
    read.clear()
    evaluate_item({**row, "gold_lecture": "integrais"}, p)
    assert any("três x ao quadrado" in u for u in read if "AFIRMAÇÃO" in u)


class _Terminal:
    """stderr as a terminal that keeps what is written to it."""

    def __init__(self) -> None:
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, s: str) -> int:
        self.text += s
        return len(s)

    def flush(self) -> None:
        pass


def test_judging_many_answers_shows_its_rate_a_minute_in_a_terminal_and_keeps_their_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from eval.run import judge_rows

    def judge(messages: list[dict[str, str]]) -> str:
        return "Criteria: ok\nSupporting Evidence: ok\nScore: 3"

    rows = [{"id": f"a{i}", "question": f"pergunta {i}?", "answer": f"resposta {i}."}
            for i in range(6)]
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    items = judge_rows(rows, Pipeline(judge=judge, correctness=False), concurrency=3)
    assert [it["id"] for it in items] == [r["id"] for r in rows]
    assert "6/6" in terminal.text and "/min" in terminal.text
    # not a terminal (a log, a pipe): no bar
    monkeypatch.setattr(sys, "stderr", _Terminal())
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    judge_rows(rows[:1], Pipeline(judge=judge, correctness=False))
    assert sys.stderr.text == ""


def test_an_answer_labelled_from_its_words_gets_no_llm_judgement_unless_asked() -> None:
    """With a reference answer the label model reads the answer's words (no LLM): the judge's
    chain of thought and claim check are skipped; ``reasoning`` asks for them anyway (here the
    same submodel labels both ways), and an answer without a reference, or written by this
    service, still gets them."""
    from eval.label_model import LabelModel, Submodel
    from eval.run import evaluate_item

    classes = ("C", "PC", "I")
    by_novelty = Submodel(features=("reference_novelty",), mean=(0.3,), scale=(0.1,),
                          coef=((-3.0,), (0.0,), (3.0,)), intercept=(0.0, 1.0, 0.0),
                          classes=classes)
    by_ar = Submodel(features=("ar",), mean=(0.5,), scale=(0.2,), coef=((2.0,), (0.0,), (-2.0,)),
                     intercept=(0.0, 0.0, 0.0), classes=classes)
    model = LabelModel(models=(by_novelty, by_ar))
    checked: list[str] = []

    def verify(messages):  # type: ignore[no-untyped-def]
        checked.append(messages[-1]["content"])
        return "SIM", {"SIM": 0.9, "NÃO": 0.1}

    row = {"id": "r", "question": "O que a ReLU faz com entradas negativas?",
           "reference_answer": "A ReLU devolve zero para entradas negativas.",
           "contexts": ["A ReLU devolve zero para entradas negativas e repete as positivas."]}
    right = {**row, "answer": "Ela devolve zero para entradas negativas."}
    wrong = {**row, "answer": "Ela multiplica as entradas negativas por um fator aleatório "
                              "escolhido durante o treino."}
    judge = CountingJudge()
    quick = Pipeline(judge=judge, verify=verify, label_model=model, reasoning=False)
    fast = [evaluate_item(r, quick) for r in (right, wrong)]
    assert [it["automated"] for it in fast] == ["C", "I"]
    assert judge.judged == [] and checked == []
    assert all(it["ar_score"] is None and it["automated_confidence"] > 0.5 for it in fast)

    full = Pipeline(judge=judge, verify=verify, label_model=model)
    slow = [evaluate_item(r, full) for r in (right, wrong)]
    assert [it["automated"] for it in slow] == ["C", "I"]
    assert [it["automated_confidence"] for it in slow] == \
        [it["automated_confidence"] for it in fast]
    assert all(it["ar_score"] == 3 and it["ar_reasoning"] for it in slow)
    assert len(judge.judged) == 2 and checked

    judge.judged.clear()
    bare = evaluate_item({k: v for k, v in right.items() if k != "reference_answer"}, quick)
    assert len(judge.judged) == 1 and bare["ar_score"] == 3 and bare["automated"] == "C"

    # this service's own answer is always read with the LLM, reference or not
    judge.judged.clear()
    own = evaluate_item({**right, "origin": "aula"}, quick)
    assert len(judge.judged) == 1 and own["ar_score"] == 3
