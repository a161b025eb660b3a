"""``aula eval``, ``aula report``, ``aula judge``, ``aula fit-labels``."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import typer

from answer.course import course_text, fit, read_labelled
from app.batch import EvalOptions, eval_pipeline, label_model_for, thresholds_for
from app.cli.common import IndexOpt, JsonOpt, one_line_errors, print_json, settings_for
from app.cli.common import load_embedder as embedder_for
from app.gate_fitting import fit_gate as fit_gate_on
from app.judging import judge_client, judge_pipeline, load_label_model, no_reference_warning
from app.ray_eval import RayEvaluator
from app.services import build_retriever, build_services, search_services
from corpus.errors import InputError
from corpus.fusion import FIRST_SLICE, INDEX_FILE
from corpus.index import IndexStore
from eval.label_fitting import fit_labels as fit_labels_on
from eval.label_fitting import read_judged, split_rows
from eval.metrics import agreement
from eval.questions import load_questions, resolve_gold_lectures
from eval.report import KIND_COLUMN, by_confidence, by_kind, trust_lines
from eval.retrieval import fit_fusion as fit_on
from eval.retrieval import known_lectures, read_gold, run
from eval.run import judge_rows, load_items, relabel, run_batch, write_reports

ThresholdsOpt = typer.Option(
    None, "--thresholds", help="JSON file of label thresholds (from `aula fit-labels`)."
)


def register(cli: typer.Typer) -> None:
    cli.command("eval")(eval_cmd)
    cli.command()(report)
    cli.command()(judge)
    cli.command("fit-labels")(fit_labels)
    cli.command("fit-gate")(fit_gate)
    cli.command("fit-fusion")(fit_fusion)
    cli.command("fit-course")(fit_course)


def eval_cmd(
    questions: Path = typer.Argument(..., help="Question set: CSV, JSONL or XLSX."),
    out: Path = typer.Option(..., "--out", help="Output folder (re-run to resume)."),
    index: Path | None = IndexOpt,
    k: int = typer.Option(10, "-k", help="Segments retrieved per question."),
    concurrency: int = typer.Option(1, "--concurrency", help="Items judged at once."),
    samples: int = typer.Option(1, "--samples", help="Judge samples per item (median)."),
    no_correctness: bool = typer.Option(False, "--no-correctness",
                                        help="Only the study's AR judge."),
    thresholds: Path | None = ThresholdsOpt,
    hide_urls: bool = typer.Option(False, "--hide-urls", help="URLs as 'oculto' in records."),
    ragas: bool = typer.Option(False, "--ragas", help="Also score ragas answer relevancy, "
                               "faithfulness (and context precision/recall with a reference)."),
    ray: str | None = typer.Option(
        None, "--ray", metavar="ADDRESS",
        help="Spread questions over Ray workers: 'local', 'auto' or ray://HEAD:10001."),
    ray_workers: int = typer.Option(2, "--ray-workers", min=1,
                                    help="Ray workers, each with its own retriever and clients."),
    json_out: bool = JsonOpt,
) -> None:
    """Run a question set through retrieval, answer and judges; write the reports to --out.
    Killed runs resume: finished items are kept in OUT/items.jsonl."""
    s = settings_for(index)
    options = EvalOptions(samples=samples, thresholds=thresholds, k=k,
                          correctness=not no_correctness, ragas=ragas)
    with one_line_errors():
        qs = _known_gold_lectures(load_questions(questions), IndexStore(s.index.dir).lectures())
        if ray:
            with RayEvaluator(s, options, address=ray, workers=ray_workers) as workers:
                items = run_batch(qs, None, out, progress=not json_out,
                                  evaluate_all=workers.evaluate_all)
        else:
            services = build_services(s)
            with services.stack:
                items = run_batch(qs, eval_pipeline(s, services, options), out,
                                  concurrency=concurrency, progress=not json_out)
        summary = write_reports(items, out, hide_urls=hide_urls)
    _warn_no_reference(qs.to_dict("records"), items)
    _print_summary(summary, out, json_out)


def _known_gold_lectures(qs: Any, lectures: dict[str, dict[str, str]]) -> Any:
    """The question set with gold lectures named by title or video link resolved to the
    index's ids (``lectures``: ``eval.questions.resolve_gold_lectures``); a row whose gold
    lecture the index does not hold is said on stderr, since it is judged without its gold
    span."""
    qs, problems = resolve_gold_lectures(qs, lectures)
    _warn_unknown_lectures(problems, "rows")
    return qs


MAX_ROW_WARNINGS = 10
"""Rows named one by one in a warning; the rest are counted."""


def _warn_unknown_lectures(problems: list[str], what: str, tail: str = "") -> None:
    """Each problem on stderr, up to ``MAX_ROW_WARNINGS``, then how many more ``what``."""
    for problem in problems[:MAX_ROW_WARNINGS]:
        typer.echo(f"aviso: {problem}{tail}", err=True)
    if len(problems) > MAX_ROW_WARNINGS:
        typer.echo(f"aviso: and {len(problems) - MAX_ROW_WARNINGS} more {what} whose "
                   "gold_lecture is no lecture of this index", err=True)


def _warn_no_reference(rows: list[dict[str, Any]], items: list[dict[str, Any]]) -> None:
    """Say on stderr when the embedded judge labelled given answers without a reference answer
    (``app.judging.no_reference_warning``)."""
    model = next((it["judge_model"] for it in items if it.get("judge_model")), None)
    warning = no_reference_warning(rows, model)
    if warning:
        typer.echo(f"aviso: {warning}", err=True)


def report(
    out: Path = typer.Argument(..., help="A folder written by `aula eval`."),
    hide_urls: bool = typer.Option(False, "--hide-urls"),
    thresholds: Path | None = typer.Option(
        None, "--thresholds", help="Relabel with these thresholds and the label model in "
        "the same file (from `aula fit-labels`)."),
    json_out: bool = JsonOpt,
) -> None:
    """Rewrite the reports of an evaluation folder from its stored items."""
    with one_line_errors():
        items = load_items(out)
        if not items:
            raise InputError(f"{out}: no evaluated items (run `aula eval` first)")
        if thresholds is not None:
            items = relabel(items, thresholds_for(thresholds), load_label_model(thresholds))
        summary = write_reports(items, out, hide_urls=hide_urls)
    _print_summary(summary, out, json_out)


def _print_summary(summary: dict[str, Any], out: Path, json_out: bool) -> None:
    if json_out:
        print_json(summary)
        return
    typer.echo(f"relatório em {out}/summary.html, {out}/summary.md, {out}/records.md")
    agree = summary.get("agreement") or {}
    _echo_agreement(summary.get("n"), agree.get("automated") or {}, agree.get("ar_only") or {},
                    summary.get("by_confidence"), summary.get("by_kind"))


def _echo_agreement(n: Any, auto: dict[str, Any], ar_only: dict[str, Any],
                    by_confidence: Any, by_kind: Any) -> None:
    """The automated labels' agreement with the instructor's (with its intervals where
    measured) beside AR's alone, then how far to trust them (``eval.report.trust_lines``)."""
    typer.echo(
        f"n={n}  anotação automatizada: acurácia {_f(auto.get('accuracy'))}"
        f"{_ci(auto.get('accuracy_ci'))}, kappa linear {_f(auto.get('kappa_linear'))}"
        f"{_ci(auto.get('kappa_linear_ci'))}  |  só AR: acurácia "
        f"{_f(ar_only.get('accuracy'))}, kappa linear {_f(ar_only.get('kappa_linear'))}")
    for line in trust_lines(by_confidence, by_kind):
        typer.echo(line)


def _f(x: Any) -> str:
    return "—" if x is None else f"{x:.2f}"


def _ci(ci: Any) -> str:
    """" [0.54, 0.77]": a 95% bootstrap interval, or nothing without one."""
    return f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""


def _confidence(item: dict[str, Any]) -> str:
    """" (P 0.72)" after a label the label model gave: its probability for that label."""
    p = item.get("automated_confidence")
    return "" if p is None else f" (P {p:.2f})"


def judge(
    file: Path = typer.Argument(
        ..., help="CSV or JSONL with question and answer columns; optional: label (C/PC/I, "
        "for agreement), id, and the evidence the claims are checked against: "
        "reference_answer, gold_lecture/gold_start/gold_end (seconds), contexts. Without a "
        "reference_answer the embedded judge agrees with instructors far less, gold span or "
        "not (docs/judges.md)."),
    index: Path | None = IndexOpt,
    k: int = typer.Option(10, "-k", help="Segments retrieved where a row has no contexts."),
    samples: int = typer.Option(1, "--samples", help="Judge samples per item (median)."),
    thresholds: Path | None = ThresholdsOpt,
    concurrency: int = typer.Option(1, "--concurrency", help="Items judged at once."),
    reasoning: bool = typer.Option(
        False, "--reasoning", help="Also run the judge LLM's chain of thought (AR) and claim "
        "check on the answers the label model labels without them (those with a reference "
        "answer) and label them with those signals too: slower (about a quarter of the "
        "speed on 2 cores) and more memory, with the reasoning to read."),
    json_out: bool = JsonOpt,
) -> None:
    """Judge given answers: per-item automated C/PC/I label and its confidence (with AR and
    correctness where the judge's LLM was asked), plus agreement with the labels where the
    file has them."""
    s = settings_for(index)
    with one_line_errors(), ExitStack() as stack:
        qs = load_questions(file)
        if "answer" not in qs or qs["answer"].isna().any():
            raise InputError(f"{file}: every row needs an 'answer' for `aula judge`")
        client = judge_client(s, stack=stack)
        search = span_text = matcher = None
        if "contexts" not in qs or qs["contexts"].isna().any():
            # searched as `aula eval` and the service search (rewritten, and translated by
            # the judge's LLM when in another language than the lectures)
            services = search_services(s, client)
            stack.enter_context(services.stack)
            search, span_text = services.hits, services.retriever.span_text
            matcher = services.embedder
            qs = _known_gold_lectures(qs, services.retriever.data.lecture_meta())
        pipeline = judge_pipeline(s, client, samples=samples,
                                  thresholds=thresholds_for(thresholds, s), search=search, k=k,
                                  label_model=label_model_for(thresholds, s),
                                  span_text=span_text, search_in=search,
                                  matcher=matcher, reasoning=reasoning)
        items = judge_rows(qs.to_dict("records"), pipeline, concurrency=concurrency)
    _warn_no_reference(qs.to_dict("records"), items)
    _print_judged(items, json_out)


def _print_judged(items: list[dict[str, Any]], json_out: bool) -> None:
    """``aula judge``'s items and their agreement with the manual labels."""
    manual = [it.get("manual") for it in items]
    automated = [it.get("automated") for it in items]
    summary: dict[str, Any] = {
        **agreement(manual, automated),
        "ar_only": agreement(manual, [it.get("ar_only") for it in items]),
        "by_confidence": by_confidence([it.get("id") for it in items], manual, automated,
                                       [it.get("automated_confidence") for it in items]),
        "by_kind": by_kind([it.get(KIND_COLUMN) for it in items], manual, automated),
    }
    shown = [
        {k: v for k, v in it.items() if k not in ("segments", "citations")} for it in items
    ]
    if json_out:
        print_json({"items": shown, "summary": summary})
        return
    for it in items:
        typer.echo(
            f"{it['id']}\tAR {_f(it.get('ar'))}\tcorreção {_f(it.get('correctness'))}\t"
            f"auto {it.get('automated') or '—'}{_confidence(it)}\tmanual {it.get('manual') or '—'}"
        )
    _echo_agreement(summary.get("n"), summary, summary["ar_only"], summary["by_confidence"],
                    summary["by_kind"])


def _write(out: Path, text: str) -> None:
    """``text`` into ``out`` whole or not at all (through a temporary file beside it)."""
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)


def fit_labels(
    sources: list[Path] = typer.Argument(
        ..., help="`aula eval` folders, judged JSONL/CSV files or `aula judge --json` "
        "output (.json), fitted on together."),
    out: Path = typer.Option(Path("thresholds.json"), "--out"),
    split: str | None = typer.Option(
        None, "--split", help="Fit only on the items whose `split` column says this; the "
        "others are held out and their agreement printed (never fitted on)."),
    json_out: bool = JsonOpt,
) -> None:
    """Fit the C/PC/I labelling to the manual labels: thresholds on AR and correctness and,
    when the items carry the judge's signals, a label model on them (leave-one-question-out
    figures on the fitted items, plain agreement on held-out ones)."""
    with one_line_errors():
        fitted = fit_labels_on(*split_rows(read_judged(*sources), split, *sources))
        _write(out, json.dumps(fitted.saved, ensure_ascii=False) + "\n")
    if json_out:
        print_json(fitted.result)
        return
    cv, model = fitted.cross_validated, fitted.model
    typer.echo(f"limiares gravados em {out}: {fitted.thresholds.to_json()}")
    typer.echo(
        f"validação cruzada (deixa um de fora, n={cv['n']}): acurácia "
        f"{_f(cv['accuracy'])}, kappa {_f(cv['kappa'])}, kappa linear "
        f"{_f(cv['kappa_linear'])}  (rótulos previstos por limiares ajustados sem o item)"
    )
    if model is not None:
        loqo = model.figures["loqo"]
        typer.echo(f"modelo de rótulos ({' | '.join('+'.join(m.features) for m in model.models)})"
                   f": deixa uma pergunta de fora, n={loqo['n']}: acurácia "
                   f"{_f(loqo['accuracy'])}, kappa linear {_f(loqo['kappa_linear'])}")
    for part, what in (("held_out", ""), ("held_out_aula", ", respostas do Aula"),
                       ("held_out_given", ", respostas dadas")):
        for name, fig in (fitted.result.get(part) or {}).items():
            if isinstance(fig, dict):
                typer.echo(f"separados ({name}{what}), n={fig['n']}: acurácia "
                           f"{_f(fig['accuracy'])}, kappa linear {_f(fig['kappa_linear'])}")


def fit_gate(
    questions: list[Path] = typer.Argument(
        ..., help="JSON Lines question sets with `answerable` (and `gold_lecture` for the "
        "answerable ones): bench/data/answers_3b1b.jsonl, bench/data/gate_3b1b.jsonl."),
    split: str = typer.Option("fit", "--split", help="Fit on the questions of this split."),
    without_kind: list[str] = typer.Option(
        [], "--without-kind", help="Leave out the questions of this `kind` (repeatable): "
        "\"course logistics\", which the course check declines before the gate."),
    llm_check: bool = typer.Option(
        True, "--llm-check/--no-llm-check", help="Measure the LLM's evidence check (best_p) "
        "too; without it the gate can only weigh signals known without the LLM."),
    features: str | None = typer.Option(
        None, "--features", help="Comma-separated signals the gate may weigh (default: the "
        "subset that leave-one-out chooses among all of them), e.g. top_unit,term_cov."),
    fallback: Path | None = typer.Option(
        None, "--fallback", help="A gate file whose model also covers a question when every "
        "rare word of it is in the best passage (idf_cov >= 0.99, term_cov 1): for corpora "
        "whose similarities run lower than the fitting ones (bench/data/gate_previous.json)."),
    strict: bool = typer.Option(
        False, "--strict", help="Answer only from the P(covered) at which none of the fitting "
        "questions the lectures do not cover is answered (0.5, 0.6, ... 0.95), not from 0.5: "
        "for a course that prefers \"not covered\" to a guess (answer/gate_strict.json)."),
    out: Path = typer.Option(Path("gate.json"), "--out", help="Where to write the thresholds."),
    k: int = typer.Option(10, "-k", help="Segments retrieved per question."),
    samples_file: Path | None = typer.Option(
        None, "--samples", help="JSON Lines of the measured signals: written after measuring; "
        "if it exists already, the gate is refitted from it without asking the LLM again."),
    index: Path | None = IndexOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Fit the evidence gate (answer or say "not covered") on a labelled question set and
    store it; point AULA_GATE_FILE at the file to use it (answer/gate.json ships the default)."""
    s = settings_for(index)
    with one_line_errors():
        gate, samples = fit_gate_on(
            s, questions, split=split, without_kind=without_kind, llm_check=llm_check,
            features=features, fallback=fallback, strict=strict, k=k, samples_file=samples_file,
            progress=not json_out)
        _write(out, gate.to_json())
    if json_out:
        print_json(json.loads(gate.to_json()))
        return
    rule = (("logistic " + ", ".join(f"{k} {w:+.2f}" for k, w in gate.weights.items())
             + f", bias {gate.bias:+.2f}, answered from P={gate.min_p:.2f}")
            if gate.weights else
            f"covered from P={gate.p_covered:.3f} (score ≥ {gate.min_score:.3f})")
    loo = gate.fitted.get("leave_one_out_balanced_accuracy")
    typer.echo(f"gate written to {out}: {rule}; passages from P={gate.p_pass:.3f}; "
               f"balanced accuracy on {len(samples)} questions "
               f"{gate.fitted['balanced_accuracy']:.3f}"
               + (f" (leave-one-out {loo:.3f})" if loo is not None else ""))


def fit_fusion(
    questions: list[Path] = typer.Argument(..., help="JSON Lines question sets with gold spans "
                                           "(gold_lecture, gold_start, gold_end)."),
    split: str | None = typer.Option(
        None, "--split", help="Only the questions of this split (rows without one are kept)."),
    out: Path | None = typer.Option(
        None, "--out", help="Where to write the weights (default: INDEX_DIR/fusion.json, which "
        "this index then uses)."),
    index: Path | None = IndexOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Fit the retrieval fusion weights (dense / BM25, windows / units) on questions with gold
    spans over this index, and store them beside the index."""
    s = settings_for(index)
    with one_line_errors():
        qs = [q for path in questions for q in read_gold(path, split=split)]
        if not qs:
            raise InputError(f"{questions[0]}: no answerable question with a gold span"
                             + (f" in split {split!r}" if split else ""))
        # the index first: a missing one is said as such, not as unknown lectures
        retriever, _ = build_retriever(s)
        qs, unknown = known_lectures(qs, retriever.data.lecture_meta())
        _warn_unknown_lectures(unknown, "questions", "; left out of the fit")
        if not qs:
            raise InputError(f"{questions[0]}: no question's gold lecture is in the index at "
                             f"{s.index.dir} (another index's questions?)")
        fusion = fit_on(retriever, qs, fitted_on=", ".join(p.name for p in questions)
                        + (f"; split {split}" if split else ""))
        fitted, _ = run(retriever, qs, fusion=fusion)
        before, _ = run(retriever, qs, fusion=FIRST_SLICE, links_at_window_start=True)
        target = out or (s.index.dir / INDEX_FILE)
        fusion.save(target)
    report = {"file": str(target), "questions": len(qs), "weights": fusion.weights,
              "method": fusion.method, "fitted": fitted, "first_slice_hybrid": before}
    if json_out:
        print_json(report)
        return
    typer.echo(f"fusion written to {target} ({len(qs)} questions): " + ", ".join(
        f"{c} {w:g}" for c, w in fusion.weights.items()))
    for name, figs in (("fitted", fitted), ("first slice hybrid", before)):
        typer.echo(f"  {name:<20} " + "  ".join(f"{k} {v:.3f}" for k, v in figs.items()))


def fit_course(
    questions: list[Path] = typer.Argument(
        ..., help="JSON Lines question sets with `question` and `kind` (\"course logistics\", "
        "or answerable / neighbouring subject / other subject / subject): "
        "bench/data/course_train.jsonl, bench/data/gate_3b1b.jsonl, ..."),
    split: str = typer.Option("fit", "--split", help="Fit on the questions of this split "
                              "(rows without a split count too)."),
    out: Path = typer.Option(Path("course.json"), "--out", help="Where to write the check."),
    json_out: bool = JsonOpt,
) -> None:
    """Fit the course-question check (exams, grades, deadlines, materials: declined before
    the evidence gate) on labelled questions and store it; point AULA_COURSE_FILE at the file
    to use it (answer/course.json ships the default)."""
    s = settings_for(None)
    with one_line_errors():
        rows = [r for path in questions for r in read_labelled(path, split)]
        embedder = embedder_for(s)
        vectors = embedder.embed([course_text(q) for q, _ in rows], "query")
        check = fit(vectors, [c for _, c in rows], embedder.model_id)
        check.fitted.update({"questions_file": ", ".join(p.name for p in questions),
                             "split": split})
        _write(out, check.to_json())
    if json_out:
        print_json({"out": str(out), "threshold": check.threshold, **check.fitted})
        return
    f = check.fitted
    typer.echo(f"{out}: {f['course']} course and {f['subject']} subject questions; threshold "
               f"{check.threshold:.3f}; cross-validated, course flagged "
               f"{f['cv_course_flagged']:.2f}, subject flagged {f['cv_subject_flagged']:.2f}")
