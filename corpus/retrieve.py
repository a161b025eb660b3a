"""Search: E5 + FAISS and BM25 over windows and the short units inside them, fused by
weighted reciprocal rank fusion (corpus.fusion), optionally reranked (corpus.rerank)."""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

import numpy as np

from corpus.bm25 import BM25Index, TermRarity
from corpus.embed import Embedder
from corpus.fusion import Fusion, Ranking, fuse, load_fusion, top_pool
from corpus.index import IndexData
from corpus.language import Lang, corpus_language
from corpus.mentions import mentioned_time
from corpus.models import Cue, Hit
from corpus.query import QueryRewriter
from corpus.repeats import misfiled
from corpus.text import fold
from corpus.titles import Titles
from corpus.units import best_per_window, members
from corpus.vector_store import FolderStore, Ranked, VectorStore, cosines

Mode = Literal["dense", "bm25", "hybrid"]

FEW_LECTURES = 3
FEW_LECTURES_OF = 20
"""``Retriever.said_in_few_lectures``: a word fewer than 3 lectures say, in an index of 20 or
more (with fewer, nearly every word is said by few of them)."""


@dataclass
class SearchTimings:
    embed_s: float = 0.0
    search_s: float = 0.0
    rerank_s: float = 0.0


@dataclass
class SearchResult:
    hits: list[Hit]
    timings: SearchTimings = field(default_factory=SearchTimings)
    query: str = ""
    """The question as searched, after the rewriter (corpus.query)."""


def _windows_only(fusion: Fusion, mode: str) -> Fusion:
    """``fusion`` for an index without units: the window channels, or one of them alone."""
    weights = {c: (w if "_unit" not in c else 0.0) for c, w in fusion.weights.items()}
    if not any(weights.values()):
        weights["bm25" if mode == "bm25" else "dense"] = 1.0
        if mode == "hybrid":
            weights["bm25"] = 1.0
    return replace(fusion, weights=weights)


class Reranker(Protocol):
    """Reorders the first fused hits of a question, best first (corpus.rerank)."""

    name: str

    def rerank(self, question: str, hits: list[Hit]) -> list[Hit]: ...


class Retriever:
    """Top-k windows for a question over one loaded index.

    ``fusion`` weighs the channels (window and unit, dense and BM25; default: the shipped
    ``corpus/fusion.json``); an index without units
    uses the window channels alone. ``rewriter`` turns a student's spelling into the corpus'
    (None: the question as typed). ``reranker`` reorders the first ``rerank_candidates`` fused
    hits (None: no rerank). ``store`` answers the window channels (default: the folder's FAISS
    index and BM25; ``corpus.vector_store.MilvusStore`` for a shared one).
    """

    def __init__(
        self,
        data: IndexData,
        embedder: Embedder | None,
        mode: Mode = "hybrid",
        *,
        fusion: Fusion | None = None,
        rewriter: QueryRewriter | None = None,
        reranker: Reranker | None = None,
        rerank_candidates: int = 10,
        store: VectorStore | None = None,
    ) -> None:
        self.data = data
        self.store = store if store is not None else FolderStore(data)
        self.embedder = embedder
        self.mode = mode
        self.fusion = fusion or load_fusion()
        self.rewriter = rewriter
        self.reranker = reranker
        self.rerank_candidates = rerank_candidates
        self.adapted: Callable[[str], dict[str, float]] | None = None
        """The course-adapted model's signals of a question (``corpus.adapt.signals``), set
        where the gate reads them."""
        segs = data.segments
        self._ids = segs["corpus_id"].to_numpy(np.int64)
        self._lecture = segs["lecture_id"].to_numpy()
        self._start = segs["start"].to_numpy(np.float64)
        self._end = segs["end"].to_numpy(np.float64)
        self._meta = data.lecture_meta()
        self._cues: dict[str, tuple[np.ndarray, list[Cue]]] = {}
        if data.cues is not None and len(data.cues):
            for lid, frame in data.cues.groupby("lecture_id", sort=False):
                cues = [Cue(float(a), float(b), str(t)) for a, b, t in
                        zip(frame["start"], frame["end"], frame["text"], strict=True)]
                cues.sort(key=lambda c: c.start)
                self._cues[str(lid)] = (np.array([c.start for c in cues]), cues)
        self.misfiled: dict[str, str] = (
            misfiled(data.cues, {lid: m.get("title", "") for lid, m in self._meta.items()})
            if data.cues is not None and len(data.cues) else {})
        """Lectures left out of search -> the lecture whose transcript they repeat
        (``corpus.repeats.misfiled``); a search restricted to them still finds them."""
        self._hidden = np.isin(self._lecture, list(self.misfiled))
        self._units = data.units if data.units is not None and len(data.units) else None
        self._unit_bm25: BM25Index | None = None
        if self._units is not None and data.unit_vectors is not None:
            u = self._units
            self._unit_lecture = u["lecture_id"].to_numpy()
            self._unit_start = u["start"].to_numpy(np.float64)
            self._pair_w, self._pair_u = members(
                self._lecture, self._start, self._end, self._unit_lecture, self._unit_start,
                u["end"].to_numpy(np.float64))
            self._unit_bm25 = BM25Index(list(range(len(u))), u["text"].tolist())
        else:
            self._units = None

    @functools.cached_property
    def language(self) -> Lang:
        """The language most of the lectures are in (``corpus.language``)."""
        return corpus_language(self.data.segments["text"].tolist())

    @property
    def has_units(self) -> bool:
        return self._units is not None

    @functools.cached_property
    def titles(self) -> Titles:
        """The lectures' title words (``corpus.titles``), built on first use."""
        lectures = self.data.lectures
        return Titles.of(dict(zip(lectures["lecture_id"].astype(str),
                                  lectures["title"].fillna("").astype(str), strict=True)))

    def numbered_lecture(self, question: str) -> str | None:
        """The one lecture whose title or id gives it the number ``question`` names ("resume a
        aula 4"), else None (``corpus.titles.Titles.by_number``)."""
        return self.titles.by_number(question)

    def titled_lectures(self, query: str) -> frozenset[str]:
        """The lectures whose titles name every word of ``query`` (as searched: rewritten),
        when few do (``corpus.titles.Titles.named``)."""
        return self.titles.named(query)

    @functools.cached_property
    def rarity(self) -> TermRarity:
        """Document frequencies of the windows' words (built on first use, kept)."""
        return TermRarity(self.data.segments["text"].tolist())

    @functools.cached_property
    def _lectures_saying(self) -> dict[str, int] | None:
        """How many lectures say each word, by its first five letters, accents folded (built
        on first use, kept: about 1 s for 1,700 windows); None for an index of fewer than
        ``FEW_LECTURES_OF`` lectures."""
        segs = self.data.segments
        if segs["lecture_id"].nunique() < FEW_LECTURES_OF:
            return None
        seen: dict[str, set[str]] = {}
        for lecture, text in zip(segs["lecture_id"], segs["text"], strict=True):
            for word in set(re.findall(r"[a-z0-9]+", fold(str(text)))):
                seen.setdefault(word[:5], set()).add(lecture)
        return {prefix: len(lectures) for prefix, lectures in seen.items()}

    def said_in_few_lectures(self, word: str) -> bool:
        """Whether this index holds at least ``FEW_LECTURES_OF`` lectures and fewer than
        ``FEW_LECTURES`` of them say ``word`` (folded; by its first five letters): a subject of
        a few lectures, or of none, not a word every lecture says in passing."""
        counts = self._lectures_saying
        return counts is not None and counts.get(word[:5], 0) < FEW_LECTURES

    def term_coverage(self, question: str, texts: Sequence[str]) -> float:
        """Share of the question's idf mass (as searched: rewritten) that the best of ``texts``
        holds (``corpus.bm25.TermRarity``)."""
        return self.rarity.coverage(self.rewrite(question), texts)

    def cues_for(self, hit: Hit) -> list[Cue]:
        """The timed cues (sentences) inside ``hit``'s window; empty for an index without cues."""
        found = self._cues.get(hit.lecture_id)
        if found is None:
            return []
        starts, cues = found
        lo = int(np.searchsorted(starts, hit.start - 1e-6))
        while lo > 0 and cues[lo - 1].end > hit.start + 1e-6:
            lo -= 1
        hi = int(np.searchsorted(starts, hit.end - 1e-6))
        return cues[lo:hi]

    def cues_between(self, lecture_id: str, start: float, end: float) -> list[Cue]:
        """The timed cues of ``lecture_id`` between ``start`` and ``end`` seconds (those that
        overlap the start included); empty for an index without cues."""
        return self.cues_for(Hit.span(lecture_id, start, end))

    def lecture_windows(self, lecture_id: str) -> list[Hit]:
        """Every window of ``lecture_id``, in time order (score 0): what a summary reads."""
        rows = np.flatnonzero(self._lecture == lecture_id)
        rows = rows[np.argsort(self._start[rows], kind="stable")]
        return [self._hit(int(self._ids[r]), int(r), 0.0) for r in rows]

    def span_text(self, lecture_id: str, start: float, end: float) -> str | None:
        """What the lecture says between ``start`` and ``end`` (its cues), None when the index
        has no cues for it."""
        cues = self.cues_between(lecture_id, start, end)
        text = " ".join(c.text.strip() for c in cues if c.text.strip())
        return text or None

    def search(self, question: str, k: int = 10, *, mode: Mode | None = None,
               lectures: list[str] | None = None) -> list[Hit]:
        """The ``k`` best windows for ``question`` (``search_timed`` without the timings)."""
        return self.search_timed(question, k, mode=mode, lectures=lectures).hits

    def rewrite(self, question: str) -> str:
        return self.rewriter(question) if self.rewriter is not None else question

    def embed_query(self, question: str) -> np.ndarray:
        if self.embedder is None:
            raise RuntimeError("dense search needs an embedding model")
        return self.embedder.embed([self.rewrite(question)], "query")[0]

    def search_timed(
        self,
        question: str,
        k: int = 10,
        *,
        mode: Mode | None = None,
        lectures: list[str] | None = None,
        query_vec: np.ndarray | None = None,
        fusion: Fusion | None = None,
        rerank: bool | None = None,
        locate: bool = True,
    ) -> SearchResult:
        """Search, reporting time spent embedding the question, searching and reranking.

        ``fusion`` overrides the retriever's weights for this call (benchmarks); ``rerank``
        turns the configured reranker on or off for this call; ``locate=False`` skips finding
        each hit's ``answer_start`` when no unit channel is weighted (the first slice's cost)."""
        mode = mode or self.mode
        timings = SearchTimings()
        query = self.rewrite(question)
        n = len(self._ids)
        if n == 0 or k <= 0:
            return SearchResult([], timings, query)
        fusion = self._fusion_for(mode, fusion)
        pool = min(n, max(k * 5, 50))
        qv = query_vec
        if mode != "bm25" and qv is None:
            t0 = time.perf_counter()
            qv = self.embed_query(question)
            timings.embed_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        rankings: dict[str, Ranking] = {}
        if qv is not None and fusion.weight("dense"):
            rankings["dense"] = self._rows(self.store.dense(qv, pool, lectures))
        if fusion.weight("bm25"):
            rankings["bm25"] = self._rows(self.store.lexical(query, pool, lectures))
        unit_scores: dict[str, np.ndarray] = {}
        wants_units = locate or fusion.weight("dense_unit") or fusion.weight("bm25_unit")
        if self._units is not None and wants_units:
            unit_scores = self._unit_channels(query, qv, mode, lectures)
            rankings.update(self._unit_rankings(unit_scores, fusion, lectures, pool))
        fused = self._fused(question, rankings, fusion, lectures)
        use_rerank = self.reranker is not None and (rerank if rerank is not None else True)
        keep = max(k, self.rerank_candidates) if use_rerank else k
        bm25_of = dict(zip(*rankings["bm25"], strict=True)) if "bm25" in rankings else {}
        hits = [self._hit(int(self._ids[row]), row,
                          float(self.data.vectors[row] @ qv) if qv is not None
                          else float(bm25_of.get(row, 0.0)),
                          self._answer_start(row, unit_scores, fusion),
                          self._unit_score(row, unit_scores.get("dense_unit")))
                for row, _ in fused[:keep]]
        timings.search_s = time.perf_counter() - t0
        if use_rerank and self.reranker is not None and hits:
            t0 = time.perf_counter()
            head = hits[: self.rerank_candidates]
            hits = self.reranker.rerank(question, head) + hits[len(head):]
            timings.rerank_s = time.perf_counter() - t0
        return SearchResult(hits[:k], timings, query)

    def _fusion_for(self, mode: Mode, fusion: Fusion | None) -> Fusion:
        """The call's fusion weights (the retriever's by default), restricted to ``mode``'s
        channels and, in an index without units, to the window channels."""
        fusion = fusion or self.fusion
        if mode != "hybrid":
            fusion = fusion.restricted(mode)
        if self._units is None:
            fusion = _windows_only(fusion, mode)
        return fusion

    def _unit_channels(self, query: str, qv: np.ndarray | None, mode: Mode,
                       lectures: list[str] | None) -> dict[str, np.ndarray]:
        """Each unit's dense and BM25 score (those ``mode`` uses; -inf where BM25 finds none)."""
        unit_scores: dict[str, np.ndarray] = {}
        if qv is not None and mode != "bm25":
            unit_scores["dense_unit"] = self._unit_dense(qv, lectures)
        if self._unit_bm25 is not None and mode != "dense":
            bm = self._unit_bm25.scores(query)
            unit_scores["bm25_unit"] = np.where(bm > 0, bm, -np.inf)
        return unit_scores

    def _unit_rankings(self, unit_scores: dict[str, np.ndarray], fusion: Fusion,
                       lectures: list[str] | None, pool: int) -> dict[str, Ranking]:
        """The windows ranked by their best unit, per weighted unit channel."""
        mask = np.isin(self._lecture, lectures) if lectures else None
        rankings: dict[str, Ranking] = {}
        for channel, scores in unit_scores.items():
            if fusion.weight(channel):
                best, _ = best_per_window(len(self._ids), self._pair_w, self._pair_u, scores)
                if mask is not None:
                    best = np.where(mask, best, -np.inf)
                rankings[channel] = top_pool(best, pool)
        return rankings

    def _fused(self, question: str, rankings: dict[str, Ranking], fusion: Fusion,
               lectures: list[str] | None) -> list[tuple[int, float]]:
        """The channels fused, misfiled lectures hidden, and the windows at a moment the
        question mentions brought forward."""
        fused = self._visible(fuse(rankings, fusion), lectures)
        moment = (mentioned_time(question)
                  if self.rewriter is not None and self.rewriter.mentions else None)
        if moment is not None and fused:
            fused = self._at_moment(fused, moment)
        return fused

    def _visible(self, ranked: list[tuple[int, float]], lectures: list[str] | None
                 ) -> list[tuple[int, float]]:
        """``ranked`` without the windows of misfiled lectures, unless ``lectures`` names them."""
        if not self.misfiled:
            return ranked
        wanted = set(lectures or ())
        return [(r, v) for r, v in ranked
                if not self._hidden[r] or self._lecture[r] in wanted]

    MOMENT_SLACK = 60.0
    """Seconds either side of the moment a question names ("lá pelo minuto 7") that its
    windows may start or end: students round the minute."""

    def _at_moment(self, fused: list[tuple[int, float]], moment: tuple[float, float]
                   ) -> list[tuple[int, float]]:
        """``fused`` with the windows of its first lecture that overlap the moment the question
        names (``corpus.mentions.mentioned_time``, give or take ``MOMENT_SLACK``) moved to the
        front: those in the fused ranking in its order, then the rest by distance to the
        moment. Unchanged when that lecture has no window there (a shorter video)."""
        lecture = self._lecture[fused[0][0]]
        lo, hi = moment[0] - self.MOMENT_SLACK, moment[1] + self.MOMENT_SLACK
        there = np.flatnonzero((self._lecture == lecture) & (self._start < hi)
                               & (self._end > lo))
        if len(there) == 0:
            return fused
        inside = set(there.tolist())
        ranked = [(r, v) for r, v in fused if r in inside]
        seen = {r for r, _ in ranked}
        middle = (moment[0] + moment[1]) / 2
        rest = sorted((r for r in inside if r not in seen),
                      key=lambda r: abs((self._start[r] + self._end[r]) / 2 - middle))
        top = fused[0][1]
        return [*ranked, *((r, top) for r in rest),
                *((r, v) for r, v in fused if r not in inside)]

    def pools(self, question: str, pool: int = 50) -> dict[str, Ranking]:
        """Every channel's ``pool`` best windows for ``question`` over the whole index (what
        fusion weights are fitted on); unit channels only for an index with units."""
        query = self.rewrite(question)
        n = len(self._ids)
        out: dict[str, Ranking] = {}
        if n == 0:
            return out
        pool = min(pool, n)
        if self.embedder is not None:
            qv = self.embed_query(question)
            out["dense"] = self._rows(self.store.dense(qv, pool))
            if self._units is not None:
                best, _ = best_per_window(n, self._pair_w, self._pair_u, self._unit_dense(qv, None))
                out["dense_unit"] = top_pool(best, pool)
        out["bm25"] = self._rows(self.store.lexical(query, pool))
        if self._unit_bm25 is not None:
            bm = self._unit_bm25.scores(query)
            best, _ = best_per_window(n, self._pair_w, self._pair_u, np.where(bm > 0, bm, -np.inf))
            out["bm25_unit"] = top_pool(best, pool)
        if self.misfiled:  # as search shows them
            shown = {ch: ~self._hidden[rows] for ch, (rows, _) in out.items()}
            out = {ch: (rows[shown[ch]], scores[shown[ch]]) for ch, (rows, scores) in out.items()}
        return out

    def window(self, row: int) -> tuple[str, float, float]:
        """Lecture id, start and end of the window at ``row``."""
        seg = self.data.segments.iloc[row]
        return str(seg["lecture_id"]), float(seg["start"]), float(seg["end"])

    def _unit_dense(self, qv: np.ndarray, lectures: list[str] | None) -> np.ndarray:
        vecs = self.data.unit_vectors
        assert vecs is not None
        scores = cosines(vecs, qv)
        if lectures:
            scores = np.where(np.isin(self._unit_lecture, lectures), scores, -np.inf)
        return scores

    def _answer_start(self, row: int, unit_scores: dict[str, np.ndarray], fusion: Fusion
                      ) -> float | None:
        """Where the window's best unit starts: the unit ranked best inside the window by the
        unit channels (their fusion weights, or equal weights when fusion uses none)."""
        if not unit_scores:
            return None
        inside = self._units_in(row)
        if len(inside) == 0:
            return None
        weights = {c: fusion.weight(c) for c in unit_scores}
        if not any(weights.values()):
            weights = dict.fromkeys(unit_scores, 1.0)
        total = np.zeros(len(inside))
        for channel, scores in unit_scores.items():
            order = np.argsort(-scores[inside], kind="stable")
            ranks = np.empty(len(inside))
            ranks[order] = np.arange(1, len(inside) + 1)
            total += weights[channel] / (fusion.k + ranks)
        return float(self._unit_start[inside[int(np.argmax(total))]])

    def _units_in(self, row: int) -> np.ndarray:
        """The rows of the units inside the window at ``row`` (pairs are sorted by window)."""
        lo, hi = np.searchsorted(self._pair_w, row), np.searchsorted(self._pair_w, row, "right")
        return self._pair_u[lo:hi]

    def _unit_score(self, row: int, scores: np.ndarray | None) -> float | None:
        """The dense cosine of the best unit inside the window at ``row`` (None without)."""
        if scores is None:
            return None
        inside = self._units_in(row)
        if len(inside) == 0:
            return None
        best = float(scores[inside].max())
        return best if np.isfinite(best) else None

    def _rows(self, ranked: Ranked) -> Ranking:
        """A store's corpus ids as rows of this catalogue version; ids it does not know (a
        shared store already holding a newer or older version's windows) are left out."""
        ids, scores = ranked
        rows = [self.data.row_of.get(int(c), -1) for c in ids]
        keep = np.array([r >= 0 for r in rows], bool)
        return np.array(rows, np.int64)[keep], np.asarray(scores, np.float64)[keep]

    def _hit(self, cid: int, row: int, score: float, answer_start: float | None = None,
             unit_score: float | None = None) -> Hit:
        seg = self.data.segments.iloc[row]
        meta = self._meta.get(str(seg["lecture_id"]), {})
        return Hit(
            corpus_id=cid,
            score=score,
            lecture_id=str(seg["lecture_id"]),
            title=meta.get("title", ""),
            url=meta.get("url", ""),
            start=float(seg["start"]),
            end=float(seg["end"]),
            text=str(seg["text"]),
            answer_start=answer_start,
            unit_score=unit_score,
        )

    def segment(self, corpus_id: int) -> Hit | None:
        row = self.data.row_of.get(int(corpus_id))
        return None if row is None else self._hit(int(corpus_id), row, 0.0)
