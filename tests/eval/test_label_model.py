"""The label model: fitted on judge signals, chosen by leave-one-question-out, stored as a file
that labels exactly as the fitted model did."""

from __future__ import annotations

import json
import random

import pytest

from corpus.errors import InputError
from eval.label_fitting import fit_label_model, fit_submodel, leave_group_out
from eval.label_model import LabelModel
from eval.metrics import cohen_kappa
from eval.signals import FEATURES, features, reference_words

LEVEL = {"C": 0.95, "PC": 0.75, "I": 0.45}


def _items(n_questions: int, seed: int) -> tuple[list[dict], list[str], list[str]]:
    """Three answers a question, C/PC/I: the claim check tracks the label with noise, the
    coverage check is noise, and no item has a reference answer."""
    rnd = random.Random(seed)
    rows, labels, groups = [], [], []
    for q in range(n_questions):
        for label in ("C", "PC", "I"):
            ps = [min(1.0, max(0.0, LEVEL[label] + rnd.gauss(0, 0.06))) for _ in range(4)]
            item = {"ar_score": rnd.choice([2, 3]), "correctness_claim_p": ps,
                    "correctness_strict_p": [rnd.random() for _ in ps],
                    "coverage_p": rnd.random()}
            rows.append(features(item))
            labels.append(label)
            groups.append(f"q{q}")
    return rows, labels, groups


def test_it_keeps_the_signal_that_separates_the_labels_and_labels_new_questions() -> None:
    rows, labels, groups = _items(20, seed=1)
    model = fit_label_model(rows, labels, groups, FEATURES, judge_model="m")
    [sub] = model.models  # no item has a reference answer: one submodel
    assert sub.features[0] in ("claim_mean", "claim_min")
    assert "coverage" not in sub.features and "reference_agree" not in sub.features
    new_rows, new_labels, _ = _items(10, seed=2)  # questions it never saw
    predicted = [model.predict(r) for r in new_rows]
    assert cohen_kappa(new_labels, predicted, weights="linear") >= 0.8


def test_the_model_round_trips_through_its_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rows, labels, groups = _items(12, seed=3)
    model = fit_label_model(rows, labels, groups, FEATURES, judge_model="qwen")
    path = tmp_path / "labels.json"
    path.write_text(model.to_json(), encoding="utf-8")
    loaded = LabelModel.from_dict(json.loads(path.read_text(encoding="utf-8")))
    assert loaded.judge_model == "qwen" and loaded.fitted_items == len(rows)
    probe, _, _ = _items(5, seed=4)
    for r in probe:
        assert loaded.predict(r) == model.predict(r)
        assert loaded.models[0].probabilities(r) == pytest.approx(model.models[0].probabilities(r))


def test_an_item_without_the_signals_gets_no_label_from_the_model() -> None:
    rows, labels, groups = _items(8, seed=5)
    model = fit_label_model(rows, labels, groups, FEATURES)
    assert model.predict({f: None for f in FEATURES}) is None


def test_leaving_a_question_out_means_its_answers_never_reach_the_fit() -> None:
    # only question q0 has PC answers: a fit that saw them labels them PC, one without never can
    level = {"I": 0.1, "PC": 0.5, "C": 0.9}
    labels = ["PC", "PC"] + ["C", "I"] * 5
    groups = ["q0", "q0"] + [f"q{i}" for i in range(1, 6) for _ in range(2)]
    rows = [{"claim_mean": level[lab] + 0.01 * i} for i, lab in enumerate(labels)]
    assert fit_submodel(rows, labels, ["claim_mean"], 1.0).predict(rows[0]) == "PC"
    predicted = leave_group_out(rows, labels, groups, ["claim_mean"])
    assert predicted[:2] != ["PC", "PC"] and "PC" not in predicted[:2]


def test_a_question_with_nothing_else_to_fit_on_gets_no_label_not_a_crash() -> None:
    # the fallback submodel's signals only one question's answers have: leaving it out leaves
    # nothing to fit, as early in a run on a new set
    rows = [{"claim_mean": x} for x in (0.9, 0.5, 0.1)]
    assert leave_group_out(rows, ["C", "PC", "I"], ["q0"] * 3, ["claim_mean"]) == [None] * 3
    with pytest.raises(InputError, match="no labelled items"):
        fit_submodel([], [], ["claim_mean"])


def test_a_broken_model_file_names_what_is_wrong() -> None:
    with pytest.raises(InputError, match="models"):
        LabelModel.from_dict({"judge_model": "x"})
    rows, labels, groups = _items(6, seed=6)
    data = json.loads(fit_label_model(rows, labels, groups, FEATURES).to_json())
    data["models"][0]["mean"] = data["models"][0]["mean"][:-1] + [0.0, 0.0]
    with pytest.raises(InputError, match="do not match"):
        LabelModel.from_dict(data)


QUESTION = "por que a derivada de e^x é ela mesma?"
REFERENCE = ("Porque e é a única base cuja exponencial cresce exatamente na taxa do próprio valor: "
             "a constante de proporcionalidade da derivada de a^x é ln(a), e ln(e) = 1.")


def test_a_wrong_detail_brings_words_the_reference_does_not_say() -> None:
    right = reference_words(QUESTION, "Porque a taxa de crescimento de e^x é o próprio valor: a "
                            "constante de proporcionalidade é ln(e), que vale 1.", REFERENCE)
    wrong = reference_words(QUESTION, "Porque a taxa de crescimento de e^x é o próprio valor: a "
                            "constante vem do seno e do cosseno, que somam 1.", REFERENCE)
    vague = reference_words(QUESTION, "Porque e é um número especial.", REFERENCE)
    assert right is not None and wrong is not None and vague is not None
    assert wrong["novelty"] > right["novelty"]
    assert vague["recall"] < right["recall"]
    # no reference, or an answer in English: its words cannot be compared, no signal
    assert reference_words(QUESTION, "Because e grows at its own rate.", REFERENCE) is None
    assert reference_words(QUESTION, "Porque sim.", None) is None


def test_an_item_judged_before_the_word_signals_gets_them_from_its_text() -> None:
    item = {"question": QUESTION, "answer": "A constante é ln(e) = 1.",
            "reference_answer": REFERENCE, "correctness_claim_p": [0.9]}
    row = features(item)
    measured = reference_words(QUESTION, item["answer"], REFERENCE)
    assert measured is not None
    assert row["reference_novelty"] == measured["novelty"]
    assert features({**item, "reference_answer": None})["reference_novelty"] is None


def test_items_without_a_reference_are_labelled_by_the_submodel_that_does_not_read_it() -> None:
    rnd = random.Random(7)
    novelty = {"C": 0.1, "PC": 0.35, "I": 0.6}
    rows, labels, groups = [], [], []
    for q in range(24):
        for label in ("C", "PC", "I"):
            # the claim check tells the labels apart loosely; the words of a reference answer,
            # which two thirds of the questions have, tell them apart well
            row = features({"correctness_claim_p": [LEVEL[label] + rnd.gauss(0, 0.15)]})
            if q < 16:
                row["reference_novelty"] = novelty[label] + rnd.gauss(0, 0.03)
                row["reference_recall"] = rnd.random()
            rows.append(row)
            labels.append(label)
            groups.append(f"q{q}")
    model = fit_label_model(rows, labels, groups, FEATURES)
    with_ref, bare = model.models[0], rows[-1]
    without = next(m for m in model.models if m.usable(bare))
    assert "reference_novelty" in with_ref.features
    assert not set(without.features) & {"reference_novelty", "reference_recall",
                                        "reference_agree"}
    assert bare["reference_novelty"] is None and model.predict(bare) is not None


NOVELTY = {"C": 0.1, "PC": 0.35, "I": 0.6}
GAIN = {"C": 1.2, "PC": 0.6, "I": 0.1}


def _reference_items(seed: int, *, claim_noise: float, gain_noise: float, novelty_noise: float,
                     english_every: int = 0) -> tuple[list[dict], list[str], list[str]]:
    """Three answers to each of 24 questions, all with a reference answer: the claim check, the
    likelihood gain and the words track the label with the given noise; every
    ``english_every``-th question's answers are in English (no word signals)."""
    rnd = random.Random(seed)
    rows, labels, groups = [], [], []
    for q in range(24):
        for label in ("C", "PC", "I"):
            row = features({"correctness_claim_p": [LEVEL[label] + rnd.gauss(0, claim_noise)]})
            row["reference_gain"] = GAIN[label] + rnd.gauss(0, gain_noise)
            if not english_every or q % english_every:
                row["reference_novelty"] = NOVELTY[label] + rnd.gauss(0, novelty_noise)
                row["reference_recall"] = rnd.random()
            rows.append(row)
            labels.append(label)
            groups.append(f"q{q}")
    return rows, labels, groups


def test_an_answer_in_another_language_is_labelled_by_its_likelihood_gain() -> None:
    """An English answer to a Portuguese reference has no word signals, but the likelihood gain
    (eval.likelihood) still reads it: the model keeps a submodel for such answers instead of
    falling back to the weaker claim check."""
    # the gain tells the labels apart less well than the words do
    rows, labels, groups = _reference_items(11, claim_noise=0.3, gain_noise=0.15,
                                            novelty_noise=0.02, english_every=6)
    model = fit_label_model(rows, labels, groups, FEATURES)
    assert "reference_without_words" in model.figures
    english = [(r, lab) for r, lab in zip(rows, labels, strict=True)
               if r["reference_novelty"] is None]
    assert "reference_novelty" in model.models[0].features
    assert not model.models[0].usable(english[0][0])
    by_gain = [model.predict(r) for r, _ in english]
    assert cohen_kappa([lab for _, lab in english], by_gain, weights="linear") >= 0.8
    # round-trips with every submodel
    again = LabelModel.from_dict(json.loads(model.to_json()))
    assert [again.predict(r) for r in rows] == [model.predict(r) for r in rows]


def test_a_judge_run_without_the_likelihood_scorer_still_reads_the_reference_words() -> None:
    """With ``AULA_JUDGE_LIKELIHOOD=off`` an item has the words but no gain: it is labelled by a
    submodel of the words, not by the claim check alone."""
    # the claim check is noise; the gain is the best signal, the words a good one
    rows, labels, groups = _reference_items(5, claim_noise=1.0, gain_noise=0.05,
                                            novelty_noise=0.08)
    model = fit_label_model(rows, labels, groups, FEATURES)
    assert "reference_gain" in model.models[0].features
    no_gain = [{**r, "reference_gain": None} for r in rows]
    predicted = [model.predict(r) for r in no_gain]
    assert cohen_kappa(labels, predicted, weights="linear") >= 0.6


def test_a_gain_read_by_another_scorer_is_not_read_on_the_fitted_scale() -> None:
    """The label model records which scorer read the gains it was fitted on; an answer whose
    gain another model read (``AULA_JUDGE_LIKELIHOOD`` pointed elsewhere: another scale) is
    labelled without it, so a high gain from that model cannot make a wrong answer right."""
    from eval.run import Pipeline, labelled

    rows, labels, groups = _reference_items(5, claim_noise=1.0, gain_noise=0.05,
                                            novelty_noise=0.08)
    model = fit_label_model(rows, labels, groups, FEATURES, likelihood_model="scorer-a@float32")
    again = LabelModel.from_dict(json.loads(model.to_json()))
    assert again.likelihood_model == model.likelihood_model
    p = Pipeline(judge=lambda m: "", label_model=model)
    # the words say wrong, the gain says right
    item = {"correctness_claim_p": [0.5], "reference_novelty": 0.75, "reference_recall": 0.1,
            "reference_gain": 1.6}
    same, _ = labelled({**item, "likelihood_model": "scorer-a@float32"}, p)
    other, by = labelled({**item, "likelihood_model": "scorer-b@bfloat16"}, p)
    assert same != "I"
    assert (other, by) == ("I", "model")
    # the same GGUF read quantised by llama.cpp is on the float32 reading's scale
    quantised, _ = labelled({**item, "likelihood_model": "scorer-a@llama.cpp"}, p)
    assert quantised == same
    bfloat, _ = labelled({**item, "likelihood_model": "scorer-a@bfloat16"}, p)
    assert bfloat == "I"


def test_a_token_match_read_by_another_e5_is_not_read_on_the_fitted_scale() -> None:
    """The label model records which E5 model matched the located passages it was fitted on;
    an answer matched by another (``AULA_EMBED_MODEL`` pointed elsewhere: another scale) is
    not labelled by the match."""
    from eval.run import Pipeline, labelled

    rnd = random.Random(3)
    level = {"C": 0.8, "PC": 0.5, "I": 0.2}
    rows, labels, groups = [], [], []
    for q in range(12):
        for label in ("C", "PC", "I"):
            rows.append({"located_match": level[label] + rnd.gauss(0, 0.03)})
            labels.append(label)
            groups.append(f"q{q}")
    model = fit_label_model(rows, labels, groups, FEATURES, match_model="e5-a")
    again = LabelModel.from_dict(json.loads(model.to_json()))
    assert again.match_model == "e5-a"
    p = Pipeline(judge=lambda m: "", label_model=again)
    assert labelled({"located_match": 0.8, "match_model": "e5-a"}, p) == ("C", "model")
    assert labelled({"located_match": 0.8, "match_model": "e5-b"}, p)[1] != "model"


def test_the_model_reads_the_claim_share_at_the_level_it_was_fitted_at() -> None:
    # fit-labels fits the thresholds first (here: a claim counts as confirmed from P 0.75) and
    # the batch and the service read the model's claim share at that level: the fit must too.
    import pandas as pd

    from eval.label_fitting import fit_model
    from eval.labels import Thresholds
    from eval.run import Pipeline, automated_label

    rnd = random.Random(3)
    # C: every claim at P 0.76-0.84 (all confirmed at 0.75, none at the default 0.85);
    # I: every claim below 0.75
    ranges = {"C": (0.76, 0.84), "I": (0.55, 0.74)}
    items = []
    for q in range(8):
        for label, (lo, hi) in ranges.items():
            ps = [rnd.uniform(lo, hi) for _ in range(3)]
            items.append({"question_id": f"q{q}", "manual": label, "ar_score": 3,
                          "correctness_claim_p": ps, "coverage_p": 0.9})
    th = Thresholds(support_at=0.75)
    model = fit_model(pd.DataFrame(items), ["claim_share"], support_at=th.support_at)
    p = Pipeline(judge=lambda m: "", thresholds=th, label_model=model)
    assert [automated_label(it, p) for it in items] == [it["manual"] for it in items]


def test_the_label_is_less_sure_between_two_labels_than_at_one() -> None:
    from eval.run import Pipeline, labelled_with_confidence

    rows, labels, groups = _items(20, seed=1)
    model = fit_label_model(rows, labels, groups, FEATURES, judge_model="m")
    p = Pipeline(judge=lambda m: "", label_model=model)

    def judged(level: float) -> dict:
        return {"ar_score": 3, "correctness_score": 3, "correctness_claim_p": [level] * 4,
                "correctness_strict_p": [0.5] * 4, "coverage_p": 0.5}

    label, by, at_c = labelled_with_confidence(judged(LEVEL["C"]), p)
    assert (label, by) == ("C", "model")
    _, _, between = labelled_with_confidence(judged((LEVEL["C"] + LEVEL["PC"]) / 2), p)
    assert at_c is not None and between is not None and between < at_c - 0.2
    probs = model.probabilities(features(judged(LEVEL["PC"])))
    assert probs is not None and sum(probs.values()) == pytest.approx(1.0)
    assert labelled_with_confidence(judged(LEVEL["PC"]), p)[2] == pytest.approx(max(probs.values()))
    # the thresholds' label has no probability to give
    plain = labelled_with_confidence(judged(LEVEL["C"]), Pipeline(judge=lambda m: ""))
    assert plain[1] == "thresholds" and plain[2] is None


def test_an_answer_without_a_reference_is_labelled_by_its_gain_from_the_lecture() -> None:
    """No reference answer (a student's question): the evidence gain (how much the lecture's
    text makes the answer more likely) labels it; a run without the scorer (the service's
    judge) still labels every item, by the claim check."""
    rnd = random.Random(7)
    rows, labels, groups = [], [], []
    for q in range(24):
        for label in ("C", "PC", "I"):
            row = features({"correctness_claim_p": [LEVEL[label] + rnd.gauss(0, 0.4)]})
            row["evidence_gain"] = GAIN[label] + rnd.gauss(0, 0.05)
            rows.append(row)
            labels.append(label)
            groups.append(f"q{q}")
    model = fit_label_model(rows, labels, groups, FEATURES)
    assert "evidence_gain" in model.models[0].features
    with_gain = [model.predict(r) for r in rows]
    without = [model.predict({**r, "evidence_gain": None}) for r in rows]
    assert None not in without
    assert cohen_kappa(labels, with_gain, weights="linear") >= 0.8
    assert cohen_kappa(labels, with_gain, weights="linear") > \
        cohen_kappa(labels, without, weights="linear")


GAIN = {"C": 1.2, "PC": 0.6, "I": 0.05}


def _aula_items(n_questions: int, seed: int) -> tuple[list[dict], list[str], list[str]]:
    """Answers this service wrote: fluent, copied from their passage, so the claim check
    confirms every one whatever its label; the gain after the gold span tracks the label."""
    rnd = random.Random(seed)
    rows, labels, groups = [], [], []
    for q in range(n_questions):
        for label in ("C", "PC", "I"):
            ps = [min(1.0, 0.97 + rnd.gauss(0, 0.02)) for _ in range(3)]
            item = {"ar_score": 3, "correctness_claim_p": ps, "coverage_p": rnd.random(),
                    "evidence_gain": GAIN[label] + rnd.gauss(0, 0.15),
                    "evidence_gain_low": rnd.gauss(0, 0.3), "origin": "aula"}
            rows.append(features(item))
            labels.append(label)
            groups.append(f"a{q}")
    return rows, labels, groups


GIVEN_GAIN = {"C": 0.5, "PC": 0.4, "I": 0.2}


def _given(n: int, seed: int) -> tuple[list[dict], list[str], list[str]]:
    """Answers written elsewhere: the claim check tracks their label, and the gain does on its
    own (lower) scale, as on the judge set."""
    rows, labels, groups = _items(n, seed)
    rnd = random.Random(seed)
    for r, label in zip(rows, labels, strict=True):
        r["evidence_gain"] = GIVEN_GAIN[label] + rnd.gauss(0, 0.1)
        r["evidence_gain_low"] = rnd.gauss(0.1, 0.3)
    return rows, labels, groups


def test_the_services_own_answers_get_submodels_fitted_on_them() -> None:
    given, aula = _given(15, seed=7), _aula_items(15, seed=107)
    rows, labels, groups = (given[0] + aula[0], given[1] + aula[1], given[2] + aula[2])
    model = fit_label_model(rows, labels, groups, FEATURES, judge_model="m")
    assert model.models[0].aula_only and not model.models[-1].aula_only
    new_given, given_labels, _ = _given(8, seed=8)
    new_aula, aula_labels, _ = _aula_items(8, seed=9)
    assert cohen_kappa(aula_labels, [model.predict(r) for r in new_aula],
                       weights="linear") >= 0.8
    assert cohen_kappa(given_labels, [model.predict(r) for r in new_given],
                       weights="linear") >= 0.8
    # fitted on the service's answers alone, and never read for an answer written elsewhere
    first = next(k for k in model.figures if k.startswith("aula:"))
    assert model.figures[first]["items"] == len(aula[0])
    assert model.models[0].probabilities(new_given[0]) is None
    loaded = LabelModel.from_dict(json.loads(model.to_json()))
    assert [m.aula_only for m in loaded.models] == [m.aula_only for m in model.models]
    assert [loaded.predict(r) for r in new_aula] == [model.predict(r) for r in new_aula]


def test_a_few_answers_of_the_service_get_no_submodel_of_their_own() -> None:
    rows, labels, groups = _items(12, seed=10)
    few = _aula_items(3, seed=11)  # 9 answers, 3 questions: too few to fit on alone
    model = fit_label_model(rows + few[0], labels + few[1], groups + few[2], FEATURES)
    assert not any(m.aula_only for m in model.models)


def test_the_services_answers_judged_live_keep_a_submodel_of_their_own() -> None:
    """Fitted on the service's answers with a gold span (the likelihood gain and the lecture's
    words read them best), the model still has a submodel of the service's own for an answer
    judged live by the service (no gold span, no scorer: neither gain nor words)."""
    rows, labels, groups = _aula_items(15, seed=21)
    rnd = random.Random(22)
    for r, label in zip(rows, labels, strict=True):
        r["evidence_novelty"] = NOVELTY[label] + rnd.gauss(0, 0.05)
        r["evidence_recall"] = rnd.random()
        r["strict_mean"] = LEVEL[label] + rnd.gauss(0, 0.1)
    model = fit_label_model(rows, labels, groups, FEATURES)
    live, live_labels, _ = _aula_items(6, seed=23)
    rnd = random.Random(24)
    for r, label in zip(live, live_labels, strict=True):
        r.update(evidence_gain=None, evidence_gain_low=None,
                 strict_mean=LEVEL[label] + rnd.gauss(0, 0.1))
    used = [next(m for m in model.models if m.usable(r)) for r in live]
    assert all(m.aula_only for m in used)
    assert not set(used[0].features) & {"evidence_gain", "evidence_gain_low",
                                        "evidence_novelty", "evidence_recall"}
    assert cohen_kappa(live_labels, [model.predict(r) for r in live], weights="linear") >= 0.6


LOCATED_GAIN = {"C": 0.3, "PC": 0.15, "I": 0.05}


def _gold_and_located(n_questions: int, seed: int) -> tuple[list[dict], list[str], list[str]]:
    """Answers judged at their gold span (the claim check and the evidence gain track the
    label) that also carry the located reading: the gain at the passage the search put first,
    which tracks the label more weakly."""
    rnd = random.Random(seed)
    rows, labels, groups = [], [], []
    for q in range(n_questions):
        for label in ("C", "PC", "I"):
            item = {"ar_score": 3, "coverage_p": rnd.random(),
                    "correctness_claim_p": [LEVEL[label] + rnd.gauss(0, 0.05)] * 2,
                    "evidence_gain": GIVEN_GAIN[label] + rnd.gauss(0, 0.03),
                    "located_gain": LOCATED_GAIN[label] + rnd.gauss(0, 0.03)}
            rows.append(features(item))
            labels.append(label)
            groups.append(f"q{q}")
    return rows, labels, groups


def test_an_answer_with_neither_gold_span_nor_reference_is_labelled_by_the_located_passage(
        ) -> None:
    """A plain answer (its claims checked against retrieved passages, which confirm right and
    wrong alike) is labelled by the gain at the passage the search put first; an answer with a
    gold span keeps the submodel that reads the span."""
    rows, labels, groups = _gold_and_located(24, seed=8)
    model = fit_label_model(rows, labels, groups, FEATURES)
    located = [m for m in model.models if set(m.features) & {"located_gain"}]
    assert located and not set(located[0].features) & {"claim_mean", "evidence_gain"}
    new_rows, new_labels, _ = _gold_and_located(10, seed=9)
    rnd = random.Random(10)
    plain = [{**r, "evidence_gain": None, "claim_mean": 0.8 + rnd.gauss(0, 0.05),
              "claim_min": 0.8, "claim_share": 1.0} for r in new_rows]
    by_located = [model.predict(r) for r in plain]
    by_claims = [model.predict({**r, "located_gain": None}) for r in plain]
    assert cohen_kappa(new_labels, by_located, weights="linear") >= 0.6
    assert cohen_kappa(new_labels, by_located, weights="linear") > \
        cohen_kappa(new_labels, by_claims, weights="linear")
    gold = [{**r, "located_gain": None} for r in new_rows]
    first_usable = [next(m for m in model.models if m.usable(r)) for r in gold]
    assert all("located_gain" not in m.features for m in first_usable)
    assert cohen_kappa(new_labels, [model.predict(r) for r in gold], weights="linear") >= 0.8


def test_located_readings_leave_the_submodels_of_gold_spans_and_references_as_they_were(
        ) -> None:
    """The located signals are read by their own submodels only: fitted with them, the other
    submodels choose and weigh the same signals, and label a judged item the same."""
    rows, labels, groups = _items(12, seed=11)
    rnd = random.Random(12)
    located = [{**r, "located_novelty": rnd.random(), "located_gain": rnd.random()}
               for r in rows]
    model = fit_label_model(located, labels, groups, FEATURES)
    others = [m for m in model.models if not m.unless]
    assert others == list(fit_label_model(rows, labels, groups, FEATURES).models)
    assert all(set(m.unless) >= {"evidence_gain", "reference_gain"}
               for m in model.models if m.unless)


def test_answers_with_a_reference_judged_without_the_llm_are_labelled_by_words_and_gains() -> None:
    """Answers given with a reference answer get two submodels: one that may read every signal
    (the judge's LLM asked) and, after it, one of the answer's words and likelihood gains alone,
    which labels an answer judged without the LLM; an answer with neither reference nor LLM
    signals gets no label from them."""
    from eval.signals import JUDGE_FEATURES, REFERENCE_READ_FEATURES

    rows, labels, groups = _reference_items(3, claim_noise=0.1, gain_noise=0.2,
                                            novelty_noise=0.05)
    model = fit_label_model(rows, labels, groups, ("reference_novelty", "reference_recall",
                                                   "reference_gain", "claim_mean", "claim_min"))
    assert list(model.figures)[:2] == ["with_reference", "reference_read"]
    full, read = model.models[:2]
    assert set(read.features) <= set(REFERENCE_READ_FEATURES)
    quick = {k: (None if k in JUDGE_FEATURES else v) for k, v in rows[0].items()}
    assert not full.usable(quick) or not set(full.features) & set(JUDGE_FEATURES)
    # labelled by words and gains alone (the first submodel if it chose no LLM signal)
    first = next(m for m in model.models if m.usable(quick))
    assert first in (full, read) and set(first.features) <= set(REFERENCE_READ_FEATURES)
    assert model.probabilities(quick) == first.probabilities(quick) is not None
    # read on its own (leave one question out) it labels these answers as the words say
    assert read.ordinal  # partly right sits between wrong and right on one score
    read_labels = leave_group_out([{**r, **dict.fromkeys(JUDGE_FEATURES)} for r in rows],
                                  labels, groups, read.features, ordinal=True)
    assert cohen_kappa(labels, read_labels, weights="linear") >= 0.8
    assert model.probabilities({**quick, **dict.fromkeys(REFERENCE_READ_FEATURES)}) is None
    # the service's own answers are judged with the LLM: no such submodel of their own
    own = fit_label_model([{**r, "aula_answer": 1.0} for r in rows], labels, groups,
                          ("reference_novelty", "claim_mean"))
    assert "aula:with_reference" in own.figures and "aula:reference_read" not in own.figures


def test_an_ordinal_submodel_puts_a_partly_right_answer_between_wrong_and_right(tmp_path
                                                                               ) -> None:  # type: ignore[no-untyped-def]
    """Fitted ordinal, one score orders the labels: as the signal rises, P(C) only rises and
    P(I) only falls, the middle of the range reads PC; stored and read back it gives the same
    P, and a file whose cuts do not increase is refused, naming the field."""
    rnd = random.Random(7)
    level = {"I": 0.0, "PC": 1.0, "C": 2.0}
    rows, labels = [], []
    for _ in range(15):
        for label in ("C", "PC", "I"):
            rows.append({"reference_gain": level[label] + rnd.gauss(0, 0.35)})
            labels.append(label)
    sub = fit_submodel(rows, labels, ["reference_gain"], ordinal=True)
    assert sub.classes == ("I", "PC", "C") and len(sub.intercept) == 2
    grid = [sub.probabilities({"reference_gain": g / 10}) for g in range(-10, 31)]
    assert all(abs(sum(p.values()) - 1) < 1e-9 for p in grid)
    assert all(a["C"] <= b["C"] and a["I"] >= b["I"] for a, b in zip(grid, grid[1:], strict=False))
    assert [sub.predict({"reference_gain": g}) for g in (-0.5, 1.0, 2.5)] == ["I", "PC", "C"]
    data = json.loads(LabelModel(models=(sub,)).to_json())
    loaded = LabelModel.from_dict(data)
    assert loaded.models[0].ordinal
    assert loaded.probabilities({"reference_gain": 0.8}) == pytest.approx(
        sub.probabilities({"reference_gain": 0.8}))
    data["models"][0]["intercept"] = data["models"][0]["intercept"][::-1]
    with pytest.raises(InputError, match=r"models\[0\]\.intercept"):
        LabelModel.from_dict(data)
