"""The likelihood scorer that reads the embedded GGUF quantised, through llama.cpp's library."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from corpus.errors import InputError
from eval.likelihood import messages
from eval.llama_scorer import LlamaCppScorer

QUESTION = "o que o determinante de uma transformação mede?"
REFERENCE = ("O fator pelo qual a transformação escala as áreas; negativo quando a orientação do "
             "espaço é invertida.")
ANSWER = "Quanto as áreas esticam ou encolhem, e o sinal diz se o plano foi virado."


@pytest.fixture(scope="module")
def scorer() -> LlamaCppScorer:
    from app.config import get_settings
    from app.embedded_llm import assemble_gguf

    s = LlamaCppScorer(assemble_gguf(get_settings().service.cache_dir), threads=2)
    yield s
    s.close()


def test_each_token_of_the_reply_gets_its_log_probability(scorer: LlamaCppScorer) -> None:
    after = scorer.logprobs(messages(QUESTION, REFERENCE), ANSWER)
    alone = scorer.logprobs(messages(QUESTION, None), ANSWER)
    assert len(after) == len(alone) >= 10
    assert all(lp <= 0 and math.isfinite(lp) for lp in after + alone)
    # the reference says it: the reply is likelier after reading it
    assert sum(after) > sum(alone)
    assert scorer.logprobs(messages(QUESTION, None), "") == []


def test_a_prompt_read_before_gives_the_same_figures_as_read_afresh(
        scorer: LlamaCppScorer) -> None:
    """The tokens of the last prompt stay decoded; a reply scored after another that shares the
    prompt's start reuses them, and must read exactly as on a fresh context."""
    first = scorer.logprobs(messages(QUESTION, REFERENCE), ANSWER)
    scorer.logprobs(messages(QUESTION, None), "Outra resposta, bem diferente desta.")
    again = scorer.logprobs(messages(QUESTION, REFERENCE), ANSWER)
    scorer.close()  # a fresh context on the next call
    fresh = scorer.logprobs(messages(QUESTION, REFERENCE), ANSWER)
    assert again == pytest.approx(first, abs=1e-3)
    assert fresh == pytest.approx(first, abs=1e-3)


def test_a_file_that_is_not_a_model_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-model.gguf"
    bad.write_bytes(b"GGUF but not really")
    for path in (bad, tmp_path / "missing.gguf"):
        with pytest.raises(InputError, match=f"AULA_JUDGE_LIKELIHOOD: .*{path.name}"):
            LlamaCppScorer(path).logprobs(messages(QUESTION, None), ANSWER)


def test_read_without_a_repacked_copy_the_gains_are_the_same(scorer: LlamaCppScorer) -> None:
    """The judge maps the weights without llama.cpp's repacked copy (less memory); this
    library's parameters must be laid out as known, and the gains read the same."""
    from eval.likelihood import answer_gains
    from eval.llama_scorer import _library, _without_repacking

    assert _without_repacking(_library().llama_model_default_params())
    plain = LlamaCppScorer(scorer.path, threads=2, repack=False)
    try:
        got = answer_gains(plain, QUESTION, ANSWER, REFERENCE, None)
    finally:
        plain.close()
    want = answer_gains(scorer, QUESTION, ANSWER, REFERENCE, None)
    assert got["reference_gain"] == pytest.approx(want["reference_gain"], abs=0.05)
    assert got["reference_gain"] > 0.1
