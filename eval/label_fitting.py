"""Fitting the label model (``eval.label_model``) on manually labelled items.

The signals (``eval.signals.FEATURES``) are standardised and fed to a multinomial logistic
regression (``eval.fitting.fit_classes``: scikit-learn, balanced class weights); the one that
labels an answer from its words and likelihood gains alone is ordinal (``fit_ordinal``: one score,
I < PC < C cut apart on it), which held better for a writer left out of the fit
(docs/judges.md). Which signals each reads is chosen by forward selection on
leave-one-question-out agreement (linear-weighted kappa) over the fitting items: a signal is kept
only when adding it makes the labels of questions left out of the fit agree better. Answers to
one question share their evidence, so leaving one answer out would flatter the fit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from corpus.errors import InputError
from eval.claims import recorded_probabilities
from eval.fitting import fit_classes, fit_ordinal
from eval.label_model import LabelModel, Row, Submodel
from eval.labels import Thresholds, fit_thresholds, loo_labels, normalise_label
from eval.metrics import ORDINAL, accuracy, agreement, cohen_kappa
from eval.run import Pipeline, automated_label, load_items, read_scale
from eval.signals import (
    AULA,
    AULA_ANSWER,
    EVIDENCE_FEATURES,
    FEATURES,
    LIKELIHOOD_FEATURES,
    LOCATED_FEATURES,
    QUESTION_FEATURES,
    REFERENCE_FEATURES,
    REFERENCE_READ_FEATURES,
    WORD_FEATURES,
)
from eval.signals import (
    features as item_signals,
)

C_GRID = (0.1, 0.3, 1.0, 3.0)
GOLD_OR_REFERENCE = (*REFERENCE_FEATURES, *EVIDENCE_FEATURES)
"""What an item judged with a reference answer or at a gold span has: the located submodels'
``unless``."""
MIN_AULA_ITEMS = 30
"""Fewer fitting answers of this service than this (or from fewer than ``MIN_AULA_GROUPS``
questions) and they are fitted with the others, with no submodels of their own."""
MIN_AULA_GROUPS = 6


def fit_submodel(rows: Sequence[Row], labels: Sequence[str], features: Sequence[str],
                 c: float = 1.0, *, ordinal: bool = False) -> Submodel:
    """Logistic regression of ``labels`` on ``features`` (every row must have them):
    multinomial, or ``ordinal`` (cumulative logit, the labels in ``eval.metrics.ORDINAL``'s
    order: worst to best)."""
    if not rows:
        raise InputError("no labelled items with these signals to fit on")
    x = np.array([[float(r[f] or 0.0) for f in features] for r in rows], dtype=np.float64)
    if len(set(labels)) < 2:
        raise InputError("the labelled items all have one label: nothing to tell apart")
    if ordinal:
        fitted = fit_ordinal(x, labels, sorted(set(labels), key=ORDINAL.__getitem__), c=c)
    else:
        fitted = fit_classes(x, labels, c=c, max_iter=2000)
    return Submodel(features=tuple(features), mean=tuple(fitted["mean"]),
                    scale=tuple(fitted["scale"]), coef=tuple(map(tuple, fitted["coef"])),
                    intercept=tuple(fitted["intercept"]), classes=tuple(fitted["classes"]),
                    c=c, ordinal=ordinal)


def leave_group_out(rows: Sequence[Row], labels: Sequence[str], groups: Sequence[str],
                    features: Sequence[str], c: float = 1.0, *, ordinal: bool = False
                    ) -> list[str | None]:
    """Each row's label from a model fitted without its group (question)."""
    out: list[str | None] = []
    cache: dict[str, Submodel | None] = {}
    for row, g in zip(rows, groups, strict=True):
        if g not in cache:
            idx = [i for i, h in enumerate(groups) if h != g]
            try:
                cache[g] = fit_submodel([rows[i] for i in idx], [labels[i] for i in idx],
                                        features, c, ordinal=ordinal)
            except InputError:
                cache[g] = None
        m = cache[g]
        out.append(None if m is None else m.predict(row))
    return out


def _score(manual: Sequence[str], predicted: Sequence[str | None]) -> tuple[float, float]:
    kappa = cohen_kappa(list(manual), list(predicted), weights="linear")
    return (-1.0 if kappa is None else kappa, accuracy(list(manual), list(predicted)) or 0.0)


def select_features(rows: Sequence[Row], labels: Sequence[str], groups: Sequence[str],
                    candidates: Sequence[str], c_grid: Sequence[float] = C_GRID, *,
                    ordinal: bool = False
                    ) -> tuple[tuple[str, ...], float, list[dict[str, Any]]]:
    """Forward selection on leave-one-group-out (linear kappa, then accuracy) at C=1, then the
    regularisation for the chosen features: the features, C, and each step's figures (what
    every candidate would have made of the labels of the questions left out)."""
    chosen: list[str] = []
    best = (-math.inf, -math.inf)
    steps: list[dict[str, Any]] = []
    while True:
        tried = {f: _score(labels, leave_group_out(rows, labels, groups, [*chosen, f],
                                                   ordinal=ordinal))
                 for f in candidates if f not in chosen}
        steps.append({"with": list(chosen),
                      "adding": {f: [round(k, 4), round(a, 4)] for f, (k, a) in tried.items()}})
        if not tried:
            break
        f, key = max(tried.items(), key=lambda kv: kv[1])
        if key <= best:
            break
        best = key
        chosen.append(f)
    if not chosen:
        raise InputError("no signal tells the labels apart on questions left out of the fit")
    by_c = {c: _score(labels, leave_group_out(rows, labels, groups, chosen, c, ordinal=ordinal))
            for c in c_grid}
    best_c = max(c_grid, key=lambda c: (by_c[c], c == 1.0))
    steps.append({"with": list(chosen), "c": {str(c): list(v) for c, v in by_c.items()}})
    return tuple(chosen), best_c, steps


class Variant(NamedTuple):
    """A submodel to fit: its name in the figures, the signals it may choose from, and
    whether it reads a located passage (tried only for an item with neither gold span nor
    reference answer, and only kept when it chose a located signal), and whether it is
    ordinal (``fit_submodel``)."""

    name: str
    signals: list[str]
    located: bool = False
    ordinal: bool = False


def _variants(candidates: Sequence[str], quick: bool = False) -> list[Variant]:
    """The submodels to fit, in the order they are tried: one that may read every signal;
    (``quick``) one that reads only the answer's words and likelihood gains against its
    reference (``REFERENCE_READ_FEATURES``), for an answer judged without the judge's LLM;
    one without the words (the reference's and the lecture's), for an answer in another
    language than its reference (the likelihood gain still reads it); one without the gains,
    for a judge run with no likelihood scorer (``AULA_JUDGE_LIKELIHOOD=off``); one without any
    reference signal (the evidence gain and the lecture's words still read the gold span); one
    with neither (the service's judge, which loads no scorer); one without words either, for
    an answer in another language than the lecture with nothing else to read it by.

    The located signals (``LOCATED_FEATURES``: the lecture's words and gain at the passage the
    retriever puts first, for an answer given with neither a gold span nor a reference answer)
    are read by two submodels of their own, tried first and only for an item with neither
    (``Submodel.unless``): with the signals of the question and answer alone
    (``QUESTION_FEATURES``; the claim check of such an answer reads retrieved passages, not the
    gold span the fitting items were checked against), and the same without the gain."""
    located = [f for f in candidates if f in LOCATED_FEATURES]
    candidates = [f for f in candidates if f not in LOCATED_FEATURES]
    out: list[Variant] = []
    if located:
        plain = [f for f in candidates if f in QUESTION_FEATURES]
        out.append(Variant("located", plain + located, located=True))
        if any(f in LIKELIHOOD_FEATURES for f in located):
            out.append(Variant("located_without_gain",
                               plain + [f for f in located if f not in LIKELIHOOD_FEATURES],
                               located=True))
    out.append(Variant("with_reference", list(candidates)))
    read = [f for f in candidates if f in REFERENCE_READ_FEATURES]
    if quick and read:
        # an answer with a reference judged without the judge's LLM (`aula judge` unless
        # --reasoning): its words and gains alone
        out.append(Variant("reference_read", read, ordinal=True))
    if any(f in WORD_FEATURES for f in candidates):
        out.append(Variant("reference_without_words",
                           [f for f in candidates if f not in WORD_FEATURES]))
    if any(f in LIKELIHOOD_FEATURES for f in candidates):
        out.append(Variant("reference_without_gain",
                           [f for f in candidates if f not in LIKELIHOOD_FEATURES]))
    if any(f in REFERENCE_FEATURES for f in candidates):
        out.append(Variant("without_reference",
                           [f for f in candidates if f not in REFERENCE_FEATURES]))
    if any(f in LIKELIHOOD_FEATURES and f not in REFERENCE_FEATURES for f in candidates):
        out.append(Variant("without_reference_or_gain",
                           [f for f in candidates
                            if f not in REFERENCE_FEATURES and f not in LIKELIHOOD_FEATURES]))
    if any(f in WORD_FEATURES and f not in REFERENCE_FEATURES for f in candidates):
        out.append(Variant("without_reference_gain_or_words",
                           [f for f in candidates if f not in REFERENCE_FEATURES
                            and f not in LIKELIHOOD_FEATURES and f not in WORD_FEATURES]))
    return out


def fits_apart(is_aula: Sequence[bool], labels: Sequence[str], groups: Sequence[str]) -> bool:
    """Whether the answers of this service's among these fitting items (``is_aula``) are
    enough to get submodels of their own (``MIN_AULA_ITEMS`` answers, ``MIN_AULA_GROUPS``
    questions, two labels)."""
    aula = [i for i, a in enumerate(is_aula) if a]
    return (len(aula) >= MIN_AULA_ITEMS and len({groups[i] for i in aula}) >= MIN_AULA_GROUPS
            and len({labels[i] for i in aula}) >= 2)


def fit_label_model(rows: Sequence[Row], labels: Sequence[str], groups: Sequence[str],
                    candidates: Sequence[str], *, judge_model: str = "",
                    likelihood_model: str = "", match_model: str = "") -> LabelModel:
    """Submodels chosen and fitted on the rows that have their signals (``_variants``): the
    first that may read every signal, then ones that read fewer; a variant whose signals are
    the same as an earlier one's is skipped. When the rows hold at least ``MIN_AULA_ITEMS``
    answers of this service (``AULA_ANSWER``) from ``MIN_AULA_GROUPS`` questions, those get
    submodels of their own, fitted on them alone and tried first (named ``aula:VARIANT`` in the
    figures), and the others are fitted on the rest."""
    is_aula = [bool(r.get(AULA_ANSWER)) for r in rows]
    parts = [("", list(range(len(rows))))]
    if fits_apart(is_aula, labels, groups):
        aula = [i for i, a in enumerate(is_aula) if a]
        rest = [i for i, a in enumerate(is_aula) if not a]
        # only answers of this service's to fit on: no submodels for the others (the
        # thresholds label those)
        parts = [("aula:", aula)] + ([("", rest)] if rest else [])
    models: list[Submodel] = []
    figures: dict[str, Any] = {}
    for prefix, part in parts:
        # answers given to judge are labelled from their words and gains first; the
        # service's own are read with the judge's LLM too (``aula eval`` has generated them
        # anyway, and its copied-word answers need the claim check)
        got, figs = _fit_variants([rows[i] for i in part], [labels[i] for i in part],
                                  [groups[i] for i in part], candidates,
                                  quick=not prefix)
        models += [replace(m, aula_only=bool(prefix)) for m in got]
        figures.update({prefix + name: fig for name, fig in figs.items()})
    return LabelModel(models=tuple(models), judge_model=judge_model,
                      fitted_items=len(rows), likelihood_model=likelihood_model,
                      match_model=match_model,
                      figures=figures)


def _fit_variants(rows: Sequence[Row], labels: Sequence[str], groups: Sequence[str],
                  candidates: Sequence[str], *, quick: bool = False
                  ) -> tuple[list[Submodel], dict[str, Any]]:
    """The submodels of ``_variants`` fitted on ``rows``, in order, and each one's figures."""
    models: list[Submodel] = []
    figures: dict[str, Any] = {}
    seen: set[tuple[str, ...]] = set()
    for name, variant, located, ordinal in _variants(candidates, quick):
        # a signal most items lack (not measured by this judge) is no candidate
        cands = [f for f in variant if sum(r.get(f) is not None for r in rows) * 2 > len(rows)]
        if not cands or tuple(cands) in seen:
            continue
        seen.add(tuple(cands))
        idx = [i for i, r in enumerate(rows) if all(r.get(f) is not None for f in cands)]
        if len({labels[i] for i in idx}) < 2 or len({groups[i] for i in idx}) < 3:
            continue
        sub_rows = [rows[i] for i in idx]
        sub_labels = [labels[i] for i in idx]
        sub_groups = [groups[i] for i in idx]
        try:
            chosen, c, steps = select_features(sub_rows, sub_labels, sub_groups, cands,
                                               ordinal=ordinal)
        except InputError:
            # a fallback none of whose signals helps (or a located one: it only goes first):
            # the items go to the next
            if models or located:
                continue
            raise
        if located and not set(chosen) & set(LOCATED_FEATURES):
            # it would label every item with the question's signals alone, before the
            # submodels that read a gold span: only answers with a located passage are its own
            continue
        unless = GOLD_OR_REFERENCE if located else ()
        models.append(replace(fit_submodel(sub_rows, sub_labels, chosen, c, ordinal=ordinal),
                              unless=unless))
        figures[name] = {"signals": list(chosen), "items": len(idx), "selection": steps}
    if not models:
        raise InputError("too few labelled items with judge signals to fit a label model "
                         "(need two labels and three questions)")
    return models, figures


def loqo_predictions(model: LabelModel, rows: Sequence[Row], labels: Sequence[str],
                     groups: Sequence[str]) -> list[str | None]:
    """Each row's label when its question is left out of the fit, by the first submodel whose
    signals it has, with that submodel's chosen signals and C (chosen on all these rows, so the
    figure is optimistic); None where no submodel applies."""
    predicted: list[str | None] = [None] * len(rows)
    for m in model.models:
        todo = [i for i in range(len(rows)) if predicted[i] is None and m.usable(rows[i])]
        labs = leave_group_out([rows[i] for i in todo], [labels[i] for i in todo],
                               [groups[i] for i in todo], m.features, m.c, ordinal=m.ordinal)
        for i, lab in zip(todo, labs, strict=True):
            predicted[i] = lab
    return predicted


# --- fitting on judged items (``aula fit-labels``, bench/judge_agreement.py) ------------------


def read_judged(*sources: Path) -> pd.DataFrame:
    """The judged items of ``aula eval`` folders, judged JSONL/CSV files or ``aula judge
    --json``'s output, together; one error naming the source that cannot be read or was not
    judged."""
    return pd.concat([_judged(s) for s in sources], ignore_index=True)


def _judged(source: Path) -> pd.DataFrame:
    if source.is_dir():
        rows = pd.DataFrame(load_items(source))
    else:
        try:
            if source.suffix == ".json":  # `aula judge --json`: its items
                data = json.loads(source.read_text(encoding="utf-8"))
                rows = pd.DataFrame(data["items"] if isinstance(data, dict) else data)
            elif source.suffix == ".csv":
                rows = pd.read_csv(source)
            else:
                rows = pd.read_json(source, lines=True)
        except (OSError, ValueError, KeyError) as exc:  # unreadable, or not judged items
            raise InputError(f"{source}: cannot be read: {exc}".splitlines()[0]) from None
    if "manual" not in rows:
        raise InputError(f"{source}: no column 'manual' (judge labelled items first)")
    if "ar_score" not in rows and "reference_gain" not in rows:
        raise InputError(f"{source}: no judge signals (ar_score, reference_gain): judge the "
                         "items first")
    return rows


def judged_items(rows: Any) -> list[tuple[Any, ...]]:
    """``(ar, correctness, manual, claim_p)`` per judged row, for fitting thresholds."""
    return [
        (_score_of(r.get("ar_score")), _score_of(r.get("correctness_score")),
         r["manual"], recorded_probabilities(r) or None)
        for r in rows.to_dict("records")
    ]


def _score_of(value: Any) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def cross_validated(items: list[tuple[Any, ...]]) -> dict[str, Any]:
    """Leave-one-out agreement: each item labelled by thresholds fitted on the others."""
    manual, predicted = loo_labels(items)
    return agreement(manual, predicted)


def _labelled(rows: Any) -> list[dict[str, Any]]:
    """The judged rows with a manual label."""
    return [r for r in rows.to_dict("records") if normalise_label(r.get("manual"))]


def _origins_labels_groups(recs: list[dict[str, Any]]
                           ) -> tuple[list[bool], list[str], list[str]]:
    """For each labelled row (``_labelled``): whether the service wrote the answer, its manual
    label, and its question (what leave-one-question-out leaves out together)."""
    key = "question_id" if any(r.get("question_id") for r in recs) else "question"
    return ([r.get("origin") == AULA for r in recs],
            [str(normalise_label(r["manual"])) for r in recs],
            [str(r.get(key)) for r in recs])


def fit_model(rows: Any, candidates: Sequence[str] | None = None, *,
              support_at: float | None = None) -> LabelModel:
    """The label model fitted on the judged ``rows`` with manual labels, with its
    leave-one-question-out agreement in ``figures['loqo']``; ``candidates``: the signals it may
    choose from (default: every one, ``eval.signals.FEATURES``). ``support_at``: the claim P
    that counts as confirmed in ``claim_share``: the fitted thresholds' (the label model is read
    at theirs, ``eval.run.labelled``; default ``Thresholds().support_at``)."""
    recs = _labelled(rows)
    at = Thresholds().support_at if support_at is None else support_at
    feats = [item_signals(r, at) for r in recs]
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
    named = {read_scale(key, r[key]) for r in recs if isinstance(r.get(key), str) and r[key]}
    return named.pop() if len(named) == 1 else ""


def held_out_figures(held: Any, th: Any, model: Any) -> dict[str, Any]:
    """Agreement on items never fitted on: label model, thresholds, and AR alone."""
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


@dataclass
class LabelsFit:
    """What ``fit_labels`` fitted: the thresholds, their leave-one-out figures, the label
    model (None without the judge's signals), what ``aula fit-labels --json`` prints
    (``result``) and what it stores (``saved``)."""

    thresholds: Thresholds
    cross_validated: dict[str, Any]
    model: LabelModel | None
    result: dict[str, Any]
    saved: dict[str, Any]


def split_rows(rows: pd.DataFrame, split: str | None, *sources: Path
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows of ``split`` and the others (held out; none without a split)."""
    if split is None:
        return rows, rows.iloc[0:0]
    named = ", ".join(map(str, sources))
    if "split" not in rows:
        raise InputError(f"{named}: --split {split} but the items have no 'split'")
    fitted = rows[rows["split"].astype(str) == split]
    if fitted.empty:
        raise InputError(f"{named}: no item in split {split!r}")
    return fitted, rows[rows["split"].astype(str) != split]


def fit_labels(rows: pd.DataFrame, held: pd.DataFrame) -> LabelsFit:
    """Thresholds on AR and correctness fitted to the manual labels of ``rows`` and, when the
    items carry the judge's signals, a label model on them; figures on the ``held`` ones."""
    items = judged_items(rows)
    # the thresholds (and the claim level the label model reads claim_share at) are fitted
    # on the answers written elsewhere when the service's own get submodels of their own:
    # adding answers of one kind does not move how the other kind is labelled
    given = rows[rows["origin"] != AULA] if "origin" in rows else rows
    th_items = judged_items(given) if not given.empty and fits_apart(
        *_origins_labels_groups(_labelled(rows))) else items
    if any(it[0] is not None and it[1] is not None for it in th_items):
        th = fit_thresholds(th_items)
        cv = cross_validated(th_items)
    else:  # judged without the judge's LLM (`aula judge` from words and likelihood alone)
        th, cv = Thresholds(), agreement([], [])
    signals = "coverage_p" in rows or "reference_gain" in rows
    model = fit_model(rows, support_at=th.support_at) if signals else None
    fitted = sum(1 for it in items if it[2] is not None and not pd.isna(it[2]))
    result: dict[str, Any] = {"thresholds": th.to_dict(), "cross_validated": cv}
    if model is not None:
        result["label_model"] = {"signals": [list(m.features) for m in model.models],
                                 "leave_one_question_out": model.figures["loqo"]}
    if not held.empty:
        result["held_out"] = held_out_figures(held, th, model)
        # the service's own answers and the others, apart: the figure on one kind
        # says nothing of the other (fit_label_model fits them apart)
        aula = held["origin"] == AULA if "origin" in held else None
        if aula is not None and aula.any() and not aula.all():
            result["held_out_aula"] = held_out_figures(held[aula], th, model)
            result["held_out_given"] = held_out_figures(held[~aula], th, model)
    saved: dict[str, Any] = {**th.to_dict(), "fitted_items": fitted}
    if model is not None:
        saved["label_model"] = model.to_dict()
    saved.update({k: result[k] for k in ("held_out", "held_out_aula", "held_out_given")
                  if k in result})
    return LabelsFit(th, cv, model, result, saved)
