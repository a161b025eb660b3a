"""BM25 over the stored segments (bm25s), with Portuguese-aware tokenisation."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

_WORD = re.compile(r"\w+", re.UNICODE)


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN, STOPWORDS_PORTUGUESE

    extra = {  # spoken-Portuguese fillers that ASR transcripts are full of
        "né", "então", "aí", "tá", "tipo", "assim", "aqui", "lá", "gente", "vai", "vou",
        "pra", "pro", "coisa", "ok", "eh", "ah", "ã", "hã", "entendeu", "beleza", "bom",
        "que", "qual", "quais", "como", "porque", "por", "sobre", "explique", "explica",
    }
    words = set(STOPWORDS_PORTUGUESE) | set(STOPWORDS_EN) | extra
    return frozenset(_fold(w) for w in words)


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    import Stemmer

    return Stemmer.Stemmer("portuguese")


def _fold(word: str) -> str:
    """Lower-case and drop accents: ASR and translations spell accents inconsistently."""
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokenize(text: str) -> list[str]:
    """Words, stop words removed, Portuguese Snowball stems, accents folded."""
    stops = _stopwords()
    stem = _stemmer().stemWord
    out = []
    for raw in _WORD.findall(text.lower()):
        if len(raw) < 2 or raw.isdigit() and len(raw) < 2:
            continue
        folded = _fold(raw)
        if folded in stops:
            continue
        out.append(_fold(stem(raw)))
    return out


class BM25Index:
    """An in-memory BM25 index over segment texts, rows aligned with ``ids``."""

    def __init__(self, ids: Sequence[int], texts: Sequence[str]) -> None:
        import bm25s

        self.ids = np.asarray(ids, dtype=np.int64)
        self.model = bm25s.BM25()
        tokens = [tokenize(t) or ["__empty__"] for t in texts]
        self.model.index(tokens, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        """The BM25 score of every row for ``query`` (zeros when no query word is indexed)."""
        known = [t for t in tokenize(query) if t in self.model.vocab_dict]
        if not known:
            return np.zeros(len(self.ids))
        return np.asarray(self.model.get_scores(known), dtype=np.float64)

    def search(
        self, query: str, k: int, mask: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """Top ``k`` (corpus id, BM25 score) with a positive score; ``mask`` limits the rows."""
        toks = tokenize(query)
        n = len(self.ids)
        if not toks or n == 0:
            return []
        known = [t for t in toks if t in self.model.vocab_dict]
        if not known:
            return []
        scores = self.model.get_scores(known)
        if mask is not None:
            scores = np.where(mask, scores, 0.0)
        k = min(k, n)
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(self.ids[r]), float(scores[r])) for r in top if scores[r] > 0]
