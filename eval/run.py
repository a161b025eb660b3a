"""Batch evaluation: every question through retrieval, answer and judges, resumable.

Each finished item is appended to ``OUT/items.jsonl`` (one JSON object a line, flushed and
fsynced) the moment it completes, so a run killed at any point resumes where it stopped: items
already there are not redone, and a last line cut short by the kill is dropped (an unreadable
line anywhere else stops the run with an error naming it: it is never silently thrown away).
Reports are written at the end, each atomically.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from corpus.errors import InputError
from corpus.models import Hit
from eval.claims import FirstTokenFn, verify_claims
from eval.judge import CORRECTNESS, RELEVANCE, correctness_fields, judge_item
from eval.label_model import LabelModel, most_likely
from eval.labels import Thresholds, ar_only_label, combined_label, is_missing
from eval.likelihood import ContinuationScorer, answer_gains, likelihood_scale
from eval.metrics import Span, first_hit_rank
from eval.record import Record, Reference, reference_titles
from eval.report import summarise, write_records, write_rows, write_summary
from eval.signals import (
    AULA,
    AULA_ANSWER,
    JUDGE_FEATURES,
    LIKELIHOOD_FEATURES,
    MATCH_FEATURES,
    TokenMatcher,
    coverage,
    evidence_words,
    features,
    located_query,
    located_signals,
    reference_agreement,
    reference_words,
)

ITEMS = "items.jsonl"
ChatFn = Callable[[list[dict[str, str]]], str]


@dataclass
class Pipeline:
    """What a batch run needs: retrieval and answering (optional for judge-only) and a judge."""

    judge: ChatFn
    verify: FirstTokenFn | None = None
    """Set: correctness by checking claim by claim (``eval.claims``); None: the CoT prompt."""
    search: Callable[[str, int], list[Hit]] | None = None
    answer: Callable[[str, list[Hit]], Any] | None = None
    k: int = 10
    samples: int = 1
    correctness: bool = True
    thresholds: Thresholds = field(default_factory=Thresholds)
    search_in: Callable[[str, int, list[str]], list[Hit]] | None = None
    """``search`` limited to some lectures: a given answer whose item names its gold lecture
    but no span is checked against that lecture's passages, not the whole index's."""
    matcher: TokenMatcher | None = None
    """Set: an answer read at its located passage is also matched to it token by token
    (``located_match``, with the ``match_model``; the E5 model, ``E5Embedder``)."""
    span_text: Callable[[str, float, float], str | None] | None = None
    """Set: an item with a gold lecture and span is judged against what the lecture says there
    (first), besides the retrieved or given text (``Retriever.span_text``)."""
    judge_model: Callable[[], str] = lambda: ""
    """The judge's model id, for the records (asked when needed: an endpoint may name its model
    only once it answers)."""
    label_model: LabelModel | None = None
    """Set: the automated label comes from this model fitted on the judge's signals
    (``aula fit-labels``); None: from ``thresholds``."""
    likelihood: ContinuationScorer | None = None
    """Set: an item with a gold span gets ``evidence_gain`` (how much what the lecture says
    there makes the answer more likely), one with a reference answer ``reference_gain``
    (``eval.likelihood``)."""
    ragas: Callable[[dict[str, Any]], Any] | None = None
    """Set: ragas metrics per item (``eval.ragas_metrics.RagasScorer.score``), as ``ragas_*``
    columns."""
    reasoning: bool = True
    """False: an answer the label model can label from its words and likelihood gains alone
    (with a reference answer: its ``reference_read`` submodel) is labelled so, without the
    judge's LLM (no AR chain of thought, no claim check: about four times as fast). True: every
    answer gets them, for an instructor to read, and is labelled by the submodel that reads
    them beside its words and gains."""


def _val(row: dict[str, Any], key: str) -> Any:
    v = row.get(key)
    return None if is_missing(v) else v


SearchFn = Callable[[str, int], list[Hit]]


@dataclass(frozen=True)
class _Item:
    """One question row, read once: what every stage of ``evaluate_item`` looks at."""

    row: dict[str, Any]
    question: str
    given: Any
    """The answer given with the question (None: this service answers it)."""
    contexts: Any
    gold_text: str | None
    reference: Any
    search: SearchFn | None

    @property
    def bare(self) -> bool:
        """A given answer with no evidence of its own: no contexts and no gold span text."""
        return self.given is not None and not self.contexts and not self.gold_text


def _read_item(row: dict[str, Any], p: Pipeline) -> _Item:
    gold_text = _gold_text(row, p)
    given = _val(row, "answer")
    return _Item(row=row, question=str(row["question"]), given=given,
                 contexts=row.get("contexts"), gold_text=gold_text,
                 reference=_val(row, "reference_answer"),
                 search=_item_search(p, given, _val(row, "gold_lecture"), gold_text))


def _item_search(p: Pipeline, given: Any, lecture: Any, gold_text: str | None
                 ) -> SearchFn | None:
    """``p.search``, limited to the gold lecture for a given answer that names one but no span."""
    whole, search_in = p.search, p.search_in
    if given is None or lecture is None or gold_text or search_in is None:
        return whole

    def search(text: str, k: int) -> list[Hit]:
        # the lecture is known, the minute is not: its passages, not another lecture's
        # (the whole index's when the index holds no such lecture)
        found = search_in(text, k, [str(lecture)])
        return found if found or whole is None else whole(text, k)

    return search


def _retrieved(item: _Item, p: Pipeline) -> list[Hit]:
    """The question's hits, when the item needs any."""
    # a given answer with a gold span is judged on what the lecture says there (and the
    # reference answer): nothing retrieved near the question would be better evidence
    if item.given is not None and (item.contexts or item.gold_text):
        return []
    if item.search is not None:
        return item.search(item.question, p.k)
    if item.given is None:
        raise InputError(f"item {item.row['id']}: no answer given and no index to search")
    return []


@dataclass
class _Answered:
    text: str | None
    citations: list[dict[str, Any]] = field(default_factory=list)
    read: list[str] = field(default_factory=list)
    """The passages the generator read, when it says."""
    error: str | None = None


def _answered(item: _Item, p: Pipeline, hits: list[Hit]) -> _Answered:
    """The given answer, or this service's answer to the question over ``hits``."""
    if item.given is not None:
        return _Answered(item.given)
    if p.answer is None:
        raise InputError(f"item {item.row['id']}: no answer given and no answerer")
    out = _Answered(None)
    try:
        result = p.answer(item.question, hits)
        out.text = result.text
        out.citations = [c.to_dict() for c in result.citations]
        # the passages the generator read, when it says (the gated answerer): the judge
        # checks the answer against the text the answerer saw
        out.read = list(getattr(result, "contexts", None) or [])
        if getattr(result, "error", None):
            out.error = f"answer failed: {result.error}"
            out.text = None
    except Exception as exc:  # noqa: BLE001 - recorded on the item, the run goes on
        out.error = f"answer failed: {exc}"
    return out


def _evidence_texts(item: _Item, answer: _Answered, hits: list[Hit]) -> list[str]:
    """The texts the answer is judged on: given contexts, else what was read or retrieved."""
    if item.contexts:
        return list(item.contexts)
    if item.bare and item.search is not None:
        # a given answer with no evidence of its own: the passages that bear on its claims
        return [h.text for h in claim_evidence(item.search, item.given, hits)]
    return answer.read or [h.text for h in hits]


def evaluate_item(row: dict[str, Any], p: Pipeline) -> dict[str, Any]:
    """One question: answer it (unless an answer is given), judge it, label it."""
    item = _read_item(row, p)
    hits = _retrieved(item, p)
    answer = _answered(item, p, hits)
    texts = _evidence_texts(item, answer, hits)
    gold_text = item.gold_text
    judged_on = [gold_text, *(t for t in texts if t != gold_text)] if gold_text else texts
    out: dict[str, Any] = {
        k: (None if is_missing(v) else v) for k, v in row.items() if k != "contexts"
    }
    out.update(
        answer=answer.text,
        # what the label model reads this answer as: this service's own, or given
        origin=AULA if item.given is None else out.get("origin"),
        segments=[h.to_dict() for h in hits],
        contexts=texts if item.contexts else None,
        citations=answer.citations,
        error=answer.error,
    )
    if answer.text is None:
        out.update(ar_score=None, ar=None, ar_error=answer.error, automated=None,
                   ar_only=None, automated_confidence=None)
        return out
    text = answer.text
    out.update(_evidence_signals(item, p, text))
    checkable = p.correctness and bool(judged_on)  # no text: nothing to check the claims against
    if p.reasoning or not labelled_without_llm(out, p):
        ar = judge_item(p.judge, RELEVANCE, {"question": item.question, "answer": text},
                        samples=p.samples)
        out.update(ar_score=ar.score, ar=ar.fraction, ar_reasoning=ar.reasoning or ar.raw,
                   ar_error=ar.error)
        out.update(_verifier_signals(item, p, text))
        if checkable:
            out.update(_correctness(item, p, text, judged_on))
        out["ar_only"] = ar_only_label(ar.score)
    else:
        out.update(ar_score=None, ar=None, ar_reasoning=None, ar_error=None, ar_only=None)
    out["judge_model"] = p.judge_model() or None
    out["automated"], out["label_by"], out["automated_confidence"] = \
        labelled_with_confidence(out, p, checkable)
    if p.ragas is not None:
        out.update(p.ragas({"question": item.question, "answer": text, "contexts": texts,
                            "reference": item.reference}).row())
    out.update(_hit_rank(row, hits))
    return out


def _evidence_signals(item: _Item, p: Pipeline, answer: str) -> dict[str, Any]:
    """The answer's words and likelihood gains against the reference, the gold span, or (with
    neither) the passage the question and the answer find together."""
    out: dict[str, Any] = {}
    question, reference, gold_text = item.question, item.reference, item.gold_text
    words = reference_words(question, answer, None if reference is None else str(reference))
    out["reference_novelty"] = None if words is None else words["novelty"]
    out["reference_recall"] = None if words is None else words["recall"]
    if gold_text:
        out.update(evidence_words(question, answer, gold_text))
    # the evidence gain is read after the gold span only: read after the question's best
    # windows instead, it told the labels apart less well (docs/judges.md). An answer not
    # this service's own with a reference is labelled without it (the submodels for those
    # never kept it), and it is the longest pass: not read then.
    own = item.given is None or _val(item.row, "origin") == AULA
    if p.likelihood is not None and (reference is not None or gold_text):
        lecture = gold_text if reference is None or own else None
        out.update(answer_gains(p.likelihood, question, answer,
                                None if reference is None else str(reference), lecture))
    located = (item.search(located_query(question, answer), p.k)[:1]
               if item.bare and reference is None and item.search is not None else [])
    if located:
        # neither a gold span nor a reference: the lecture's words and gain at the passage
        # the question and the answer find together (docs/judges.md)
        top = located[0]
        out.update(located_lecture=top.lecture_id, located_start=top.start,
                   located_end=top.end)
        out.update(located_signals(question, answer, top.text, p.likelihood, p.matcher))
    if p.likelihood is not None and (reference is not None or gold_text or located):
        # the model every gain of this item was read with
        out["likelihood_model"] = getattr(p.likelihood, "model_id", "") or None
    return out


def _verifier_signals(item: _Item, p: Pipeline, answer: str) -> dict[str, Any]:
    """The claim checker's coverage of the question and agreement with the reference."""
    if p.verify is None or not p.correctness:
        return {}
    out: dict[str, Any] = {"coverage_p": coverage(p.verify, item.question, answer)}
    if item.reference is not None:
        out["reference_agree_p"] = reference_agreement(p.verify, item.question, answer,
                                                       str(item.reference))
    return out


def _correctness(item: _Item, p: Pipeline, answer: str, judged_on: list[str]
                 ) -> dict[str, Any]:
    """Correctness against ``judged_on``: claim by claim, or by the CoT judge."""
    if p.verify is not None:
        cr = verify_claims(p.verify, answer, judged_on, item.reference,
                           support_at=p.thresholds.support_at, strict=True)
    else:
        fields = correctness_fields(item.question, answer, judged_on, item.reference)
        cr = judge_item(p.judge, CORRECTNESS, fields, samples=p.samples)
    return dict(correctness_score=cr.score, correctness=cr.fraction,
                correctness_reasoning=cr.reasoning or cr.raw, correctness_error=cr.error,
                correctness_claim_p=list(cr.probabilities) or None,
                correctness_strict_p=list(cr.strict) or None)


def _hit_rank(row: dict[str, Any], hits: list[Hit]) -> dict[str, int | None]:
    """``hit_rank``: the rank of the first hit in the gold span, when the item has a gold span
    and hits (a lecture without a span has no rank: its hits may have been searched within it)."""
    start, end = _val(row, "gold_start"), _val(row, "gold_end")
    if _val(row, "gold_lecture") is None or start is None or end is None or not hits:
        return {}
    gold = Span(str(row["gold_lecture"]), float(start), float(end))
    return {"hit_rank": first_hit_rank(gold, hits)}


PER_CLAIM = 1
FROM_QUESTION = 2


def claim_evidence(search: Callable[[str, int], list[Hit]], answer: str, hits: list[Hit],
                   per_claim: int = PER_CLAIM, from_question: int = FROM_QUESTION) -> list[Hit]:
    """The segments that bear on the answer's own claims: each claim's best hits (searched
    with the claim itself, so a wrong detail meets the passage that says otherwise), then the
    question's best ``hits``, without repeats. Fewer, focused segments: the checker reads them
    whole instead of twelve windows cut short."""
    from eval.claims import split_claims

    found: list[Hit] = []
    seen: set[tuple[str, float]] = set()
    per = [search(c, per_claim) for c in split_claims(answer)]
    ranked = [hs[i] for i in range(per_claim) for hs in per if i < len(hs)]
    for h in [*ranked, *hits[:from_question]]:
        if (h.lecture_id, h.start) not in seen:
            seen.add((h.lecture_id, h.start))
            found.append(h)
    return found


def automated_label(item: dict[str, Any], p: Pipeline, checkable: bool = True) -> str | None:
    """The C/PC/I label of a judged item (``labelled``'s label)."""
    return labelled(item, p, checkable)[0]


def labelled(item: dict[str, Any], p: Pipeline, checkable: bool = True
             ) -> tuple[str | None, str]:
    """The C/PC/I label of a judged item and what gave it: the label model ("model") when there
    is one fitted on this judge's model and the item has what it reads, else the thresholds on
    AR and correctness ("thresholds"), else AR alone ("ar_only")."""
    label, by, _ = labelled_with_confidence(item, p, checkable)
    return label, by


def labelled_with_confidence(item: dict[str, Any], p: Pipeline, checkable: bool = True
                             ) -> tuple[str | None, str, float | None]:
    """``labelled``'s label and source, and the label model's probability for that label (its
    confidence; None when the thresholds or AR gave the label, which have none)."""
    probs = _model_probabilities(item, p)
    if probs is not None:
        label = most_likely(probs)
        return label, "model", probs[label]
    if not checkable:
        return item.get("ar_only"), "ar_only", None
    return (combined_label(item.get("ar_score"), item.get("correctness_score"), p.thresholds),
            "thresholds", None)


def read_scale(key: str, model_id: str) -> str:
    """The scale of the signals the model named in ``key`` ("likelihood_model",
    "match_model") read: the model id, except where two readings are one scale
    (``likelihood_scale``)."""
    return likelihood_scale(model_id) if key == "likelihood_model" else model_id


def _model_probabilities(item: dict[str, Any], p: Pipeline) -> dict[str, float] | None:
    """P(label) per class from the label model, when there is one fitted on this judge's model
    and the item has what one of its submodels reads."""
    row = _model_row(item, p)
    return None if row is None or p.label_model is None else p.label_model.probabilities(row)


def labelled_without_llm(item: dict[str, Any], p: Pipeline) -> bool:
    """Whether the label model labels ``item`` from what it has before the judge's LLM is
    asked: its words and likelihood gains (no ``JUDGE_FEATURES``). Never for an answer this
    service wrote: its copied words read as right as a right answer's, and its submodels,
    fitted on such answers, read the LLM's signals."""
    row = _model_row(item, p)
    if row is None or p.label_model is None or row.get(AULA_ANSWER):
        return False
    return p.label_model.probabilities({**row, **dict.fromkeys(JUDGE_FEATURES)}) is not None


def _model_row(item: dict[str, Any], p: Pipeline) -> dict[str, float | None] | None:
    """The signals of ``item`` the label model reads (another scorer's or E5's on another scale
    than its own left out); None without a label model fitted on this judge's model."""
    fitted_for = p.label_model.judge_model if p.label_model is not None else ""
    if p.label_model is None or (fitted_for and fitted_for != (p.judge_model() or fitted_for)):
        return None
    row = features(item, p.thresholds.support_at)
    # another scorer's gains, another E5's token match: on another scale than the fitted ones
    for key, fitted, names in (("likelihood_model", p.label_model.likelihood_model,
                                LIKELIHOOD_FEATURES),
                               ("match_model", p.label_model.match_model, MATCH_FEATURES)):
        read_by = item.get(key)
        if fitted and read_by and read_scale(key, read_by) != read_scale(key, fitted):
            for name in names:
                row[name] = None
    return row


def _gold_text(row: dict[str, Any], p: Pipeline) -> str | None:
    """The gold span's text, when the item names one and the pipeline can read it."""
    if p.span_text is None or _val(row, "gold_lecture") is None:
        return None
    try:
        start, end = float(row["gold_start"]), float(row["gold_end"])
    except (KeyError, TypeError, ValueError):
        return None
    if math.isnan(start) or math.isnan(end):
        return None
    return p.span_text(str(row["gold_lecture"]), start, end)


class ItemLogError(InputError):
    """An item log that cannot be resumed safely; ``str()`` names the file and the line."""


class ItemLog:
    """The append-only, crash-safe list of finished items of one run."""

    def __init__(self, out_dir: Path) -> None:
        self.path = out_dir / ITEMS
        self._lock = threading.Lock()

    def done(self) -> dict[str, dict[str, Any]]:
        """The finished items by id. A kill can only cut the last line short (each item is
        one append of a whole line), so an unreadable last line without its newline is
        dropped; an unreadable line anywhere else raises ``ItemLogError`` and nothing is
        changed, so finished items are never lost or judged again."""
        if not self.path.exists():
            return {}
        data = self.path.read_bytes()
        lines = data.splitlines(keepends=True)
        items: dict[str, dict[str, Any]] = {}
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError as exc:  # JSONDecodeError, or bytes that are not UTF-8
                if number == len(lines) and not line.endswith(b"\n"):
                    self._cut(len(data) - len(line))  # a line cut short by a kill
                    break
                raise ItemLogError(
                    f"{self.path}: line {number} is not a whole JSON item ({exc}); repair or "
                    "delete that line to resume (items on other lines are kept)"
                ) from None
            if not isinstance(item, dict) or "id" not in item:
                raise ItemLogError(f"{self.path}: line {number} is not an item with an 'id'")
            items[str(item["id"])] = item
        else:
            if lines and not lines[-1].endswith(b"\n"):
                self._end_line()  # a whole last item whose newline the kill cut off
        return items

    def _cut(self, size: int) -> None:
        with open(self.path, "r+b") as fh:
            fh.truncate(size)
            fh.flush()
            os.fsync(fh.fileno())

    def _end_line(self) -> None:
        with open(self.path, "ab") as fh:
            fh.write(b"\n")
            fh.flush()
            os.fsync(fh.fileno())

    def append(self, item: dict[str, Any]) -> None:
        line = json.dumps(item, ensure_ascii=False, default=str) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


def run_batch(
    questions: pd.DataFrame,
    pipeline: Pipeline | None,
    out_dir: Path,
    *,
    concurrency: int = 1,
    progress: bool = True,
    evaluate_all: Callable[[list[dict[str, Any]]], Iterator[dict[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    """Evaluate every question not already done in ``out_dir``; returns all items.

    Items are appended to the log as they finish, so a killed run resumes. ``evaluate_all``
    evaluates rows elsewhere (``app.ray_eval``: Ray workers) and yields the items as they
    finish, in any order; without it, ``pipeline`` runs here on ``concurrency`` threads."""
    out_dir.mkdir(parents=True, exist_ok=True)
    log = ItemLog(out_dir)
    done = log.done()
    rows = [r for r in questions.to_dict("records") if str(r["id"]) not in done]
    bar = _bar(len(questions), len(done), progress)
    for item in (evaluate_all(rows) if evaluate_all is not None
                 else _threads(rows, pipeline, concurrency)):
        item["id"] = str(item["id"])
        log.append(item)
        done[item["id"]] = item
        _tick(bar)
    if bar is not None:
        bar.close()
    order = [str(i) for i in questions["id"]]
    return [done[i] for i in order if i in done]


def _threads(rows: list[dict[str, Any]], pipeline: Pipeline | None, concurrency: int
             ) -> Iterator[dict[str, Any]]:
    if pipeline is None:
        raise ValueError("run_batch needs a pipeline or evaluate_all")
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        futures = [pool.submit(evaluate_item, r, pipeline) for r in rows]
        for fut in as_completed(futures):
            yield fut.result()


def judge_rows(rows: list[dict[str, Any]], pipeline: Pipeline, *, concurrency: int = 1,
               progress: bool = True) -> list[dict[str, Any]]:
    """``evaluate_item`` on every row, ``concurrency`` at once, in the rows' order, with a
    progress bar on stderr when it is a terminal (answers a minute and time left)."""
    bar = _bar(len(rows), 0, progress and sys.stderr.isatty(), desc="julgando",
               unit="resposta")
    out: list[dict[str, Any]] = [{} for _ in rows]
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        futures = {pool.submit(evaluate_item, r, pipeline): i for i, r in enumerate(rows)}
        for fut in as_completed(futures):
            out[futures[fut]] = fut.result()
            _tick(bar)
    if bar is not None:
        bar.close()
    return out


def _bar(total: int, initial: int, on: bool, *, desc: str = "avaliando",
         unit: str = "pergunta") -> Any:
    if not on:
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit=unit, dynamic_ncols=True,
                bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} "
                           "[{elapsed}<{remaining}{postfix}]")


def _tick(bar: Any) -> None:
    """One more done, and the rate a minute beside the bar (tqdm's own is a second)."""
    if bar is None:
        return
    bar.update(1)
    elapsed = bar.format_dict.get("elapsed") or 0.0
    done = bar.n - bar.format_dict.get("initial", 0)
    if elapsed > 0 and done > 0:
        bar.set_postfix_str(f"{60 * done / elapsed:.1f} {bar.unit}s/min")


def to_record(item: dict[str, Any]) -> Record:
    """An item in the shape of the reference report's record."""
    segs = [Hit(**s) for s in item.get("segments") or []]
    cited = item.get("citations") or []
    titles = reference_titles([c.get("title", "") for c in cited],
                              [c.get("n") or [] for c in cited])
    refs = [Reference(title=t, url=c.get("url", ""), start=c["start"], end=c["end"])
            for t, c in zip(titles, cited, strict=True)]
    return Record(
        qid=str(item["id"]),
        question=str(item["question"]),
        segments=segs,
        answer=item.get("answer") or "",
        references=refs,
        manual=item.get("manual"),
        ar=item.get("ar"),
        automated=item.get("automated"),
        reasoning=item.get("ar_reasoning"),
        correctness=item.get("correctness"),
        correctness_reasoning=item.get("correctness_reasoning"),
    )


def write_reports(
    items: Iterable[dict[str, Any]], out_dir: Path, *, hide_urls: bool = False
) -> dict[str, Any]:
    """records.md, summary.md, summary.html, rows.csv, rows.parquet; returns the summary."""
    items = list(items)
    rows = pd.DataFrame(
        [{**{k: v for k, v in it.items() if k not in ("segments", "citations", "contexts")},
          "retrieved": bool(it.get("segments"))}
         for it in items]
    )
    summary = summarise(rows)
    write_rows(rows, out_dir)
    write_summary(rows, summary, out_dir)
    write_records([to_record(it) for it in items], out_dir / "records.md", hide_urls=hide_urls)
    return summary


def relabel(items: list[dict[str, Any]], th: Thresholds, model: LabelModel | None = None
            ) -> list[dict[str, Any]]:
    """The items labelled again under ``th`` (the claims' correctness recomputed at
    ``th.support_at`` where their probabilities were recorded) and ``model`` where given; the
    input is not changed."""
    from eval.claims import recorded_probabilities, score_at

    p = Pipeline(judge=lambda m: "", thresholds=th, label_model=model)  # labels only
    out = []
    for it in items:
        it = dict(it)
        ps = recorded_probabilities(it)
        if ps and it.get("correctness_score") is not None:
            score = score_at(ps, th.support_at)
            it.update(correctness_score=score, correctness=score / 3)
        if it.get("ar_score") is not None:
            label, it["label_by"], it["automated_confidence"] = labelled_with_confidence(
                it, p, it.get("correctness_score") is not None)
            it["automated"] = label if label is not None else it.get("automated")
        out.append(it)
    return out


def load_items(out_dir: Path) -> list[dict[str, Any]]:
    return list(ItemLog(out_dir).done().values())
