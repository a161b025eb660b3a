"""BM25 over the stored segments (bm25s), with Portuguese-aware tokenisation."""

from __future__ import annotations

import math
import re
import zlib
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from corpus.text import fold

_WORD = re.compile(r"\w+", re.UNICODE)


@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    """Portuguese and English stop words and spoken fillers, accents folded."""
    from bm25s.stopwords import STOPWORDS_EN, STOPWORDS_PORTUGUESE

    extra = {  # spoken-Portuguese fillers that ASR transcripts are full of
        "né", "então", "aí", "tá", "tipo", "assim", "aqui", "lá", "gente", "vai", "vou",
        "pra", "pro", "coisa", "ok", "eh", "ah", "ã", "hã", "entendeu", "beleza", "bom",
        "que", "qual", "quais", "como", "porque", "por", "sobre", "explique", "explica",
    }
    words = set(STOPWORDS_PORTUGUESE) | set(STOPWORDS_EN) | extra
    return frozenset(fold(w) for w in words)


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    import Stemmer

    return Stemmer.Stemmer("portuguese")


def stem(word: str) -> str:
    """``word``'s Portuguese Snowball stem, accents folded ("usada" and "usados" -> "usad")."""
    return fold(_stemmer().stemWord(word))


def tokenize(text: str) -> list[str]:
    """Words, stop words removed, Portuguese Snowball stems, accents folded."""
    stops = stopwords()
    stem = _stemmer().stemWord
    out = []
    for raw in _WORD.findall(text.lower()):
        if len(raw) < 2 or raw.isdigit() and len(raw) < 2:
            continue
        folded = fold(raw)
        if folded in stops:
            continue
        out.append(fold(stem(raw)))
    return out


def documents(texts: Sequence[str]) -> list[list[str]]:
    """Each text's tokens as BM25 indexes them (a text with none counts as one placeholder)."""
    return [tokenize(t) or ["__empty__"] for t in texts]


class BM25Index:
    """An in-memory BM25 index over segment texts, rows aligned with ``ids``."""

    def __init__(self, ids: Sequence[int], texts: Sequence[str]) -> None:
        import bm25s

        self.ids = np.asarray(ids, dtype=np.int64)
        self.model = bm25s.BM25()
        tokens = documents(texts)
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


def _idf(n: int, df: int) -> float:
    """BM25's (Lucene's) idf of a term found in ``df`` of ``n`` documents."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def document_frequencies(tokens: Sequence[Sequence[str]]) -> Counter[str]:
    """In how many of the documents each token occurs."""
    df: Counter[str] = Counter()
    for toks in tokens:
        df.update(set(toks))
    return df


class TermRarity:
    """How specific each word of a question is to this corpus: BM25's idf over the windows,
    a word the lectures never say counting as the rarest of all.

    ``coverage`` is the share of a question's idf mass that the best of some texts holds. A
    question the lectures answer finds its specific words ("quaternion", "hamming") in the
    passage that answers it; one on a neighbouring subject ("transformada de Laplace",
    "regra de Sarrus") finds its common words ("matriz", "calcula") but not its specific one,
    though the retrieval score of the passage can be as high."""

    def __init__(self, texts: Sequence[str]) -> None:
        docs = documents(texts)
        self.n = len(docs)
        self.df = document_frequencies(docs)

    def idf(self, token: str) -> float:
        return _idf(self.n, self.df.get(token, 0))

    def coverage(self, question: str, texts: Sequence[str]) -> float:
        """Share of ``question``'s idf mass (each distinct token once) held by the best of
        ``texts``; 1.0 when the question has no content word."""
        terms = list(dict.fromkeys(tokenize(question)))
        total = sum(self.idf(t) for t in terms)
        if not terms or total <= 0:
            return 1.0
        best = 0.0
        for text in texts:
            have = set(tokenize(text))
            best = max(best, sum(self.idf(t) for t in terms if t in have) / total)
        return best


K1, B = 1.5, 0.75  # bm25s' defaults (its "lucene" variant), which BM25Index uses


def term_id(token: str) -> int:
    """A token's dimension in a sparse vector: stable across processes and hosts (CRC-32, not
    Python's salted ``hash``). Two tokens of one corpus rarely share a dimension; when they do,
    their weights add, as in a hashed BM25."""
    return zlib.crc32(token.encode("utf-8")) & 0x7FFFFFFF


class BM25Weights:
    """BM25 as sparse vectors, for a vector store's lexical field: a document's vector holds
    each term's length-normalised frequency, a query's holds each term's idf, and their inner
    product is the BM25 score BM25Index gives (same tokenizer, same variant, same k1 and b).

    The document weights depend on the corpus' average length: after a change to the corpus
    the stored vectors are written again (``corpus.vector_store.MilvusStore.sync``).
    """

    def __init__(self, texts: Sequence[str]) -> None:
        self.tokens = documents(texts)
        self.n = len(self.tokens)
        self.avgdl = sum(len(t) for t in self.tokens) / max(1, self.n)
        self.idf = {t: _idf(self.n, d) for t, d in document_frequencies(self.tokens).items()}

    def document(self, i: int) -> dict[int, float]:
        """The sparse vector of the ``i``-th text."""
        toks = self.tokens[i]
        norm = K1 * (1 - B + B * len(toks) / self.avgdl) if self.avgdl else K1
        out: dict[int, float] = {}
        for tok, tf in Counter(toks).items():
            key = term_id(tok)
            out[key] = out.get(key, 0.0) + tf / (tf + norm)
        return out

    def query(self, text: str) -> dict[int, float]:
        """The sparse vector of a query: idf of each known term, once per occurrence (empty
        when no term of the query is in the corpus)."""
        out: dict[int, float] = {}
        for tok in tokenize(text):
            if tok in self.idf:
                key = term_id(tok)
                out[key] = out.get(key, 0.0) + self.idf[tok]
        return out
