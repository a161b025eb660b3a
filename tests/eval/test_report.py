"""The run summary: numbers, Markdown, a self-contained HTML page, rows on disk."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from corpus.models import Hit
from eval.record import Record, parse_records
from eval.report import (
    calibration,
    summarise,
    summary_html,
    summary_markdown,
    trust_lines,
    write_records,
    write_rows,
    write_summary,
)


@pytest.fixture()
def rows() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "id": "1",
                "question": "q1",
                "answer": "a1",
                "manual": "C",
                "ar_score": 3,
                "ar": 1.0,
                "correctness_score": 3,
                "correctness": 1.0,
                "automated": "C",
                "ar_only": "C",
                "gold_lecture": "aula-1",
                "gold_start": 10.0,
                "gold_end": 20.0,
                "hit_rank": 1,
                "contexts": ["s1", "s2"],
            },
            {
                "id": "2",
                "question": "q2",
                "answer": "a2",
                "manual": "PC",
                "ar_score": 3,
                "ar": 1.0,
                "correctness_score": 1,
                "correctness": 1 / 3,
                "automated": "PC",
                "ar_only": "C",
                "gold_lecture": "aula-1",
                "gold_start": 30.0,
                "gold_end": 40.0,
                "hit_rank": None,
                "contexts": ["s3"],
            },
            {
                "id": "3",
                "question": "q3 <b>",
                "answer": "a3",
                "manual": "I",
                "ar_score": 0,
                "ar": 0.0,
                "correctness_score": 0,
                "correctness": 0.0,
                "automated": "I",
                "ar_only": "I",
                "gold_lecture": None,
                "gold_start": None,
                "gold_end": None,
                "hit_rank": None,
                "contexts": None,
            },
            {
                "id": "4",
                "question": "q4",
                "answer": "a4",
                "manual": "C",
                "ar_score": None,
                "ar": None,
                "ar_error": "no score found",
                "correctness_score": None,
                "correctness": None,
                "automated": None,
                "ar_only": None,
                "gold_lecture": "aula-2",
                "gold_start": 0.0,
                "gold_end": 5.0,
                "hit_rank": 3,
                "contexts": None,
            },
        ]
    )


def test_summarise_counts_agreement_and_missing(rows: pd.DataFrame) -> None:
    summary = summarise(rows)
    assert summary["n"] == 4 and summary["n_manual"] == 4
    assert summary["missing"]["ar_score"] == 1
    assert summary["missing"]["automated"] == 1
    assert summary["ar_mean"] == pytest.approx(2 / 3)  # the unreadable AR is left out, not 0
    auto = summary["agreement"]["automated"]
    assert (auto["n"], auto["missing"], auto["accuracy"]) == (3, 1, 1.0)
    assert auto["kappa"] == pytest.approx(1.0)
    ar_only = summary["agreement"]["ar_only"]
    assert ar_only["accuracy"] == pytest.approx(2 / 3)
    assert summary["confusion"]["ar_only"]["PC"] == {"C": 1, "PC": 0, "I": 0}
    assert summary["ar_by_class"]["C"] == {"count": 1, "mean": 1.0, "median": 1.0}
    assert summary["retrieval"]["n"] == 3
    assert summary["retrieval"]["hit@1"] == pytest.approx(1 / 3)
    assert summary["retrieval"]["hit@3"] == pytest.approx(2 / 3)
    assert summary["retrieval"]["mrr"] == pytest.approx((1 + 1 / 3) / 3)
    json.dumps(summary, allow_nan=False)  # JSON-ready: no NaN anywhere


def test_answers_judged_without_a_search_give_no_retrieval_figures(rows: pd.DataFrame
                                                                    ) -> None:
    # given answers judged against their gold span: nothing was searched, nothing was missed
    given = rows.assign(hit_rank=None, retrieved=False)
    assert summarise(given)["retrieval"] is None
    assert "Recuperação" not in summary_markdown(given, summarise(given))
    some = rows.assign(retrieved=[True, True, False, False])  # two searched: found 1st, missed
    assert summarise(some)["retrieval"]["n"] == 2
    assert summarise(some)["retrieval"]["hit@1"] == pytest.approx(1 / 2)


def test_summarise_derives_ar_only_and_handles_no_gold(rows: pd.DataFrame) -> None:
    bare = rows.drop(columns=["ar_only", "ar", "gold_lecture", "hit_rank"])
    summary = summarise(bare)
    assert summary["agreement"]["ar_only"]["accuracy"] == pytest.approx(2 / 3)
    assert summary["ar_mean"] == pytest.approx(2 / 3)
    assert summary["retrieval"] is None


def test_summarise_empty_run_has_no_nan() -> None:
    summary = summarise(pd.DataFrame({"id": [], "question": []}))
    assert summary["n"] == 0 and summary["ar_mean"] is None
    assert summary["agreement"]["automated"]["accuracy"] is None
    json.dumps(summary, allow_nan=False)
    assert "<img" in summary_html(pd.DataFrame({"id": [], "question": []}), summary)


def test_markdown_has_agreement_table(rows: pd.DataFrame) -> None:
    text = summary_markdown(rows, summarise(rows))
    assert "| Rótulo | n | missing | accuracy | kappa | kappa_linear |" in text
    assert "| Anotação automatizada | 3 | 1 | 1.000 | 1.000 | 1.000 | 1.00–1.00 |" in text
    assert "| classe | manual (n) | precisão | revocação |" in text
    assert "hit@3" in text


def test_html_is_self_contained(rows: pd.DataFrame) -> None:
    page = summary_html(rows, summarise(rows))
    assert page.count('<img alt="') == 3
    assert '<img alt="Matriz de confusão: anotação automatizada" src="data:image/png;base64,' in (
        page
    )
    assert '<table class="agreement">' in page
    assert "<style>" in page and "<link" not in page and "<script" not in page
    assert "q3 &lt;b&gt;" in page  # question text is escaped


def test_files_are_written_atomically(rows: pd.DataFrame, tmp_path: Path) -> None:
    out = tmp_path / "run"
    paths = write_rows(rows, out) + write_summary(rows, summarise(rows), out)
    assert (
        sorted(p.name for p in out.iterdir())
        == sorted(p.name for p in paths)
        == ["rows.csv", "rows.parquet", "summary.html", "summary.json", "summary.md"]
    )
    back = pd.read_parquet(out / "rows.parquet")
    assert back["id"].tolist() == ["1", "2", "3", "4"]
    assert json.loads(back.loc[0, "contexts"]) == ["s1", "s2"]
    assert math.isnan(back.loc[3, "ar_score"])
    csv = pd.read_csv(out / "rows.csv")
    assert csv["manual"].tolist() == ["C", "PC", "I", "C"]
    assert json.loads((out / "summary.json").read_text())["n"] == 4


def test_write_records_round_trips(tmp_path: Path) -> None:
    hit = Hit(1, 0.9, "aula-1", "Aula 1", "https://x/1", 0.0, 60.0, "texto")
    records = [Record(qid=str(i), question=f"q{i}", segments=[hit], answer="a") for i in (1, 2)]
    path = write_records(records, tmp_path / "report.md", hide_urls=True)
    parsed = parse_records(path.read_text(encoding="utf-8"))
    assert [r.qid for r in parsed] == ["1", "2"]
    assert parsed[0].segments[0].url == ""


def _confidence_run() -> pd.DataFrame:
    """Eight labelled answers: the four the label model was sure of are right, the four it
    hesitated on are wrong; two more without a manual label, one of them the least sure."""
    sure = [("a1", "C", "C", 0.93), ("a2", "I", "I", 0.88), ("a3", "PC", "PC", 0.81),
            ("a4", "C", "C", 0.77)]
    unsure = [("a5", "C", "PC", 0.52), ("a6", "I", "PC", 0.47), ("a7", "PC", "C", 0.44),
              ("a8", "PC", "I", 0.41)]
    bare = [("b1", None, "PC", 0.36), ("b2", None, "C", 0.95)]
    return pd.DataFrame([{"id": i, "question": f"q {i}", "manual": m, "automated": a,
                          "automated_confidence": c, "ar_score": 3}
                         for i, m, a, c in [*sure, *unsure, *bare]])


def test_the_report_says_which_automated_labels_to_trust_and_which_to_check_first() -> None:
    run = _confidence_run()
    conf = summarise(run)["by_confidence"]
    assert conf["confident"]["n"] == 4 and conf["confident"]["accuracy"] == 1.0
    assert conf["unsure"]["n"] == 4 and conf["unsure"]["accuracy"] == 0.0
    assert conf["confident"]["confidence_min"] == 0.77 and conf["unsure"]["confidence_max"] == 0.52
    # the least confident first, labelled by an instructor or not
    assert [x["id"] for x in conf["check_first"][:3]] == ["b1", "a8", "a7"]
    text = summary_markdown(run, summarise(run))
    assert "| Metade mais confiante | 4 | 0.77–0.93 | 1.000 |" in text
    assert "| Metade menos confiante | 4 | 0.41–0.52 | 0.000 |" in text
    assert "b1 (PC, 0.36), a8 (I, 0.41)" in text
    assert '<table class="confidence">' in summary_html(run, summarise(run))


def test_the_report_says_whether_the_confidence_can_be_read_as_a_rate() -> None:
    # an overconfident model: "90%" labels right half the time; an honest one says 50%
    over = calibration([0.9] * 10, [True, False] * 5)
    honest = calibration([0.5] * 10, [True, False] * 5)
    assert over["ece"] == 0.4 and honest["ece"] == 0.0
    assert over["brier"] > honest["brier"]
    [top] = [b for b in over["bins"] if b["n"]]
    assert (top["from"], top["to"], top["confidence"], top["accuracy"]) == (0.8, 1.0, 0.9, 0.5)
    # the run above: sure labels right, unsure ones wrong, so each bin is off by its distance
    # from 0 or 1
    run = _confidence_run()
    summary = summarise(run)
    cal = summary["by_confidence"]["calibration"]
    assert cal["n"] == 8 and [b["n"] for b in cal["bins"]] == [3, 1, 1, 3]
    assert [b["accuracy"] for b in cal["bins"]] == [0.0, 0.0, 1.0, 1.0]
    assert cal["ece"] == 0.306
    text = summary_markdown(run, summary)
    assert "erro de calibração esperado (ECE) 0.306" in text
    assert "| 0.80–1.00 | 3 | 0.873 | 1.000 |" in text
    page = summary_html(run, summary)
    assert '<table class="calibration">' in page
    assert 'alt="Calibração da confiança do modelo de rótulos"' in page


def test_the_terminal_says_how_far_to_trust_the_labels_in_a_few_lines() -> None:
    run = _confidence_run().assign(error_kind=["none"] * 4 + ["vague"] * 4 + [None, None])
    summary = summarise(run)
    lines = trust_lines(summary["by_confidence"], summary["by_kind"])
    assert lines[0] == ("confiança do modelo de rótulos: metade mais confiante (n=4, P "
                        "0.77–0.93): acurácia 1.00, kappa linear 1.00; menos confiante (n=4, P "
                        "0.41–0.52): acurácia 0.00, kappa linear -0.33")
    assert lines[1].startswith("calibração (confiança→acerto): 0.44→0.00 (n=3)")
    assert lines[1].endswith("ECE 0.31, Brier 0.12")
    assert lines[2].startswith("revise primeiro: b1 (PC, 0.36), a8 (I, 0.41)")
    assert lines[3] == "acertos por tipo de resposta: none 4/4, vague 0/4"
    assert trust_lines(None, None) == []


def test_the_report_shows_which_kinds_of_wrong_answer_the_judge_lets_through() -> None:
    # the judge is right on correct and wrong answers but calls every vague answer C
    specs = [("none", "C", "C")] * 3 + [("wrong", "I", "I")] * 2 + [("vague", "PC", "C")] * 2
    specs += [("vague", "PC", None), ("vague", None, "C")]  # not judged; not labelled (left out)
    run = pd.DataFrame([{"id": f"k{i}", "question": "q", "manual": m, "automated": a,
                         "error_kind": kind, "ar_score": 3}
                        for i, (kind, m, a) in enumerate(specs)])
    summary = summarise(run)
    kinds = summary["by_kind"]
    assert list(kinds) == ["none", "vague", "wrong"]  # the largest group first
    assert kinds["vague"] == {"n": 3, "manual": {"C": 0, "PC": 3, "I": 0},
                              "automated": {"C": 2, "PC": 0, "I": 0, "none": 1},
                              "accuracy": 0.0}
    assert kinds["none"]["accuracy"] == 1.0 and kinds["wrong"]["n"] == 2
    text = summary_markdown(run, summary)
    assert "| vague | 3 | PC 3 | C 2 · none 1 | 0.000 |" in text
    assert '<table class="by-kind">' in summary_html(run, summary)
    assert summarise(run.drop(columns=["error_kind"]))["by_kind"] is None


def test_a_run_labelled_without_a_label_model_has_no_confidence_section(rows: pd.DataFrame
                                                                       ) -> None:
    summary = summarise(rows)
    assert summary["by_confidence"] is None
    assert "Confiança da anotação automatizada" not in summary_markdown(rows, summary)
