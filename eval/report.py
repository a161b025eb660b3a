"""Summaries of an evaluation run: numbers (``summarise``), Markdown, a self-contained HTML page,
and the per-question rows as CSV and Parquet. Every file is written atomically.

One row per question, with these columns (missing values None; other columns pass through):

- ``id``, ``question``, ``answer``: the question and the answer that was judged.
- ``manual``: the human annotation C / PC / I, if any.
- ``ar_score`` (0..3 int), ``ar`` (``ar_score / 3``), ``ar_reasoning``, ``ar_error``:
  the answer-relevance judge; an unreadable reply leaves ``ar_score`` None with ``ar_error``.
- ``correctness_score`` (0..3), ``correctness`` (0..1), ``correctness_reasoning``,
  ``correctness_error``: the correctness judge, when it ran.
- ``automated``: the automated annotation used (``labels.combined_label``, or the AR-only one
  when no correctness judge ran); ``ar_only``: ``labels.ar_only_label(ar_score)``.
- ``gold_lecture``, ``gold_start``, ``gold_end``: the gold span, when known;
  ``hit_rank``: 1-based rank of the first retrieved segment overlapping it (None: not found);
  ``retrieved``: whether anything was retrieved for the item (False for a given answer judged
  against its gold span, whose retrieval figures would be misses that never were searches).
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import math
import numbers
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from eval.labels import ar_only_label
from eval.metrics import (
    CLASSES,
    agreement,
    ar_by_class,
    confusion_matrix,
    hit_at_k,
    is_missing,
    mrr,
    spearman_ar_manual,
)
from eval.record import Record, render_records

ROW_COLUMNS = (
    "id",
    "question",
    "answer",
    "manual",
    "ar_score",
    "ar",
    "ar_reasoning",
    "ar_error",
    "correctness_score",
    "correctness",
    "correctness_reasoning",
    "correctness_error",
    "automated",
    "automated_confidence",
    "ar_only",
    "gold_lecture",
    "gold_start",
    "gold_end",
    "hit_rank",
    "retrieved",
)
HIT_KS = (1, 3, 5, 10)
AGREEMENT_KEYS = ("n", "missing", "accuracy", "kappa", "kappa_linear")


def _column(rows: pd.DataFrame, name: str) -> list[Any]:
    if name not in rows.columns:
        return [None] * len(rows)
    return [None if is_missing(v) else v for v in rows[name].tolist()]


def _mean(values: Sequence[Any]) -> float | None:
    numbers = [float(v) for v in values if not is_missing(v)]
    return sum(numbers) / len(numbers) if numbers else None


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def summarise(rows: pd.DataFrame) -> dict[str, Any]:
    """The run's numbers as a JSON-ready dict: counts, AR mean, agreement of the automated and
    AR-only labels with the manual ones, confusion matrices, AR per class, Spearman, retrieval.
    """
    manual = _column(rows, "manual")
    ar_scores = _column(rows, "ar_score")
    ar = _column(rows, "ar")
    if all(v is None for v in ar):
        ar = [None if s is None else float(s) / 3 for s in ar_scores]
    ar_only = _column(rows, "ar_only")
    if "ar_only" not in rows.columns:
        ar_only = [ar_only_label(None if s is None else int(s)) for s in ar_scores]
    automated = _column(rows, "automated")

    missing = {
        name: sum(v is None for v in _column(rows, name))
        for name in ("answer", "manual", "ar_score", "correctness_score", "automated")
    }
    summary: dict[str, Any] = {
        "n": len(rows),
        "n_manual": sum(m is not None for m in manual),
        "missing": missing,
        "ar_mean": _mean(ar),
        "correctness_mean": _mean(_column(rows, "correctness")),
        "agreement": {
            "automated": agreement(manual, automated),
            "ar_only": agreement(manual, ar_only),
        },
        "confusion": {
            "automated": _table_dict(confusion_matrix(manual, automated)),
            "ar_only": _table_dict(confusion_matrix(manual, ar_only)),
        },
        "ar_by_class": _table_dict(ar_by_class(manual, ar)),
        "spearman_ar_manual": spearman_ar_manual(ar, manual),
        "retrieval": _retrieval(rows),
        "ragas": _ragas(rows),
        "by_confidence": by_confidence(_column(rows, "id"), manual, automated,
                                       _column(rows, "automated_confidence")),
        "by_kind": by_kind(_column(rows, KIND_COLUMN), manual, automated),
    }
    return summary


KIND_COLUMN = "error_kind"
"""A question set's optional column that groups the answers by how they err (``none``,
``wrong_detail``, ``vague``, ...): the report gives the judge's agreement per group."""


def by_kind(kinds: Sequence[Any], manual: Sequence[Any], automated: Sequence[Any]
            ) -> dict[str, dict[str, Any]] | None:
    """Per kind of answer (``KIND_COLUMN``), over its items with a manual label: how many, the
    manual and the automated labels given (C, PC, I counts; "none" for an item not labelled),
    and the share of automated labels equal to the manual ones. Which kinds of error the judge
    lets through (vague answers labelled C, say) shows here. None when no item has a kind."""
    groups: dict[str, list[tuple[Any, Any]]] = {}
    for k, m, a in zip(kinds, manual, automated, strict=True):
        if not is_missing(k) and str(k).strip() and m is not None:
            groups.setdefault(str(k).strip(), []).append((m, a))
    if not groups:
        return None

    def counts(labels: Sequence[Any]) -> dict[str, int]:
        found = {c: sum(x == c for x in labels) for c in CLASSES}
        missing = sum(x is None for x in labels)
        return {**found, "none": missing} if missing else found

    return {k: {"n": len(g), "manual": counts([m for m, _ in g]),
                "automated": counts([a for _, a in g]),
                "accuracy": round(sum(m == a for m, a in g) / len(g), 3)}
            for k, g in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))}


def trust_lines(confidence: dict[str, Any] | None, kinds: dict[str, Any] | None) -> list[str]:
    """The label model's confidence and the agreement per kind of answer as short lines for a
    terminal (``aula eval`` and ``aula judge`` print them under the agreement)."""
    out: list[str] = []
    conf = confidence or {}
    halves = [f"{name} (n={conf[k]['n']}, P {conf[k]['confidence_min']:.2f}–"
              f"{conf[k]['confidence_max']:.2f}): acurácia {_fmt(conf[k].get('accuracy'), 2)}, "
              f"kappa linear {_fmt(conf[k].get('kappa_linear'), 2)}"
              for k, name in (("confident", "metade mais confiante"),
                              ("unsure", "menos confiante")) if k in conf]
    if halves:
        out.append("confiança do modelo de rótulos: " + "; ".join(halves))
    cal = conf.get("calibration")
    if cal:
        bins = ", ".join(f"{b['confidence']:.2f}→{b['accuracy']:.2f} (n={b['n']})"
                         for b in cal["bins"] if b["n"])
        out.append(f"calibração (confiança→acerto): {bins}; ECE {_fmt(cal['ece'], 2)}, "
                   f"Brier {_fmt(cal['brier'], 2)}")
    if conf.get("check_first"):
        out.append("revise primeiro: " + ", ".join(
            f"{x['id']} ({x['automated']}, {x['confidence']:.2f})" for x in conf["check_first"]))
    if kinds:
        out.append("acertos por tipo de resposta: " + ", ".join(
            f"{k} {round(v['accuracy'] * v['n'])}/{v['n']}" for k, v in kinds.items()))
    return out


def _counts_text(counts: dict[str, int]) -> str:
    return " · ".join(f"{c} {n}" for c, n in counts.items() if n)


def _kind_body(summary: dict[str, Any]) -> list[list[Any]]:
    return [[k, v["n"], _counts_text(v["manual"]), _counts_text(v["automated"]), v["accuracy"]]
            for k, v in (summary.get("by_kind") or {}).items()]


KIND_HEADER = ["tipo de resposta", "n", "manual", "automatizada", "acerto"]
KIND_TITLE = "Concordância por tipo de resposta"


CHECK_FIRST = 10
"""How many of the least confident automated labels the report names, to be read first."""


def by_confidence(ids: Sequence[Any], manual: Sequence[Any], automated: Sequence[Any],
                  confidence: Sequence[Any]) -> dict[str, Any] | None:
    """How far the label model's confidence (its probability for the label it gave) tells
    which automated labels to trust: agreement with the manual labels on the more confident
    half of the labelled items and on the less confident half (split at the median), and the
    ``CHECK_FIRST`` least confident items of the run, manual label or not. None when no label
    came from a label model."""
    scored = [(i, m, a, float(c)) for i, m, a, c in zip(ids, manual, automated, confidence,
                                                        strict=True)
              if a is not None and not is_missing(c)]
    if not scored:
        return None
    out: dict[str, Any] = {
        "n": len(scored),
        "check_first": [{"id": i, "automated": a, "confidence": round(c, 3)}
                        for i, _, a, c in sorted(scored, key=lambda x: x[3])[:CHECK_FIRST]],
    }
    rated = sorted((x for x in scored if x[1] is not None), key=lambda x: -x[3])
    if len(rated) >= 2:
        half = (len(rated) + 1) // 2
        for name, part in (("confident", rated[:half]), ("unsure", rated[half:])):
            out[name] = {**agreement([x[1] for x in part], [x[2] for x in part]),
                         "confidence_min": round(part[-1][3], 3),
                         "confidence_max": round(part[0][3], 3)}
    if rated:
        out["calibration"] = calibration([x[3] for x in rated], [x[1] == x[2] for x in rated])
    return out


CALIBRATION_EDGES = (1 / 3, 0.5, 0.65, 0.8, 1.0)
"""Bins of the label model's confidence. With three labels the probability of the likeliest
is at least 1/3, so the first bin starts there (a lower value, from a hand-made model, joins
it)."""


def calibration(confidence: Sequence[float], right: Sequence[bool]) -> dict[str, Any]:
    """Whether the confidence can be read as a rate: per bin of ``CALIBRATION_EDGES``, how many
    labels, their mean confidence and the share of them the instructor agreed with; the
    expected calibration error (the bins' gaps, weighted by their size; 0 for a model whose
    "70%" labels are right 70% of the time) and the Brier score of the label being right."""
    n = len(confidence)
    bins: list[dict[str, Any]] = []
    ece = 0.0
    for k, (lo, hi) in enumerate(itertools.pairwise(CALIBRATION_EDGES)):
        last = k == len(CALIBRATION_EDGES) - 2
        inside = [(c, r) for c, r in zip(confidence, right, strict=True)
                  if (k == 0 or c >= lo) and (c < hi or last)]
        if not inside:
            bins.append({"from": round(lo, 3), "to": round(hi, 3), "n": 0,
                         "confidence": None, "accuracy": None})
            continue
        mean_c = sum(c for c, _ in inside) / len(inside)
        acc = sum(r for _, r in inside) / len(inside)
        ece += len(inside) / n * abs(acc - mean_c)
        bins.append({"from": round(lo, 3), "to": round(hi, 3), "n": len(inside),
                     "confidence": round(mean_c, 3), "accuracy": round(acc, 3)})
    brier = sum((c - r) ** 2 for c, r in zip(confidence, right, strict=True)) / n
    return {"n": n, "bins": bins, "ece": round(ece, 3), "brier": round(brier, 3)}


def _calibration_body(summary: dict[str, Any]) -> list[list[Any]]:
    cal = (summary.get("by_confidence") or {}).get("calibration") or {}
    return [[f"{b['from']:.2f}–{b['to']:.2f}", b["n"], b["confidence"], b["accuracy"]]
            for b in cal.get("bins", [])]


CALIBRATION_HEADER = ["confiança", "rótulos (n)", "confiança média", "acerto"]


def _calibration_note(summary: dict[str, Any]) -> str:
    cal = (summary.get("by_confidence") or {}).get("calibration") or {}
    return (f"Calibração (n={cal.get('n')}): erro de calibração esperado (ECE) "
            f"{_fmt(cal.get('ece'))}, Brier {_fmt(cal.get('brier'))}. Bem calibrado, o acerto "
            "de cada faixa fica perto da sua confiança média.")


def _confidence_body(summary: dict[str, Any]) -> list[list[Any]]:
    conf = summary.get("by_confidence") or {}
    names = {"confident": "Metade mais confiante", "unsure": "Metade menos confiante"}
    return [[names[k], conf[k].get("n"), f"{conf[k]['confidence_min']:.2f}–"
             f"{conf[k]['confidence_max']:.2f}", conf[k].get("accuracy"),
             conf[k].get("kappa_linear"), _interval(conf[k].get("accuracy_ci"))]
            for k in ("confident", "unsure") if k in conf]


CONFIDENCE_HEADER = ["Rótulos do modelo", "n", "confiança", "accuracy", "kappa_linear",
                     "IC 95% acurácia"]
CONFIDENCE_NOTE = ("Confiança: a probabilidade que o modelo de rótulos dá ao rótulo escolhido. "
                   "Revise primeiro os itens de menor confiança:")


def _check_first(summary: dict[str, Any]) -> str:
    conf = summary.get("by_confidence") or {}
    return ", ".join(f"{x['id']} ({x['automated']}, {x['confidence']:.2f})"
                     for x in conf.get("check_first", []))


RAGAS_METRICS = ("answer_relevancy", "faithfulness", "context_precision", "context_recall")


def _ragas(rows: pd.DataFrame) -> dict[str, dict[str, Any]] | None:
    """Per ragas metric: mean over scored items, how many were scored, failed (an error names
    the metric) or skipped (not asked, e.g. precision without a reference answer)."""
    if not any(f"ragas_{m}" in rows.columns for m in RAGAS_METRICS):
        return None
    errors = [str(e or "") for e in _column(rows, "ragas_error")] or [""] * len(rows)
    out: dict[str, dict[str, Any]] = {}
    for metric in RAGAS_METRICS:
        values = _column(rows, f"ragas_{metric}")
        failed = sum(v is None and f"{metric}: " in e for v, e in zip(values, errors,
                                                                       strict=True))
        scored = [v for v in values if v is not None]
        out[metric] = {"mean": _mean(scored), "n_scored": len(scored), "n_failed": failed,
                       "n_skipped": len(values) - len(scored) - failed}
    return out


def _ragas_body(summary: dict[str, Any]) -> list[list[Any]]:
    return [[m, *v.values()] for m, v in (summary.get("ragas") or {}).items()]


RAGAS_HEADER = ["métrica ragas", "média", "avaliados", "falhas", "não pedidos"]


def _table_dict(table: pd.DataFrame) -> dict[str, dict[str, Any]]:
    return {
        str(index): {str(col): _nan_to_none(_plain(v)) for col, v in row.items()}
        for index, row in table.to_dict(orient="index").items()
    }


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def _retrieval(rows: pd.DataFrame) -> dict[str, Any] | None:
    # a gold lecture without its span says which video, not which minute: no span to hit
    gold = [g is not None and a is not None and b is not None for g, a, b in zip(
        _column(rows, "gold_lecture"), _column(rows, "gold_start"), _column(rows, "gold_end"),
        strict=True)]
    searched = ([True] * len(rows) if "retrieved" not in rows.columns
                else [bool(x) for x in _column(rows, "retrieved")])
    ranks = [r for g, r, s in zip(gold, _column(rows, "hit_rank"), searched, strict=True)
             if g and s]
    if not ranks:
        return None
    ints = [None if r is None else int(r) for r in ranks]
    result: dict[str, Any] = {"n": len(ints)}
    for k in HIT_KS:
        result[f"hit@{k}"] = hit_at_k(ints, k)
    result["mrr"] = mrr(ints)
    return result


def confusion_frame(summary: dict[str, Any], which: str) -> pd.DataFrame:
    """A confusion matrix of ``summarise``'s output back as a table (rows manual, cols auto)."""
    data = summary["confusion"][which]
    table = pd.DataFrame(
        [[data[m][a] for a in CLASSES] for m in CLASSES],
        index=pd.Index(CLASSES, name="manual"),
        columns=pd.Index(CLASSES, name="automated"),
    )
    return table


# ---------------------------------------------------------------------------------------------
# Markdown.


def _fmt(value: Any, digits: int = 3) -> str:
    if is_missing(value):
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _md_table(header: Sequence[str], body: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in body]
    return "\n".join(lines)


AGREEMENT_HEADER = ["Rótulo", *AGREEMENT_KEYS, "IC 95% acurácia", "IC 95% κ linear"]
"""The agreement table's columns: the figures, then their bootstrap intervals."""


def _interval(ci: Any) -> str:
    return "—" if not ci else f"{ci[0]:.2f}–{ci[1]:.2f}"


def _agreement_body(summary: dict[str, Any]) -> list[list[Any]]:
    names = {"automated": "Anotação automatizada", "ar_only": "AR apenas (3→C, 1–2→PC, 0→I)"}
    rows = []
    for key in ("automated", "ar_only"):
        ag = summary["agreement"][key]
        rows.append([names[key], *(ag.get(k) for k in AGREEMENT_KEYS),
                     _interval(ag.get("accuracy_ci")), _interval(ag.get("kappa_linear_ci"))])
    return rows


def _per_class_body(summary: dict[str, Any]) -> list[list[Any]]:
    """Precision and recall of the automated labels per class: how far to trust a C or an I."""
    per = summary["agreement"]["automated"].get("per_class") or {}
    return [[c, per[c]["support"], per[c]["precision"], per[c]["recall"]]
            for c in CLASSES if c in per]


def _confusion_tables(summary: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
    """The two confusion matrices (automated, AR only) as (title, header, body), rows manual."""
    tables = []
    for which, title in (("automated", "Anotação automatizada"), ("ar_only", "AR apenas")):
        table = confusion_frame(summary, which)
        tables.append((title, ["manual \\ auto", *CLASSES],
                       [[m, *table.loc[m].tolist()] for m in CLASSES]))
    return tables


def _ar_by_class(summary: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """AR per manual class (count, mean, median) as (header, body)."""
    return (["manual", "count", "mean", "median"],
            [[c, *summary["ar_by_class"][c].values()] for c in CLASSES])


def summary_markdown(rows: pd.DataFrame, summary: dict[str, Any]) -> str:
    """The summary as Markdown: counts, agreement, confusion matrices, AR per class, retrieval."""
    parts = _md_overview(summary)
    if summary.get("by_confidence"):
        parts += _md_confidence(summary)
    if summary.get("by_kind"):
        parts += ["", f"## {KIND_TITLE} ({KIND_COLUMN})", "",
                  _md_table(KIND_HEADER, _kind_body(summary))]
    for title, header, body in _confusion_tables(summary):
        parts += ["", f"## Matriz de confusão: {title} (linhas: manual)", "",
                  _md_table(header, body)]
    parts += ["", "## AR por classe manual", "", _md_table(*_ar_by_class(summary))]
    retrieval = summary.get("retrieval")
    if retrieval:
        parts += [
            "",
            "## Recuperação (spans de referência)",
            "",
            _md_table(list(retrieval), [list(retrieval.values())]),
        ]
    if summary.get("ragas"):
        parts += ["", "## ragas", "", _md_table(RAGAS_HEADER, _ragas_body(summary))]
    return "\n".join(parts) + "\n"


def _md_overview(summary: dict[str, Any]) -> list[str]:
    """The Markdown report's counts and its agreement with the manual labels."""
    missing = summary["missing"]
    return [
        "# Avaliação",
        "",
        f"- Perguntas: {summary['n']} (com anotação manual: {summary['n_manual']})",
        f"- Sem resposta: {missing['answer']}; AR ilegível ou ausente: {missing['ar_score']}; "
        f"sem anotação automatizada: {missing['automated']}",
        f"- AR médio: {_fmt(summary['ar_mean'])}; correção média: "
        f"{_fmt(summary['correctness_mean'])}",
        f"- Spearman (AR × anotação manual): {_fmt(summary['spearman_ar_manual'])}",
        "",
        "## Concordância com a anotação manual",
        "",
        _md_table(AGREEMENT_HEADER, _agreement_body(summary)),
        "",
        "Intervalos: bootstrap sobre os itens (1000 reamostras). Por classe, anotação "
        "automatizada:",
        "",
        _md_table(["classe", "manual (n)", "precisão", "revocação"], _per_class_body(summary)),
    ]


def _md_confidence(summary: dict[str, Any]) -> list[str]:
    """The Markdown section on the label model's confidence and its calibration."""
    parts = ["", "## Confiança da anotação automatizada", ""]
    halves = _confidence_body(summary)
    if halves:
        parts += [_md_table(CONFIDENCE_HEADER, halves), ""]
    parts += [CONFIDENCE_NOTE, "", _check_first(summary)]
    if _calibration_body(summary):
        parts += ["", _calibration_note(summary), "",
                  _md_table(CALIBRATION_HEADER, _calibration_body(summary))]
    return parts


# ---------------------------------------------------------------------------------------------
# HTML.

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2rem auto;padding:0 1rem;
color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}
th,td{border:1px solid #ccc;padding:.3rem .6rem;text-align:right;vertical-align:top}
th:first-child,td:first-child,td.text{text-align:left}
th{background:#f3f3f3}
.figures{display:flex;flex-wrap:wrap;gap:1rem}
.figures img{max-width:100%;height:auto}
td.text{max-width:40rem}
"""


def _html_table(header: Sequence[str], body: Sequence[Sequence[Any]], cls: str = "") -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    rows = []
    for row in body:
        cells = "".join(
            f'<td class="text">{html.escape(_fmt(v))}</td>'
            if isinstance(v, str) and len(v) > 12
            else f"<td>{html.escape(_fmt(v))}</td>"
            for v in row
        )
        rows.append(f"<tr>{cells}</tr>")
    attr = f' class="{cls}"' if cls else ""
    return f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _png(draw: Callable[[Any], None], size: tuple[float, float] = (4.2, 3.6)) -> str:
    """A matplotlib figure drawn by ``draw(fig)`` as a base64 PNG (Agg, no pyplot state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=100)
    FigureCanvasAgg(fig)
    draw(fig)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _heatmap(table: pd.DataFrame, title: str) -> Callable[[Any], None]:
    def draw(fig: Any) -> None:
        ax = fig.add_subplot()
        values = table.to_numpy(dtype=float)
        ax.imshow(values, cmap="Blues", vmin=0, vmax=max(1.0, values.max()))
        ax.set_xticks(range(len(CLASSES)), CLASSES)
        ax.set_yticks(range(len(CLASSES)), CLASSES)
        ax.set_xlabel("automated")
        ax.set_ylabel("manual")
        ax.set_title(title)
        for i in range(len(CLASSES)):
            for j in range(len(CLASSES)):
                dark = values[i, j] > values.max() / 2
                ax.text(
                    j,
                    i,
                    str(int(values[i, j])),
                    ha="center",
                    va="center",
                    color="white" if dark else "black",
                )

    return draw


def _ar_histogram(rows: pd.DataFrame) -> Callable[[Any], None]:
    manual, ar = _column(rows, "manual"), _column(rows, "ar")

    def draw(fig: Any) -> None:
        ax = fig.add_subplot()
        bins = [-1 / 6 + i / 3 for i in range(5)]  # centred on 0, 1/3, 2/3, 1
        data = [
            [float(a) for m, a in zip(manual, ar, strict=True) if m == c and a is not None]
            for c in CLASSES
        ]
        ax.hist(
            data, bins=bins, label=[f"{c} (n={len(d)})" for c, d in zip(CLASSES, data, strict=True)]
        )
        ax.set_xticks([0, 1 / 3, 2 / 3, 1], ["0", "0.33", "0.67", "1"])
        ax.set_xlabel("AR")
        ax.set_ylabel("questions")
        ax.set_title("AR per manual class")
        ax.legend()

    return draw


def _reliability(summary: dict[str, Any]) -> Callable[[Any], None]:
    """The reliability diagram: each confidence bin's share of right labels against its mean
    confidence, the diagonal where they would be equal, each point marked with its n."""
    bins = [b for b in summary["by_confidence"]["calibration"]["bins"] if b["n"]]

    def draw(fig: Any) -> None:
        ax = fig.add_subplot()
        ax.plot([0, 1], [0, 1], linestyle="--", color="grey", label="calibrated")
        xs, ys = [b["confidence"] for b in bins], [b["accuracy"] for b in bins]
        ax.plot(xs, ys, marker="o", label="label model")
        for b in bins:
            ax.annotate(f"n={b['n']}", (b["confidence"], b["accuracy"]),
                        textcoords="offset points", xytext=(4, -10), fontsize=8)
        ax.set_xlim(0.3, 1.0)
        ax.set_ylim(0.0, 1.0)
        ax.set_xlabel("confidence (mean of the bin)")
        ax.set_ylabel("agrees with the instructor")
        ax.set_title("label confidence: reliability")
        ax.legend(loc="upper left")

    return draw


def summary_html(rows: pd.DataFrame, summary: dict[str, Any]) -> str:
    """A self-contained HTML page: inline CSS, the summary tables, plots as base64 PNG, and a
    table of the questions."""
    body = _html_overview(summary)
    if summary.get("by_confidence"):
        body += _html_confidence(summary)
    if summary.get("by_kind"):
        body += [f"<h2>{html.escape(KIND_TITLE)} ({KIND_COLUMN})</h2>",
                 _html_table(KIND_HEADER, _kind_body(summary), cls="by-kind")]
    for title, header, table in _confusion_tables(summary):
        body += [f"<h2>Matriz de confusão: {html.escape(title)}</h2>", _html_table(header, table)]
    body += ["<h2>AR por classe manual</h2>", _html_table(*_ar_by_class(summary))]
    retrieval = summary.get("retrieval")
    if retrieval:
        body += ["<h2>Recuperação</h2>", _html_table(list(retrieval), [list(retrieval.values())])]
    if summary.get("ragas"):
        body += ["<h2>ragas</h2>", _html_table(RAGAS_HEADER, _ragas_body(summary))]
    body.append('<div class="figures">')
    body += [
        f'<figure><img alt="{html.escape(t)}" src="data:image/png;base64,{png}">'
        f"<figcaption>{html.escape(t)}</figcaption></figure>"
        for t, png in _html_figures(rows, summary)
    ]
    body.append("</div>")
    body += _html_questions(rows)
    return (
        '<!DOCTYPE html>\n<html lang="pt"><head><meta charset="utf-8">'
        f"<title>Avaliação</title><style>{_CSS}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def _html_figures(rows: pd.DataFrame, summary: dict[str, Any]) -> list[tuple[str, str]]:
    """(caption, base64 PNG) of each plot: the confusion heatmaps, AR per class, and the
    reliability diagram when the label model's confidence is calibrated."""
    figures = [
        (
            "Matriz de confusão: anotação automatizada",
            _png(_heatmap(confusion_frame(summary, "automated"), "automated vs manual")),
        ),
        (
            "Matriz de confusão: AR apenas",
            _png(_heatmap(confusion_frame(summary, "ar_only"), "AR-only vs manual")),
        ),
        ("AR por classe manual", _png(_ar_histogram(rows), size=(5.0, 3.6))),
    ]
    if summary.get("by_confidence") and _calibration_body(summary):
        figures.append(("Calibração da confiança do modelo de rótulos",
                        _png(_reliability(summary), size=(4.2, 3.6))))
    return figures


def _html_overview(summary: dict[str, Any]) -> list[str]:
    """The HTML report's counts and its agreement with the manual labels."""
    missing = summary["missing"]
    counts = [
        ["Perguntas", summary["n"]],
        ["Com anotação manual", summary["n_manual"]],
        ["Sem resposta", missing["answer"]],
        ["AR ilegível ou ausente", missing["ar_score"]],
        ["Sem anotação automatizada", missing["automated"]],
        ["AR médio", summary["ar_mean"]],
        ["Correção média", summary["correctness_mean"]],
        ["Spearman (AR × manual)", summary["spearman_ar_manual"]],
    ]
    return [
        "<h1>Avaliação</h1>",
        _html_table(["", "valor"], counts),
        "<h2>Concordância com a anotação manual</h2>",
        _html_table(AGREEMENT_HEADER, _agreement_body(summary), cls="agreement"),
        "<p>Intervalos: bootstrap sobre os itens (1000 reamostras). Por classe, anotação "
        "automatizada:</p>",
        _html_table(["classe", "manual (n)", "precisão", "revocação"],
                    _per_class_body(summary), cls="per-class"),
    ]


def _html_confidence(summary: dict[str, Any]) -> list[str]:
    """The HTML section on the label model's confidence and its calibration."""
    body = ["<h2>Confiança da anotação automatizada</h2>"]
    halves = _confidence_body(summary)
    if halves:
        body.append(_html_table(CONFIDENCE_HEADER, halves, cls="confidence"))
    body.append(f'<p class="check-first">{html.escape(CONFIDENCE_NOTE)} '
                f"{html.escape(_check_first(summary))}</p>")
    if _calibration_body(summary):
        body += [f"<p>{html.escape(_calibration_note(summary))}</p>",
                 _html_table(CALIBRATION_HEADER, _calibration_body(summary),
                             cls="calibration")]
    return body


_QUESTION_COLUMNS = ("id", "question", "manual", "automated", "ar_only", "ar", "correctness",
                     "ar_error")


def _html_questions(rows: pd.DataFrame) -> list[str]:
    """The table of the questions (those of ``_QUESTION_COLUMNS`` the rows have), if any."""
    columns = [c for c in _QUESTION_COLUMNS if c in rows.columns]
    if not columns:
        return []
    return [
        "<h2>Perguntas</h2>",
        _html_table(
            columns,
            [[_column(rows, c)[i] for c in columns] for i in range(len(rows))],
            cls="questions",
        ),
    ]


# ---------------------------------------------------------------------------------------------
# Files.


def _atomic(path: Path, write: Callable[[Path], None]) -> Path:
    """Run ``write(tmp)`` on a temporary file next to ``path``, then move it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""

    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")

    return _atomic(Path(path), write)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, numbers.Integral):
        return "int"
    if isinstance(value, numbers.Real):
        return "float"
    return "str" if isinstance(value, str) else "other"


def _as_text(value: Any) -> str | None:
    if is_missing(value):
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _parquet_safe(rows: pd.DataFrame) -> pd.DataFrame:
    """Object columns that mix types become one type: numbers float, the rest text (lists and
    dicts as JSON), so CSV and Parquet hold the same thing."""
    out = rows.copy()
    for name in out.columns:
        if out[name].dtype != object:
            continue
        kinds = {_kind(v) for v in out[name] if not is_missing(v)}
        if len(kinds) <= 1 and kinds <= {"str", "int", "float", "bool"}:
            continue
        if kinds <= {"int", "float"}:
            out[name] = [None if is_missing(v) else float(v) for v in out[name]]
        else:
            out[name] = [_as_text(v) for v in out[name]]
    return out


def write_rows(rows: pd.DataFrame, out_dir: str | Path) -> list[Path]:
    """``rows.csv`` and ``rows.parquet`` in ``out_dir`` (lists stored as JSON text)."""
    out = Path(out_dir)
    safe = _parquet_safe(rows)
    return [
        _atomic(out / "rows.csv", lambda tmp: safe.to_csv(tmp, index=False)),
        _atomic(out / "rows.parquet", lambda tmp: safe.to_parquet(tmp, index=False)),
    ]


def write_summary(rows: pd.DataFrame, summary: dict[str, Any], out_dir: str | Path) -> list[Path]:
    """``summary.json``, ``summary.md`` and ``summary.html`` in ``out_dir``."""
    out = Path(out_dir)
    return [
        write_text(out / "summary.json", json.dumps(summary, ensure_ascii=False, indent=2)),
        write_text(out / "summary.md", summary_markdown(rows, summary)),
        write_text(out / "summary.html", summary_html(rows, summary)),
    ]


def write_records(records: list[Record], path: str | Path, hide_urls: bool = False) -> Path:
    """The per-question report in the study's Markdown shape (``record.render_records``)."""
    return write_text(path, render_records(records, hide_urls=hide_urls))
