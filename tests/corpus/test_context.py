"""One context selection for the answerer, the judges and ragas: budget and focus."""

from __future__ import annotations

import numpy as np

from corpus.context import fit_texts, focus, numbered, rank_passages, said_at, share
from corpus.models import Cue, Hit


def test_water_filling_gives_short_texts_their_size_and_splits_the_rest() -> None:
    assert share(100, [10, 80, 80]) == [10, 45, 45]
    assert share(1000, [10, 20]) == [10, 20]


def test_fit_texts_drops_the_last_texts_rather_than_cut_below_the_minimum() -> None:
    texts = ["palavra " * 200] * 6  # 1,600 characters each
    kept = fit_texts(texts, budget=3000, min_chars=900)
    assert len(kept) == 3 and all(len(t) <= 1000 for t in kept)
    assert all(t.endswith("…") for t in kept)


def test_the_judge_block_cuts_like_the_answerer() -> None:
    texts = ["um " * 500, "dois " * 10]
    block = numbered(texts, 600)
    first, second = block.split("\n\n")
    assert first.startswith("[1] um") and first.endswith("…")
    assert second == "[2] " + " ".join(["dois"] * 10)
    assert len(block) <= 600 + 20


CUES = [
    Cue(100, 110, "Hoje vamos falar de redes neurais."),
    Cue(110, 120, "Primeiro, um pouco de história."),
    Cue(120, 130, "A ReLU zera os valores negativos."),
    Cue(130, 140, "Por isso ela treina mais rápido que a sigmoide."),
    Cue(140, 150, "Na próxima aula veremos convoluções."),
    Cue(150, 160, "Até lá, façam os exercícios."),
]
HIT = Hit(7, 0.9, "aula1", "Aula 1", "https://youtu.be/x", 100, 160,
          " ".join(c.text for c in CUES))


def keyword_embed(texts: list[str], kind: str) -> np.ndarray:
    """A stand-in for E5: one dimension per keyword, so 'ReLU' matches 'ReLU'."""
    words = ["relu", "história", "convoluções", "exercícios"]
    rows = np.array([[t.lower().count(w) for w in words] + [0.1] for t in texts], float)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_focus_trims_a_window_to_the_sentences_that_answer() -> None:
    [p] = focus("o que a relu faz?", [HIT], lambda h: CUES, keyword_embed, chars=90, group=2)
    assert "ReLU zera" in p.text
    assert "exercícios" not in p.text
    assert p.answer_start == 120  # the link opens where the answering sentence starts
    assert 100 <= p.start <= 120 and p.end <= 160


def test_an_answer_sentence_is_placed_where_the_passage_says_it() -> None:
    """The passage starts where it answers the question; each sentence of an answer drawn
    from it links where its own words are said."""
    [p] = focus("o que a relu faz?", [HIT], lambda h: CUES, keyword_embed, chars=200, group=1)
    assert p.answer_start == 120
    assert said_at("A ReLU zera os negativos [1].", p) == 120
    assert said_at("Ela treina mais rápido que a sigmoide [1].", p) == 130
    assert said_at("Na aula seguinte vêm as convoluções.", p) == 140
    # one shared word, or none, or a few of many, does not place a sentence: the citation's
    # link holds
    assert said_at("Ela é rápida.", p) is None
    assert said_at("A Lua é feita de queijo.", p) is None
    assert said_at("The ReLU trains faster than the sigmoid on most image datasets.", p) is None


def test_focus_reaches_past_the_window_edge_to_the_answer() -> None:
    """The window stops where the teacher comes to the subject; the next window says it.
    Looking ``reach`` seconds past the edge, the passage holds the answer, with its second;
    without, it stays inside the window."""
    window = Hit(7, 0.9, "aula1", "Aula 1", "https://youtu.be/x", 95, 118, "")

    def cues_in(h: Hit) -> list[Cue]:
        return [c for c in CUES if c.end > h.start and c.start < h.end]

    [inside] = focus("o que a relu faz?", [window], cues_in, keyword_embed, chars=60, group=1)
    [reached] = focus("o que a relu faz?", [window], cues_in, keyword_embed, chars=60, group=1,
                      reach=30)
    assert "ReLU" not in inside.text and inside.end <= 118
    assert "ReLU zera" in reached.text and reached.answer_start == 120 and reached.end == 130
    assert reached.hit is window
    assert "exercícios" not in reached.text  # about the chars asked, not the whole reach


def test_focus_without_cues_splits_the_window_text() -> None:
    [p] = focus("o que a relu faz?", [HIT], lambda h: [], keyword_embed, chars=80, group=1)
    assert "ReLU" in p.text and HIT.start <= p.answer_start < HIT.end


def test_a_passage_repeated_in_another_lecture_leaves_its_slot_to_a_new_one() -> None:
    copy = Hit(9, 0.85, "aula1-copia", "Aula 1 (cópia)", "https://youtu.be/y", 100, 160, HIT.text)
    other = Hit(8, 0.7, "aula2", "Aula 2", "https://youtu.be/z", 0, 60,
                "A sigmoide satura e o gradiente some nas camadas profundas.")
    passages = focus("o que a relu faz?", [HIT, copy, other], lambda h: CUES
                     if h.lecture_id != "aula2" else [], keyword_embed, chars=90, group=2)
    ranked = rank_passages(passages)
    assert [p.hit.lecture_id for p in ranked] == ["aula1", "aula2"]


def test_passages_keep_the_search_order_over_a_closer_sentence_elsewhere() -> None:
    # The search ranked aula1 first (fusion, reranker); aula2 says the question's word alone, so
    # its sentence is closer in E5. The first citation still comes from the search's best window.
    first = Hit(7, 0.8, "aula1", "Aula 1", "https://youtu.be/x", 0, 20,
                "A ReLU tem uma história curiosa. Façam os exercícios.")
    other = Hit(8, 0.95, "aula2", "Aula 2", "https://youtu.be/z", 0, 60, "A ReLU zera.")
    passages = focus("o que a relu faz?", [first, other], lambda h: [], keyword_embed,
                     chars=90, group=2)
    assert passages[1].similarity > passages[0].similarity
    assert [p.hit.lecture_id for p in rank_passages(passages)] == ["aula1", "aula2"]
