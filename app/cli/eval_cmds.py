"""``aula eval``, ``aula report``, ``aula judge``, ``aula fit-labels``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from app.cli.common import IndexOpt, JsonOpt, one_line_errors, print_json, settings_for
from app.config import Settings
from corpus.errors import InputError

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


def _thresholds(path: Path | None, s: Settings | None = None):  # type: ignore[no-untyped-def]
    """``--thresholds FILE`` when given, else ``AULA_LABEL_THRESHOLDS``, else the defaults;
    a file fitted on few items is said on stderr."""
    from app.judging import load_thresholds, thresholds_warning

    path = path or (s.judge.label_thresholds if s is not None else None)
    th = load_thresholds(path)
    warning = thresholds_warning(path)
    if warning:
        typer.echo(f"aviso: {warning}", err=True)
    return th


def _label_model(path: Path | None, s: Settings):  # type: ignore[no-untyped-def]
    """The label model in ``--thresholds FILE``, else as the settings say (``app.judging``)."""
    from app.judging import load_label_model

    return load_label_model(path or s.judge.label_thresholds)


class EvalAnswer:
    """A reply of ``app.answerer`` as the eval pipeline reads it: text, citations, the
    passages the generator read, and the error when no answer could be written."""

    def __init__(self, reply: Any) -> None:
        self.text = reply.text
        self.citations = reply.answer.citations if reply.answer is not None else []
        self.contexts = reply.contexts
        self.error = reply.error


def ragas_scorer(s: Settings, answer_llm: Any, embedder: Any) -> Any:
    """ragas' ``score`` on the judge's endpoint (else the answerer's) with our E5 model."""
    from eval.ragas_metrics import RagasScorer

    if s.judge.base_url:
        base_url, api_key, model = s.judge.base_url, s.judge.api_key, s.judge.model or "default"
    else:
        base_url, api_key, model = answer_llm.base_url, s.llm.api_key, answer_llm.model_id
    return RagasScorer(base_url=base_url, api_key=api_key, model=model, embedder=embedder,
                       timeout=s.llm.timeout, retries=s.llm.retries).score


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
    from app.services import build_services
    from corpus.index import IndexStore
    from eval.questions import load_questions
    from eval.run import run_batch, write_reports

    s = settings_for(index)
    options = EvalOptions(samples=samples, thresholds=thresholds, k=k,
                          correctness=not no_correctness, ragas=ragas)
    with one_line_errors():
        qs = _known_gold_lectures(load_questions(questions), IndexStore(s.index.dir).lectures())
        if ray:
            from app.ray_eval import RayEvaluator

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
    from eval.questions import resolve_gold_lectures

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
    from app.judging import no_reference_warning

    model = next((it["judge_model"] for it in items if it.get("judge_model")), None)
    warning = no_reference_warning(rows, model)
    if warning:
        typer.echo(f"aviso: {warning}", err=True)


@dataclass(frozen=True)
class EvalOptions:
    """``aula eval``'s judging options, as Ray workers receive them."""

    samples: int = 1
    thresholds: Path | None = None
    k: int = 10
    correctness: bool = True
    ragas: bool = False


def eval_pipeline(s: Any, services: Any, o: EvalOptions) -> Any:
    """The pipeline ``aula eval`` runs each question through: the configured retriever and
    answerer, then the judges (here, or in a Ray worker)."""
    from app.judging import judge_client, judge_pipeline

    return judge_pipeline(
        s, judge_client(s, services.llm), samples=o.samples,
        thresholds=_thresholds(o.thresholds, s), label_model=_label_model(o.thresholds, s),
        search=services.hits, search_in=services.hits,
        span_text=services.retriever.span_text,
        matcher=services.embedder,
        answer=lambda q, hits: EvalAnswer(services.answerer.run(
            q, hits, query=services.search_query(q))),
        k=o.k, correctness=o.correctness,
        ragas=ragas_scorer(s, services.llm, services.embedder) if o.ragas else None,
    )


def report(
    out: Path = typer.Argument(..., help="A folder written by `aula eval`."),
    hide_urls: bool = typer.Option(False, "--hide-urls"),
    thresholds: Path | None = typer.Option(
        None, "--thresholds", help="Relabel with these thresholds and the label model in "
        "the same file (from `aula fit-labels`)."),
    json_out: bool = JsonOpt,
) -> None:
    """Rewrite the reports of an evaluation folder from its stored items."""
    from app.judging import load_label_model
    from eval.run import load_items, relabel, write_reports

    with one_line_errors():
        items = load_items(out)
        if not items:
            raise InputError(f"{out}: no evaluated items (run `aula eval` first)")
        if thresholds is not None:
            items = relabel(items, _thresholds(thresholds), load_label_model(thresholds))
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
    from eval.report import trust_lines

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
    json_out: bool = JsonOpt,
) -> None:
    """Judge given answers: per-item AR, correctness and automated label, plus agreement
    with the labels where the file has them."""
    from app.judging import judge_client, judge_pipeline
    from eval.metrics import agreement
    from eval.questions import load_questions
    from eval.report import KIND_COLUMN, by_confidence, by_kind
    from eval.run import evaluate_item

    s = settings_for(index)
    with one_line_errors(), ExitStack() as stack:
        qs = load_questions(file)
        if "answer" not in qs or qs["answer"].isna().any():
            raise InputError(f"{file}: every row needs an 'answer' for `aula judge`")
        client = judge_client(s, stack=stack)
        search = span_text = matcher = None
        if "contexts" not in qs or qs["contexts"].isna().any():
            from app.services import search_services

            # searched as `aula eval` and the service search (rewritten, and translated by
            # the judge's LLM when in another language than the lectures)
            services = search_services(s, client)
            stack.enter_context(services.stack)
            search, span_text = services.hits, services.retriever.span_text
            matcher = services.embedder
            qs = _known_gold_lectures(qs, services.retriever.data.lecture_meta())
        pipeline = judge_pipeline(s, client, samples=samples,
                                  thresholds=_thresholds(thresholds, s), search=search, k=k,
                                  label_model=_label_model(thresholds, s),
                                  span_text=span_text, search_in=search,
                                  matcher=matcher)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max(1, concurrency)) as pool:
            items = list(pool.map(lambda r: evaluate_item(r, pipeline),
                                  qs.to_dict("records")))
    _warn_no_reference(qs.to_dict("records"), items)
    manual = [it.get("manual") for it in items]
    summary: dict[str, Any] = {
        **agreement(manual, [it.get("automated") for it in items]),
        "ar_only": agreement(manual, [it.get("ar_only") for it in items]),
        "by_confidence": by_confidence([it.get("id") for it in items], manual,
                                       [it.get("automated") for it in items],
                                       [it.get("automated_confidence") for it in items]),
        "by_kind": by_kind([it.get(KIND_COLUMN) for it in items], manual,
                           [it.get("automated") for it in items]),
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


def judged_items(rows: Any) -> list[tuple[Any, ...]]:
    """``(ar, correctness, manual, claim_p)`` per judged row, for fitting thresholds."""
    import pandas as pd

    from eval.claims import recorded_probabilities

    return [
        (None if pd.isna(r["ar_score"]) else int(r["ar_score"]),
         None if pd.isna(r["correctness_score"]) else int(r["correctness_score"]),
         r["manual"], recorded_probabilities(r) or None)
        for r in rows.to_dict("records")
    ]


def cross_validated(items: list[tuple[Any, ...]]) -> dict[str, Any]:
    """Leave-one-out agreement: each item labelled by thresholds fitted on the others."""
    from eval.labels import loo_labels
    from eval.metrics import agreement

    manual, predicted = loo_labels(items)
    return agreement(manual, predicted)


def fit_labels(
    source: Path = typer.Argument(..., help="An `aula eval` folder or a judged JSONL/CSV."),
    out: Path = typer.Option(Path("thresholds.json"), "--out"),
    split: str | None = typer.Option(
        None, "--split", help="Fit only on the items whose `split` column says this; the "
        "others are held out and their agreement printed (never fitted on)."),
    json_out: bool = JsonOpt,
) -> None:
    """Fit the C/PC/I labelling to the manual labels: thresholds on AR and correctness and,
    when the items carry the judge's signals, a label model on them (leave-one-question-out
    figures on the fitted items, plain agreement on held-out ones)."""
    import pandas as pd

    from eval.label_model import fits_apart
    from eval.labels import fit_thresholds
    from eval.run import load_items
    from eval.signals import AULA

    with one_line_errors():
        if source.is_dir():
            rows = pd.DataFrame(load_items(source))
        else:
            try:
                rows = (pd.read_csv(source) if source.suffix == ".csv"
                        else pd.read_json(source, lines=True))
            except ValueError as exc:  # pandas' parser errors
                raise InputError(f"{source}: cannot be read: {exc}".splitlines()[0]) from None
        for col in ("ar_score", "correctness_score", "manual"):
            if col not in rows:
                raise InputError(f"{source}: no column {col!r} (judge the items first)")
        held = rows.iloc[0:0]
        if split is not None:
            if "split" not in rows:
                raise InputError(f"{source}: --split {split} but the items have no 'split'")
            held = rows[rows["split"].astype(str) != split]
            rows = rows[rows["split"].astype(str) == split]
            if rows.empty:
                raise InputError(f"{source}: no item in split {split!r}")
        items = judged_items(rows)
        # the thresholds (and the claim level the label model reads claim_share at) are fitted
        # on the answers written elsewhere when the service's own get submodels of their own:
        # adding answers of one kind does not move how the other kind is labelled
        given = rows[rows["origin"] != AULA] if "origin" in rows else rows
        th_items = judged_items(given) if not given.empty and fits_apart(
            *_origins_labels_groups(_labelled(rows))) else items
        th = fit_thresholds(th_items)
        cv = cross_validated(th_items)
        model = fit_model(rows, support_at=th.support_at) if "coverage_p" in rows else None
        fitted = sum(1 for it in items if it[2] is not None and not pd.isna(it[2]))
        result: dict[str, Any] = {"thresholds": th.to_dict(), "cross_validated": cv}
        if model is not None:
            result["label_model"] = {"signals": [list(m.features) for m in model.models],
                                     "leave_one_question_out": model.figures["loqo"]}
        if not held.empty:
            result["held_out"] = held_out_figures(held, th, model)
            # the service's own answers and the others, apart: the figure on one kind
            # says nothing of the other (eval.label_model fits them apart)
            aula = held["origin"] == AULA if "origin" in held else None
            if aula is not None and aula.any() and not aula.all():
                result["held_out_aula"] = held_out_figures(held[aula], th, model)
                result["held_out_given"] = held_out_figures(held[~aula], th, model)
        saved = {**th.to_dict(), "fitted_items": fitted}
        if model is not None:
            saved["label_model"] = model.to_dict()
        for key in ("held_out", "held_out_aula", "held_out_given"):
            if key in result:
                saved[key] = result[key]
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(json.dumps(saved, ensure_ascii=False) + "\n")
        tmp.replace(out)
    if json_out:
        print_json(result)
        return
    typer.echo(f"limiares gravados em {out}: {th.to_json()}")
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
        for name, fig in (result.get(part) or {}).items():
            if isinstance(fig, dict):
                typer.echo(f"separados ({name}{what}), n={fig['n']}: acurácia "
                           f"{_f(fig['accuracy'])}, kappa linear {_f(fig['kappa_linear'])}")


def _labelled(rows: Any) -> list[dict[str, Any]]:
    """The judged rows with a manual label."""
    from eval.labels import normalise_label

    return [r for r in rows.to_dict("records") if normalise_label(r.get("manual"))]


def _origins_labels_groups(recs: list[dict[str, Any]]
                           ) -> tuple[list[bool], list[str], list[str]]:
    """For each labelled row (``_labelled``): whether the service wrote the answer, its manual
    label, and its question (what leave-one-question-out leaves out together)."""
    from eval.labels import normalise_label
    from eval.signals import AULA

    key = "question_id" if any(r.get("question_id") for r in recs) else "question"
    return ([r.get("origin") == AULA for r in recs],
            [str(normalise_label(r["manual"])) for r in recs],
            [str(r.get(key)) for r in recs])


def fit_model(rows: Any, candidates: Sequence[str] | None = None, *,
              support_at: float | None = None) -> Any:
    """The label model fitted on the judged ``rows`` with manual labels, with its
    leave-one-question-out agreement in ``figures['loqo']``; ``candidates``: the signals it may
    choose from (default: every one, ``eval.signals.FEATURES``). ``support_at``: the claim P
    that counts as confirmed in ``claim_share``: the fitted thresholds' (the label model is read
    at theirs, ``eval.run.labelled``; default ``Thresholds().support_at``)."""
    from eval.label_model import fit_label_model, loqo_predictions
    from eval.labels import Thresholds
    from eval.metrics import agreement
    from eval.signals import FEATURES, features

    recs = _labelled(rows)
    at = Thresholds().support_at if support_at is None else support_at
    feats = [features(r, at) for r in recs]
    _, labels, groups = _origins_labels_groups(recs)
    models = [str(r.get("judge_model")) for r in recs if r.get("judge_model")]
    # the gains' and the token match's scale: another model's are not read by this one
    # (eval.run.labelled)
    model = fit_label_model(feats, labels, groups, FEATURES if candidates is None else candidates,
                            judge_model=models[0] if models else "",
                            likelihood_model=_one_model(recs, "likelihood_model"),
                            match_model=_one_model(recs, "match_model"))
    predicted = loqo_predictions(model, feats, labels, groups)
    model.figures["loqo"] = agreement(labels, predicted)
    return model


def _one_model(recs: Sequence[dict[str, Any]], key: str) -> str:
    """The model that read ``key``'s signals of every record that names one (their scale),
    or "" when none or several did."""
    named = {r[key] for r in recs if isinstance(r.get(key), str) and r[key]}
    return named.pop() if len(named) == 1 else ""


def held_out_figures(held: Any, th: Any, model: Any) -> dict[str, Any]:
    """Agreement on items never fitted on: label model, thresholds, and AR alone."""
    from eval.metrics import agreement
    from eval.run import Pipeline, automated_label

    recs = held.to_dict("records")
    manual = [r.get("manual") for r in recs]
    out: dict[str, Any] = {}
    if model is not None:
        p = Pipeline(judge=lambda m: "", thresholds=th, label_model=model)
        out["label_model"] = agreement(manual, [automated_label(r, p) for r in recs])
    p = Pipeline(judge=lambda m: "", thresholds=th)
    out["thresholds"] = agreement(manual, [automated_label(r, p) for r in recs])
    out["ar_only"] = agreement(manual, [r.get("ar_only") for r in recs])
    return out


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
        "whose similarities run lower than the fitting ones (bench/data/gate_stop46.json)."),
    strict: bool = typer.Option(
        False, "--strict", help="Answer only from the P(covered) at which none of the fitting "
        "questions the lectures do not cover is answered (0.5, 0.6, ... 0.95), not from 0.5: "
        "for a course that prefers \"not covered\" to a guess (app/gate_strict.json)."),
    out: Path = typer.Option(Path("gate.json"), "--out", help="Where to write the thresholds."),
    k: int = typer.Option(10, "-k", help="Segments retrieved per question."),
    samples_file: Path | None = typer.Option(
        None, "--samples", help="JSON Lines of the measured signals: written after measuring; "
        "if it exists already, the gate is refitted from it without asking the LLM again."),
    index: Path | None = IndexOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Fit the evidence gate (answer or say "not covered") on a labelled question set and
    store it; point AULA_GATE_FILE at the file to use it (app/gate.json ships the default)."""
    from dataclasses import asdict, replace

    from tqdm import tqdm

    from app.api.ask import retrieve
    from app.evidence import (
        FEATURES,
        Gate,
        fit,
        make_strict,
        read_questions,
        read_samples,
        sample_for,
    )
    from app.services import build_services

    s = settings_for(index)
    with one_line_errors():
        if strict and fallback is not None:
            raise InputError("--strict with --fallback: a strict gate has no fallback")
        qs = [q for path in questions for q in read_questions(path, split)
              if q.kind not in without_kind]
        if not qs:
            raise InputError(f"{', '.join(map(str, questions))}: no question in split {split!r}")
        if samples_file is not None and samples_file.exists():
            samples, model = read_samples(samples_file)
        else:
            services = build_services(s)
            with services.stack:
                answerer = services.answerer
                samples = []
                for q in tqdm(qs, desc="evidência", unit="pergunta", disable=json_out):
                    hits, _, query = retrieve(services, q.question, k, None)  # as /ask
                    passages, probs, feats = answerer.gate_signals(
                        query, hits, services.llm.first_token if llm_check else None,
                        every_signal=True)
                    samples.append(sample_for(q, passages, probs, hits, feats))
                model = str(services.llm.model_id)
            if samples_file is not None:
                samples_file.write_text("".join(
                    json.dumps({**asdict(x), "model": model}) + "\n" for x in samples))
        if features:
            wanted = [f.strip() for f in features.split(",") if f.strip()]
            unknown = [f for f in wanted if f not in FEATURES]
            if unknown:
                raise InputError(f"--features: unknown signal {unknown[0]!r} "
                                 f"(known: {', '.join(FEATURES)})")
            missing = [f for f in wanted if not all(f in x.feats for x in samples)]
            if missing:
                raise InputError(f"--features: {missing[0]!r} was not measured in every sample")
            samples = [replace(x, feats={f: x.feats[f] for f in wanted}) for x in samples]
        gate = fit(samples, model=model)
        if strict:
            if not gate.weights:
                raise InputError("--strict: the fit holds no logistic model to be strict with")
            make_strict(gate, samples)
        if fallback is not None:
            other = Gate.load(fallback)
            if not other.weights:
                raise InputError(f"--fallback {fallback}: holds no fitted model")
            gate.fallback = {"weights": other.weights, "bias": other.bias,
                             "min_idf_cov": 0.99, "min_term_cov": 1.0, "from": fallback.name}
        gate.fitted.update({"features_allowed": features or "all",
                            "questions_file": ", ".join(p.name for p in questions),
                            "split": split, "without_kind": without_kind,
                            "llm_check": any(p is not None for x in samples for p in x.probs),
                            "candidates": s.answer.gate_candidates,
                            "passage_chars": s.answer.passage_chars})
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(gate.to_json(), encoding="utf-8")
        tmp.replace(out)
    if json_out:
        print_json(json.loads(gate.to_json()))
    else:
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
    from app.services import build_retriever
    from corpus.fusion import FIRST_SLICE, INDEX_FILE
    from eval.retrieval import fit_fusion as fit_on
    from eval.retrieval import known_lectures, read_gold, run

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
    to use it (app/course.json ships the default)."""
    from app.cli.common import load_embedder
    from app.course import fit, read_labelled

    s = settings_for(None)
    with one_line_errors():
        rows = [r for path in questions for r in read_labelled(path, split)]
        embedder = load_embedder(s)
        vectors = embedder.embed([q for q, _ in rows], "query")
        check = fit(vectors, [c for _, c in rows], embedder.model_id)
        check.fitted.update({"questions_file": ", ".join(p.name for p in questions),
                             "split": split})
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(check.to_json(), encoding="utf-8")
        tmp.replace(out)
    if json_out:
        print_json({"out": str(out), "threshold": check.threshold, **check.fitted})
        return
    f = check.fitted
    typer.echo(f"{out}: {f['course']} course and {f['subject']} subject questions; threshold "
               f"{check.threshold:.3f}; cross-validated, course flagged "
               f"{f['cv_course_flagged']:.2f}, subject flagged {f['cv_subject_flagged']:.2f}")
