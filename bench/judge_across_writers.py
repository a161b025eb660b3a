"""How the label model's words-and-gains reading (its ``reference_read`` submodel, what
``aula judge`` labels an answer with a reference by) holds for a writer it was not fitted on.

Fitting answers of three writers, read from their stored judged items: the judge set's
(``judged_3b1b_gold.jsonl``, fitting split), the styled answers (``judged_styles_3b1b.jsonl``)
and the study notes (``judged_notes_3b1b.jsonl``). For the shipped submodel's signals, in its
ordinal (cumulative logit) form and in the multinomial form every other submodel has: each
writer's answers labelled by a model fitted on the other two writers alone (leave one writer
out: what a new writer meets), and each question's by one fitted without that question (leave
one question out: how ``aula fit-labels`` chooses), on fitting answers only. Beside them, the
judge set's test part (70 answers, its stored judged items) labelled by the shipped label model
as ``aula judge`` labels it (words and gains alone: the judge's LLM columns left out) and as
``aula judge --reasoning`` does (every signal).
"""

from __future__ import annotations

from typing import Any

from bench.common import DATA, ROOT, label_figures, report

WRITERS = {"judge_set": "judged_3b1b_gold.jsonl", "styles": "judged_styles_3b1b.jsonl",
           "notes": "judged_notes_3b1b.jsonl"}


def _rows() -> list[tuple[str, str, str, dict[str, Any]]]:
    """(writer, question, manual label, signals) of every fitting answer given with a
    reference."""
    from bench.common import read_jsonl
    from eval.labels import normalise_label
    from eval.signals import features

    out = []
    for writer, name in WRITERS.items():
        for r in read_jsonl(DATA / name):
            if r.get("split") != "fit" or r.get("origin") == "aula" \
                    or not r.get("reference_answer"):
                continue
            out.append((writer, str(r.get("question_id") or r["question"]),
                        str(normalise_label(r["manual"])), features(r)))
    return out


def main() -> None:
    from app.judging import load_label_model, load_thresholds
    from eval.label_fitting import leave_group_out

    labels = ROOT / "eval" / "labels.json"
    model, th = load_label_model(labels), load_thresholds(labels)
    assert model is not None
    chosen = tuple(model.figures["reference_read"]["signals"])
    shipped = next(m for m in model.models if m.features == chosen and not m.aula_only)
    signals, c = shipped.features, shipped.c
    rows = [r for r in _rows() if all(r[3].get(f) is not None for f in signals)]
    figures: dict[str, Any] = {"signals": ",".join(signals), "answers": len(rows)}
    figures.update({f"{w}_answers": sum(r[0] == w for r in rows) for w in WRITERS})
    manual = [r[2] for r in rows]
    for form, ordinal in (("ordinal", True), ("multinomial", False)):
        by_writer = leave_group_out([r[3] for r in rows], manual, [r[0] for r in rows],
                                    signals, c, ordinal=ordinal)
        for name, value in label_figures(manual, by_writer).items():
            figures[f"{form}_new_writer_{name}"] = value
        for w in WRITERS:
            idx = [i for i, r in enumerate(rows) if r[0] == w]
            got = label_figures([manual[i] for i in idx], [by_writer[i] for i in idx])
            figures[f"{form}_new_writer_{w}_kappa_linear"] = got["kappa_linear"]
            figures[f"{form}_new_writer_{w}_pc_recall"] = got["pc_recall"]
        by_question = leave_group_out([r[3] for r in rows], manual, [r[1] for r in rows],
                                      signals, c, ordinal=ordinal)
        for name, value in label_figures(manual, by_question).items():
            figures[f"{form}_new_question_{name}"] = value
    figures.update(_judge_set_test(model, th))
    report("judge_across_writers", figures)


LLM_COLUMNS = ("ar_score", "ar_reasoning", "correctness_score", "correctness_claim_p",
               "correctness_strict_p", "correctness_reasoning", "coverage_p", "reference_agree_p")
"""What the judge's LLM adds to a judged item (AR, the claim check, the yes/no questions)."""


def _judge_set_test(model: Any, th: Any) -> dict[str, Any]:
    """The shipped label model on the judge set's test part, read without and with the LLM."""
    import pandas as pd

    from bench.common import read_jsonl
    from eval.label_fitting import held_out_figures
    from eval.run import Pipeline, labelled_without_llm

    held = pd.DataFrame([r for r in read_jsonl(DATA / WRITERS["judge_set"])
                         if r.get("split") == "test"])
    # as `aula judge` has them: an answer it can label from words and gains without the LLM
    # signals (one in another language than its reference has no words: it asks the LLM)
    p = Pipeline(judge=lambda m: "", thresholds=th, label_model=model)
    quick = pd.DataFrame([{**r, **dict.fromkeys(LLM_COLUMNS)} if labelled_without_llm(r, p)
                          else r for r in held.to_dict("records")])
    out: dict[str, Any] = {"judge_set_test_answers": len(held),
                           "judge_set_test_asked_the_llm": int(quick["ar_score"].notna().sum())}
    for name, rows in (("words_and_gains", quick), ("reasoning", held)):
        fig = held_out_figures(rows, th, model)["label_model"]
        out[f"judge_set_test_{name}_accuracy"] = fig["accuracy"]
        out[f"judge_set_test_{name}_kappa_linear"] = fig["kappa_linear"]
        out[f"judge_set_test_{name}_pc_recall"] = fig["per_class"]["PC"]["recall"]
    return out


if __name__ == "__main__":
    main()
