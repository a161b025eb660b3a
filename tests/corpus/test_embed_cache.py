"""The answerer's embed cache: the same vectors as E5 itself, each text embedded once."""

from __future__ import annotations

import numpy as np

from corpus.context import focus
from corpus.embed import EmbedCache
from corpus.models import Cue, Hit


def test_cached_vectors_are_e5s_own_and_each_text_is_embedded_once(embedder) -> None:  # type: ignore[no-untyped-def]
    calls: list[list[str]] = []

    def embed(texts: list[str], kind: str) -> np.ndarray:
        calls.append(list(texts))
        return embedder.embed(texts, kind)

    cache = EmbedCache(embed, size=3)
    texts = ["A derivada mede a taxa de variação.", "O autovetor fica na sua reta.",
             "A derivada mede a taxa de variação."]
    rows = cache(texts, "passage")
    # the same vectors: a batch of another size rounds the 4-bit model's sums otherwise, in
    # the fourth decimal (cosine with E5's own at least 0.9999)
    own = embedder.embed(texts, "passage")
    assert np.all(np.sum(rows * own, axis=1) >= 0.9999)
    assert calls == [texts[:2]]  # the repeat inside one call: once
    again = cache([texts[1], "Outra frase sobre integrais."], "passage")
    assert calls[-1] == ["Outra frase sobre integrais."]
    assert np.allclose(again[0], rows[1])
    # a query is another text than the passage with the same words
    assert not np.allclose(cache([texts[0]], "query")[0], rows[0], atol=1e-3)
    # at most `size` texts are kept: the least recently used goes first
    cache(["Uma quarta frase."], "passage")
    before = len(calls)
    cache([texts[0]], "passage")
    assert len(calls) == before + 1 and cache.embedded == 6 and cache.served == 8


def test_focus_through_the_cache_picks_the_same_sentences(embedder) -> None:  # type: ignore[no-untyped-def]
    cues = [Cue(10.0 * i, 10.0 * i + 9, t) for i, t in enumerate([
        "Hoje vamos falar de vetores.", "Um vetor tem direção e sentido.",
        "A regra da cadeia deriva a composição de funções.",
        "Multiplicamos a derivada de fora pela derivada de dentro.",
        "No fim, um exercício para casa."])]
    hit = Hit(1, 0.9, "calc", "Cálculo", "https://youtu.be/x", 0.0, 50.0,
              " ".join(c.text for c in cues))

    def plain(texts: list[str], kind: str) -> np.ndarray:
        return embedder.embed(texts, kind)

    cache = EmbedCache(plain)
    question = "como funciona a regra da cadeia?"
    [direct] = focus(question, [hit], lambda h: cues, plain, chars=120, group=2)
    for _ in range(2):
        [cached] = focus(question, [hit], lambda h: cues, cache, chars=120, group=2)
        assert (cached.text, cached.answer_start) == (direct.text, direct.answer_start)
    assert "regra da cadeia" in direct.text
    assert cache.embedded == cache.served // 2  # the second question embedded nothing
