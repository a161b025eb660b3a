"""Retrieval quality on held-out student questions with gold spans, Portuguese and English.

Portuguese: bench/data/questions_3b1b.jsonl (60 questions over all of 3b1b-pt; the fusion
weights were fitted on other questions: bench/data/questions_3b1b_dev.jsonl and the fitting half
of answers_3b1b.jsonl). English: bench/data/questions_karpathy.jsonl over karpathy-en (Whisper
JSON). Each index is built once with the default settings and kept under bench/out/.
``pt_terms_*``: bench/data/questions_terms.jsonl, 35 questions over 3b1b-pt that name a concept
as Brazilian students do where the machine translation says it otherwise ("bhaskara" /
"fórmula quadrática", "produto interno" / "produto escalar", "rank" / "classificação",
"backprop" / "retropropagação"; ``term`` and ``transcript_term`` on each line), 6 of them
controls; written to measure a glossary of such names (not taken: docs/search.md).

Printed side by side, in the same run: the first slice's hybrid (plain RRF of dense and BM25
over the two-minute windows), each retriever alone over windows, each with its units, and the
fitted fusion, with and without the query rewriter; span-hit@1/@5, MRR@10, video-hit@5 and
start-in-span@1 (eval/retrieval.py); query latency p50 (embed + search) of the first slice and of
the fusion; the fitted fusion on the questions with typing slips added (``with_typos``), with the
rewriter's spelling correction on and off, and on the questions wrapped in chat framing
(``bench/framing.py``: "eae pessoal, ... valeu!"), with the rewriter's framing strip on and
off. What an answer cites (``_passages``): the windows focused to their best sentences, in the
retriever's order and in the former E5-similarity order, on the held-out questions and on the
fitting ones the order was chosen on. With AULA_RERANK_MODEL, the cross-encoder rerank too;
BENCH_LLM_RERANK_N > 0 runs the LLM yes/no rerank (embedded model, BENCH_RERANK_CANDIDATES
candidates, 10 by default) on that many Portuguese questions and prints its quality beside the
fusion's on the same questions, and the latency it adds. The query-likelihood rerank
(``AULA_RERANK=likelihood``, the embedded model in this process) runs on the first
BENCH_LIKELIHOOD_RERANK_N questions of each language (all by default, about 15 s a question on
2 cores; 0 skips it): the fusion, the rerank as the service orders it (with the shipped
weight of the fused order) and the likelihood alone, on the same hits. Ingest cost of the units:
BENCH_INGEST_LECTURES lectures ingested with and without units (seconds, index MB).
``pt_mentions_*`` / ``en_mentions_*``: bench/data/questions_lecture_refs.jsonl, the bench
questions rephrased as students ask about what they watched ("o prof disse na aula que ...",
"no vídeo do bayes, uns 10-11 min, ...", "around minute 14 of the puzzle video he ..."; written
by a helper session blind to ``corpus.mentions``), each split and language apart (``fit``: the
development questions, ``test``: the held-out ones), with the rewriter's mention strip (and the
minute it reads) on and off, beside the same questions as first written (``source``).
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.common import (
    CORPUS_3B1B,
    DATA,
    OUT,
    SHARED,
    dir_size_mb,
    embedded_embedder,
    env_int,
    median,
    read_jsonl,
    ready,
    report,
)

INCLUDE = "**/portuguese/sentence_translations.json"
QUESTIONS = DATA / "questions_3b1b.jsonl"
QUESTIONS_TERMS = DATA / "questions_terms.jsonl"
QUESTIONS_MENTIONS = DATA / "questions_lecture_refs.jsonl"
QUESTIONS_EN = DATA / "questions_karpathy.jsonl"
CORPUS_EN = SHARED / "corpora" / "karpathy-en"


def _index(name: str, corpus: Path, include: list[str] | None, embedder: Any,
           figures: dict[str, Any]) -> Any:
    from corpus.index import IndexStore
    from corpus.ingest import ingest

    store = IndexStore(OUT / name)
    if not store.exists() or "units" not in (store.load(with_faiss=False).manifest):
        t0 = time.perf_counter()
        s = ingest([corpus], store, embedder, include=include, progress=True)
        figures[f"{name}_ingest_s"] = time.perf_counter() - t0
        figures[f"{name}_ingest_segments"] = s.total_segments
    return store


def index_3b1b(embedder: Any, figures: dict[str, Any]) -> tuple[Any, Any]:
    """The 3b1b-pt index (built once under bench/out/) and its data, loaded."""
    store = _index("index-3b1b-enpt", CORPUS_3B1B, [INCLUDE], embedder, figures)
    return store, store.load()


def _settings(store: Any) -> Any:
    from app.config import Settings

    return Settings(index_dir=store.root, rerank="off")


def _compare(prefix: str, retriever: Any, questions: list[Any], figures: dict[str, Any]) -> None:
    """Every configuration's figures on ``questions`` (see the module docstring)."""
    from corpus.fusion import FIRST_SLICE
    from eval.retrieval import run

    fitted = retriever.fusion
    rewriter = retriever.rewriter
    configs: list[tuple[str, Any, str | None, bool]] = [
        ("first_slice_hybrid", FIRST_SLICE, "hybrid", False),
        ("dense", replace(FIRST_SLICE, weights={"dense": 1.0}), "dense", False),
        ("bm25", replace(FIRST_SLICE, weights={"bm25": 1.0}), "bm25", False),
        ("dense_units", fitted, "dense", True),
        ("bm25_units", fitted, "bm25", True),
        ("fused_no_rewrite", fitted, "hybrid", False),
        ("fused", fitted, "hybrid", True),
    ]
    for name, fusion, mode, rewrite in configs:
        retriever.rewriter = rewriter if rewrite else None
        figs, _ = run(retriever, questions, fusion=fusion, mode=mode, rerank=False,
                      links_at_window_start=name in ("first_slice_hybrid", "dense", "bm25"))
        for key, val in figs.items():
            figures[f"{prefix}_{name}_{key}"] = val
    retriever.rewriter = rewriter
    _latency(prefix, retriever, questions, figures)
    for label, singles in (("window_retrievers", ("dense", "bm25")),
                           ("any_single", ("dense", "bm25", "dense_units", "bm25_units"))):
        figures[f"{prefix}_fused_at_or_above_{label}"] = all(
            figures[f"{prefix}_fused_{key}"] >= max(figures[f"{prefix}_{n}_{key}"] for n in singles)
            for key in ("span_hit@1", "span_hit@5", "mrr@10"))


KEYBOARD = "qwertyuiop asdfghjkl zxcvbnm"
"""Neighbouring keys (same row) for the slips a student's thumb makes."""


def with_typos(question: str, seed: str, rate: float = 0.35) -> str:
    """``question`` with typing slips, the same every run for the same ``seed``: each
    lower-case word of 5 letters or more gets, with probability ``rate`` (and the longest word
    always), one slip after its first letter: a letter left out, two letters swapped, a letter
    doubled, or a neighbouring key struck instead."""
    import random
    import re

    rng = random.Random(seed)
    words = re.findall(r"[a-zà-ÿ]{5,}", question)
    longest = max(words, key=len) if words else None

    def slip(m: re.Match[str]) -> str:
        w = m.group(0)
        if not (w == longest or rng.random() < rate):
            return w
        i = rng.randrange(1, len(w) - 1)
        kind = rng.randrange(4)
        if kind == 0:
            return w[:i] + w[i + 1:]
        if kind == 1:
            return w[:i] + w[i + 1] + w[i] + w[i + 2:]
        if kind == 2:
            return w[:i] + w[i] + w[i:]
        row = next((r for r in KEYBOARD.split() if w[i] in r), None)
        if row is None:
            return w[:i] + w[i + 1:]
        j = row.index(w[i])
        near = row[j - 1] if j > 0 and (j == len(row) - 1 or rng.random() < 0.5) else row[j + 1]
        return w[:i] + near + w[i + 1:]

    return re.sub(r"[a-zà-ÿ]{5,}", slip, question)


def _spelling(prefix: str, retriever: Any, questions: list[Any], figures: dict[str, Any]
              ) -> None:
    """The fitted fusion on the questions as written and with typing slips (``with_typos``),
    with the rewriter's spelling correction on and off."""
    from dataclasses import replace as dc_replace

    from eval.retrieval import run

    rewriter = retriever.rewriter
    if rewriter is None:
        return
    typed = [dc_replace(q, question=with_typos(q.question, q.id)) for q in questions]
    plain = type(rewriter)(rewriter.accents, abbreviations=rewriter.abbreviations)
    for label, qs in (("clean", questions), ("typos", typed)):
        for fix, rw in (("speller", rewriter), ("no_speller", plain)):
            retriever.rewriter = rw
            figs, _ = run(retriever, qs, rerank=False)
            for key in ("span_hit@1", "span_hit@5", "mrr@10"):
                figures[f"{prefix}_{label}_{fix}_{key}"] = figs[key]
    retriever.rewriter = rewriter


def _framing(prefix: str, retriever: Any, questions: list[Any], lang: str,
             figures: dict[str, Any]) -> None:
    """The fitted fusion on the questions wrapped in a chat message's framing
    (``bench.framing.with_framing``: a greeting or an apology before, thanks or an aside
    after), with the rewriter's framing strip on and off."""
    from dataclasses import replace as dc_replace

    from bench.framing import with_framing
    from eval.retrieval import run

    rewriter = retriever.rewriter
    if rewriter is None:
        return
    framed = [dc_replace(q, question=with_framing(q.question, q.id, lang)) for q in questions]
    for strip in (True, False):
        rewriter.framing = strip
        figs, _ = run(retriever, framed, rerank=False)
        for key in ("span_hit@1", "span_hit@5", "mrr@10"):
            figures[f"{prefix}_{'stripped' if strip else 'as_typed'}_{key}"] = figs[key]
    rewriter.framing = True


def _mentions(prefix: str, retriever: Any, lang: str, figures: dict[str, Any]) -> None:
    """The fitted fusion on the questions that mention the lecture, the teacher or a minute
    (``QUESTIONS_MENTIONS``) in ``lang``, per split: as first written (``source``), and
    rephrased with the rewriter's mention strip off (``as_typed``) and on (``stripped``)."""
    from dataclasses import replace as dc_replace

    from eval.retrieval import read_gold, run

    rewriter = retriever.rewriter
    if rewriter is None or not QUESTIONS_MENTIONS.exists():
        return
    source_of = {row["id"]: row["source_id"] for row in read_jsonl(QUESTIONS_MENTIONS)}
    first = {q.id: q.question for path in (DATA / "questions_3b1b_dev.jsonl", QUESTIONS,
                                           QUESTIONS_EN) for q in read_gold(path)}
    lectures = set(retriever.data.segments["lecture_id"])
    for split in ("fit", "test"):
        asked = [q for q in read_gold(QUESTIONS_MENTIONS, split=split, lang=lang)
                 if q.lecture in lectures]  # not the English ones over 3b1b-pt
        if not asked:
            continue
        source = [dc_replace(q, question=first[source_of[q.id]]) for q in asked]
        figures[f"{prefix}_{split}_questions"] = len(asked)
        for name, qs, strip in (("source", source, True), ("as_typed", asked, False),
                                ("stripped", asked, True)):
            rewriter.mentions = strip
            figs, _ = run(retriever, qs, rerank=False)
            for key in ("span_hit@1", "span_hit@5", "mrr@10", "start_in_span@1"):
                figures[f"{prefix}_{split}_{name}_{key}"] = figs[key]
    rewriter.mentions = True


def _latency(prefix: str, retriever: Any, questions: list[Any], figures: dict[str, Any]) -> None:
    """Query latency (embed + search) of the first slice and of the fusion, measured in turns
    on each question (4 rounds, each first in two) so that both see the same machine state;
    medians."""
    from corpus.fusion import FIRST_SLICE

    rewriter = retriever.rewriter
    first: list[float] = []
    fused: list[float] = []
    fused_search: list[float] = []
    first_search: list[float] = []
    def one(first_slice: bool, question: str) -> None:
        retriever.rewriter = None if first_slice else rewriter
        t0 = time.perf_counter()
        res = (retriever.search_timed(question, 10, fusion=FIRST_SLICE, locate=False)
               if first_slice else retriever.search_timed(question, 10, rerank=False))
        (first if first_slice else fused).append(time.perf_counter() - t0)
        (first_search if first_slice else fused_search).append(res.timings.search_s)

    for turn in range(4):  # each goes first in half the rounds
        for q in questions:
            one(turn % 2 == 0, q.question)
            one(turn % 2 == 1, q.question)
    retriever.rewriter = rewriter
    figures[f"{prefix}_first_slice_hybrid_query_p50_ms"] = median(first) * 1000
    figures[f"{prefix}_fused_query_p50_ms"] = median(fused) * 1000
    figures[f"{prefix}_fused_latency_ratio"] = median(fused) / median(first)
    figures[f"{prefix}_first_slice_search_only_p50_ms"] = median(first_search) * 1000
    figures[f"{prefix}_fused_search_only_p50_ms"] = median(fused_search) * 1000


def _rerank(prefix: str, retriever: Any, questions: list[Any], reranker: Any,
            figures: dict[str, Any]) -> None:
    from eval.retrieval import run

    plain, plain_s = run(retriever, questions, rerank=False)
    retriever.reranker = reranker
    retriever.rerank_candidates = env_int("BENCH_RERANK_CANDIDATES", 10)
    figures[f"{prefix}_candidates"] = retriever.rerank_candidates
    ranked, ranked_s = run(retriever, questions, rerank=True)
    retriever.reranker = None
    figures[f"{prefix}_questions"] = len(questions)
    for key in ("span_hit@1", "span_hit@5", "mrr@10", "start_in_span@1"):
        figures[f"{prefix}_fused_{key}"] = plain[key]
        figures[f"{prefix}_reranked_{key}"] = ranked[key]
    figures[f"{prefix}_added_p50_s"] = median(ranked_s) - median(plain_s)


def _likelihood_rerank(prefix: str, retriever: Any, questions: list[Any], reranker: Any,
                       figures: dict[str, Any]) -> None:
    """The query-likelihood rerank of the first BENCH_RERANK_CANDIDATES fused hits: each
    question's hits scored once, ordered as the service orders them (the likelihood plus the
    shipped weight of the fused order) and by the likelihood alone, beside the fusion; the
    seconds the scoring adds (p50)."""
    from tqdm import tqdm

    from corpus.rerank import reorder, with_prior
    from eval.retrieval import figures as span_figures

    n = env_int("BENCH_RERANK_CANDIDATES", 10)
    orders: dict[str, list[Any]] = {"fused": [], "reranked": [], "likelihood_only": []}
    added: list[float] = []
    for q in tqdm(questions, desc=prefix, unit="question"):
        hits = retriever.search_timed(q.question, max(10, n), rerank=False).hits
        t0 = time.perf_counter()
        scores = reranker.scores(q.question, hits[:n])
        added.append(time.perf_counter() - t0)
        orders["fused"].append(hits)
        orders["reranked"].append(reorder(hits[:n], with_prior(scores, reranker.prior))
                                  + hits[n:])
        orders["likelihood_only"].append(reorder(hits[:n], scores) + hits[n:])
    figures[f"{prefix}_questions"] = len(questions)
    figures[f"{prefix}_candidates"] = n
    figures[f"{prefix}_fusion_prior"] = reranker.prior
    for name, results in orders.items():
        for key, val in span_figures(questions, results).items():
            figures[f"{prefix}_{name}_{key}"] = val
    figures[f"{prefix}_added_p50_s"] = median(added)


def _by_similarity(passages: list[Any]) -> list[Any]:
    """The passage order the answerer used before it kept the retriever's order (the baseline):
    the best sentence group's E5 similarity plus half the window's E5 cosine, repeats left out as
    shipped."""
    from corpus.context import rank_passages

    return rank_passages(sorted(passages, key=lambda p: -(p.similarity + 0.5 * p.hit.score)))


def _passages(prefix: str, retriever: Any, embedder: Any, questions: list[Any],
              figures: dict[str, Any]) -> None:
    """What an answer cites: the top ``focus_windows`` windows focused to their sentences
    closest to the question (``corpus.context.focus``, as the answerer does), in the retriever's
    order (shipped) and re-ranked by E5 similarity (``_by_similarity``). Printed: the share of
    questions whose first passage overlaps the gold span (the first citation), and whose first
    ``answer_passages`` do (what the generator reads)."""
    from app.config import Settings
    from corpus.context import focus, rank_passages
    from corpus.query import strip_framing

    settings = Settings()
    reads = settings.answer.passages
    hits: dict[str, list[int]] = {"retriever_order": [0, 0], "similarity_order": [0, 0]}
    for q in questions:
        query = strip_framing(q.question)
        found = retriever.search_timed(query, 10, rerank=False).hits
        passages = focus(query, found[: settings.answer.focus_windows], retriever.cues_for,
                         embedder.embed, chars=settings.answer.passage_chars,
                         reach=settings.answer.focus_reach)
        for name, order in (("retriever_order", rank_passages),
                            ("similarity_order", _by_similarity)):
            first = [q.overlaps(p.hit.lecture_id, p.start, p.end)
                     for p in order(passages)[:reads]]
            hits[name][0] += bool(first[:1] and first[0])
            hits[name][1] += any(first)
    n = max(1, len(questions))
    figures[f"{prefix}_questions"] = len(questions)
    for name, (one, some) in hits.items():
        figures[f"{prefix}_{name}_span_hit@1"] = one / n
        figures[f"{prefix}_{name}_span_hit@{reads}"] = some / n


def _ingest_cost(embedder: Any, figures: dict[str, Any]) -> None:
    """Ingest time and index size of a few lectures with and without units."""
    from corpus.index import IndexStore
    from corpus.ingest import SegmentParams, ingest

    n = env_int("BENCH_INGEST_LECTURES", 6)
    if n <= 0:
        return
    folders = sorted(p.parent.parent for p in CORPUS_3B1B.glob(INCLUDE))[:n]
    for label, params in (("windows_only", SegmentParams(unit_seconds=0)),
                          ("with_units", SegmentParams())):
        with tempfile.TemporaryDirectory() as tmp:
            store = IndexStore(Path(tmp) / "index")
            t0 = time.perf_counter()
            ingest(folders, store, embedder, include=[INCLUDE], params=params)
            figures[f"ingest_{n}_lectures_{label}_s"] = time.perf_counter() - t0
            figures[f"ingest_{n}_lectures_{label}_index_mb"] = dir_size_mb(store.root)
    figures["ingest_units_time_ratio"] = (figures[f"ingest_{n}_lectures_with_units_s"]
                                          / figures[f"ingest_{n}_lectures_windows_only_s"])


def main() -> None:
    from app.config import Settings
    from app.services import retriever_for
    from eval.retrieval import read_gold

    if not ready(CORPUS_3B1B):
        return
    base = Settings()
    embedder = embedded_embedder(base)
    figures: dict[str, Any] = {}
    store, data = index_3b1b(embedder, figures)
    figures["pt_windows"] = len(data.segments)
    figures["pt_units"] = 0 if data.units is None else len(data.units)
    figures["pt_index_mb"] = dir_size_mb(store.current_dir() or store.root)
    retriever = retriever_for(_settings(store), data, embedder)
    pt = read_gold(QUESTIONS)
    figures["pt_questions"] = len(pt)
    _compare("pt", retriever, pt, figures)
    if QUESTIONS_TERMS.exists():
        terms = read_gold(QUESTIONS_TERMS)
        figures["pt_terms_questions"] = len(terms)
        _compare("pt_terms", retriever, terms, figures)
    _spelling("pt_spelling", retriever, pt, figures)
    _framing("pt_framed", retriever, pt, "pt", figures)
    _mentions("pt_mentions", retriever, "pt", figures)
    _passages("pt_passages", retriever, embedder, pt, figures)
    fitting = read_gold(DATA / "questions_3b1b_dev.jsonl") + read_gold(
        DATA / "answers_3b1b.jsonl", split="fit")
    _passages("pt_fit_passages", retriever, embedder, fitting, figures)
    if os.environ.get("AULA_RERANK_MODEL"):
        from corpus.rerank import CrossEncoderReranker

        _rerank("pt_cross_encoder", retriever, pt,
                CrossEncoderReranker(os.environ["AULA_RERANK_MODEL"]), figures)
    n_llm = env_int("BENCH_LLM_RERANK_N", 0)
    if n_llm > 0:
        from contextlib import ExitStack

        from answer.evidence import llm_reranker
        from app.services import build_llm

        with ExitStack() as stack:
            llm, _ = build_llm(base, stack)
            _rerank("pt_llm_rerank", retriever, pt[:n_llm], llm_reranker(llm.first_token),
                    figures)
    n_lik = env_int("BENCH_LIKELIHOOD_RERANK_N", len(pt))
    likelihood = None
    if n_lik > 0:
        from app.services import likelihood_reranker

        likelihood = likelihood_reranker(Settings(rerank="likelihood"))
        likelihood.load()
        _likelihood_rerank("pt_likelihood_rerank", retriever, pt[:n_lik], likelihood,
                           figures)
    if CORPUS_EN.exists() and QUESTIONS_EN.exists():
        store_en = _index("index-karpathy", CORPUS_EN, None, embedder, figures)
        data_en = store_en.load()
        retriever_en = retriever_for(_settings(store_en), data_en, embedder)
        en = read_gold(QUESTIONS_EN)
        figures["en_questions"] = len(en)
        _compare("en", retriever_en, en, figures)
        if likelihood is not None:
            _likelihood_rerank("en_likelihood_rerank", retriever_en, en[:n_lik],
                               likelihood, figures)
        _spelling("en_spelling", retriever_en, en, figures)
        _framing("en_framed", retriever_en, en, "en", figures)
        _mentions("en_mentions", retriever_en, "en", figures)
        _passages("en_passages", retriever_en, embedder, en, figures)
    _ingest_cost(embedder, figures)
    report("retrieval_quality", figures)


if __name__ == "__main__":
    main()
