"""Search: E5 + FAISS, BM25, or both fused by reciprocal rank fusion."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from corpus.bm25 import BM25Index
from corpus.embed import Embedder
from corpus.index import IndexData
from corpus.models import Cue, Hit

Mode = Literal["dense", "bm25", "hybrid"]
RRF_K = 60


def rrf(rankings: list[list[int]], k: int = RRF_K) -> list[tuple[int, float]]:
    """Reciprocal rank fusion of several ranked id lists, best first."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, cid in enumerate(ranking):
            fused[cid] = fused.get(cid, 0.0) + 1.0 / (k + rank + 1)
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))


@dataclass
class SearchTimings:
    embed_s: float = 0.0
    search_s: float = 0.0


@dataclass
class SearchResult:
    hits: list[Hit]
    timings: SearchTimings = field(default_factory=SearchTimings)


class Retriever:
    """Top-k segments for a question over one loaded index."""

    def __init__(self, data: IndexData, embedder: Embedder | None, mode: Mode = "hybrid") -> None:
        self.data = data
        self.embedder = embedder
        self.mode = mode
        segs = data.segments
        self._ids = segs["corpus_id"].to_numpy(np.int64)
        self._lecture = segs["lecture_id"].to_numpy()
        self._bm25 = BM25Index(self._ids.tolist(), segs["text"].tolist()) if len(segs) else None
        self._meta = data.lecture_meta()
        self._cues: dict[str, tuple[np.ndarray, list[Cue]]] = {}
        if data.cues is not None and len(data.cues):
            for lid, frame in data.cues.groupby("lecture_id", sort=False):
                cues = [Cue(float(a), float(b), str(t)) for a, b, t in
                        zip(frame["start"], frame["end"], frame["text"], strict=True)]
                cues.sort(key=lambda c: c.start)
                self._cues[str(lid)] = (np.array([c.start for c in cues]), cues)

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

    def search(
        self,
        question: str,
        k: int = 10,
        *,
        mode: Mode | None = None,
        lectures: list[str] | None = None,
    ) -> list[Hit]:
        return self.search_timed(question, k, mode=mode, lectures=lectures).hits

    def embed_query(self, question: str) -> np.ndarray:
        if self.embedder is None:
            raise RuntimeError("dense search needs an embedding model")
        return self.embedder.embed([question], "query")[0]

    def search_timed(
        self,
        question: str,
        k: int = 10,
        *,
        mode: Mode | None = None,
        lectures: list[str] | None = None,
        query_vec: np.ndarray | None = None,
    ) -> SearchResult:
        """Search, reporting time spent embedding the question and searching."""
        mode = mode or self.mode
        timings = SearchTimings()
        n = len(self._ids)
        if n == 0 or k <= 0:
            return SearchResult([], timings)
        mask = np.isin(self._lecture, lectures) if lectures else None
        pool = min(n, max(k * 5, 50))
        qv = query_vec
        if mode != "bm25" and qv is None:
            t0 = time.perf_counter()
            qv = self.embed_query(question)
            timings.embed_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        dense: list[int] = []
        if mode != "bm25" and qv is not None:
            dense = self._dense(qv, pool, mask)
        sparse: list[tuple[int, float]] = []
        if mode != "dense" and self._bm25 is not None:
            sparse = self._bm25.search(question, pool, mask)
        if mode == "dense":
            ranked = dense
        elif mode == "bm25":
            ranked = [cid for cid, _ in sparse]
        else:
            ranked = [cid for cid, _ in rrf([dense, [c for c, _ in sparse]])]
        ranked = ranked[:k]
        bm25_scores = dict(sparse)
        hits = []
        for cid in ranked:
            row = self.data.row_of[cid]
            score = (
                float(self.data.vectors[row] @ qv) if qv is not None else bm25_scores.get(cid, 0.0)
            )
            hits.append(self._hit(cid, row, score))
        timings.search_s = time.perf_counter() - t0
        return SearchResult(hits, timings)

    def _dense(self, qv: np.ndarray, pool: int, mask: np.ndarray | None) -> list[int]:
        if mask is not None:  # exact scores over the chosen lectures' vectors
            rows = np.flatnonzero(mask)
            if len(rows) == 0:
                return []
            scores = self.data.vectors[rows] @ qv
            order = np.argsort(-scores, kind="stable")[:pool]
            return [int(self._ids[rows[i]]) for i in order]
        index = self.data.faiss_index
        if index is None:
            scores = self.data.vectors @ qv
            order = np.argsort(-scores, kind="stable")[:pool]
            return [int(self._ids[i]) for i in order]
        _, ids = index.search(qv.reshape(1, -1).astype(np.float32), pool)
        return [int(i) for i in ids[0] if i >= 0]

    def _hit(self, cid: int, row: int, score: float) -> Hit:
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
        )

    def segment(self, corpus_id: int) -> Hit | None:
        row = self.data.row_of.get(int(corpus_id))
        return None if row is None else self._hit(int(corpus_id), row, 0.0)
