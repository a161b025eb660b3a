"""Fitting the label model (``eval.label_model``) on manually labelled items.

The signals (``eval.signals.FEATURES``) are standardised and fed to a multinomial logistic
regression (``eval.fitting.fit_classes``: scikit-learn, balanced class weights). Which signals it
reads is chosen by forward selection on leave-one-question-out agreement (linear-weighted kappa)
over the fitting items: a signal is kept only when adding it makes the labels of questions left
out of the fit agree better. Answers to one question share their evidence, so leaving one answer
out would flatter the fit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from corpus.errors import InputError
from eval.fitting import fit_classes
from eval.label_model import LabelModel, Row, Submodel
from eval.metrics import accuracy, cohen_kappa
from eval.signals import (
    AULA_ANSWER,
    EVIDENCE_FEATURES,
    LIKELIHOOD_FEATURES,
    LOCATED_FEATURES,
    QUESTION_FEATURES,
    REFERENCE_FEATURES,
    WORD_FEATURES,
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
                 c: float = 1.0) -> Submodel:
    """Logistic regression of ``labels`` on ``features`` (every row must have them)."""
    if not rows:
        raise InputError("no labelled items with these signals to fit on")
    x = np.array([[float(r[f] or 0.0) for f in features] for r in rows], dtype=np.float64)
    if len(set(labels)) < 2:
        raise InputError("the labelled items all have one label: nothing to tell apart")
    fitted = fit_classes(x, labels, c=c, max_iter=2000)
    return Submodel(features=tuple(features), mean=tuple(fitted["mean"]),
                    scale=tuple(fitted["scale"]), coef=tuple(map(tuple, fitted["coef"])),
                    intercept=tuple(fitted["intercept"]), classes=tuple(fitted["classes"]),
                    c=c)


def leave_group_out(rows: Sequence[Row], labels: Sequence[str], groups: Sequence[str],
                    features: Sequence[str], c: float = 1.0) -> list[str | None]:
    """Each row's label from a model fitted without its group (question)."""
    out: list[str | None] = []
    cache: dict[str, Submodel | None] = {}
    for row, g in zip(rows, groups, strict=True):
        if g not in cache:
            idx = [i for i, h in enumerate(groups) if h != g]
            try:
                cache[g] = fit_submodel([rows[i] for i in idx], [labels[i] for i in idx],
                                        features, c)
            except InputError:
                cache[g] = None
        m = cache[g]
        out.append(None if m is None else m.predict(row))
    return out


def _score(manual: Sequence[str], predicted: Sequence[str | None]) -> tuple[float, float]:
    kappa = cohen_kappa(list(manual), list(predicted), weights="linear")
    return (-1.0 if kappa is None else kappa, accuracy(list(manual), list(predicted)) or 0.0)


def select_features(rows: Sequence[Row], labels: Sequence[str], groups: Sequence[str],
                    candidates: Sequence[str], c_grid: Sequence[float] = C_GRID
                    ) -> tuple[tuple[str, ...], float, list[dict[str, Any]]]:
    """Forward selection on leave-one-group-out (linear kappa, then accuracy) at C=1, then the
    regularisation for the chosen features: the features, C, and each step's figures (what
    every candidate would have made of the labels of the questions left out)."""
    chosen: list[str] = []
    best = (-math.inf, -math.inf)
    steps: list[dict[str, Any]] = []
    while True:
        tried = {f: _score(labels, leave_group_out(rows, labels, groups, [*chosen, f]))
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
    by_c = {c: _score(labels, leave_group_out(rows, labels, groups, chosen, c)) for c in c_grid}
    best_c = max(c_grid, key=lambda c: (by_c[c], c == 1.0))
    steps.append({"with": list(chosen), "c": {str(c): list(v) for c, v in by_c.items()}})
    return tuple(chosen), best_c, steps


class Variant(NamedTuple):
    """A submodel to fit: its name in the figures, the signals it may choose from, and
    whether it reads a located passage (tried only for an item with neither gold span nor
    reference answer, and only kept when it chose a located signal)."""

    name: str
    signals: list[str]
    located: bool = False


def _variants(candidates: Sequence[str]) -> list[Variant]:
    """The submodels to fit, in the order they are tried: one that may read every signal;
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
        got, figs = _fit_variants([rows[i] for i in part], [labels[i] for i in part],
                                  [groups[i] for i in part], candidates)
        models += [replace(m, aula_only=bool(prefix)) for m in got]
        figures.update({prefix + name: fig for name, fig in figs.items()})
    return LabelModel(models=tuple(models), judge_model=judge_model,
                      fitted_items=len(rows), likelihood_model=likelihood_model,
                      match_model=match_model,
                      figures=figures)


def _fit_variants(rows: Sequence[Row], labels: Sequence[str], groups: Sequence[str],
                  candidates: Sequence[str]) -> tuple[list[Submodel], dict[str, Any]]:
    """The submodels of ``_variants`` fitted on ``rows``, in order, and each one's figures."""
    models: list[Submodel] = []
    figures: dict[str, Any] = {}
    seen: set[tuple[str, ...]] = set()
    for name, variant, located in _variants(candidates):
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
            chosen, c, steps = select_features(sub_rows, sub_labels, sub_groups, cands)
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
        models.append(replace(fit_submodel(sub_rows, sub_labels, chosen, c), unless=unless))
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
                               [groups[i] for i in todo], m.features, m.c)
        for i, lab in zip(todo, labs, strict=True):
            predicted[i] = lab
    return predicted
