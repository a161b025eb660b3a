"""The gate's fitting and decision (pure), and the bench question reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from answer.evidence import (
    STRICT_STEPS,
    Gate,
    GateSample,
    fit,
    make_strict,
    read_questions,
    term_coverage,
)
from corpus.bm25 import TermRarity


def sample(answerable: bool, p: float, score: float, gold: bool | None = None) -> GateSample:
    feats = {"best_p": p, "top_score": score, "best_sim": score - 0.02,
             "term_cov": 1.0 if answerable else 0.5}
    return GateSample(answerable, [p, p - 0.3], [score, score - 0.05],
                      None if gold is None else [gold, False], feats)


def test_fit_separates_answerable_from_uncovered_and_reports_leave_one_out() -> None:
    samples = ([sample(True, 0.9 + i / 100, 0.88 + i / 200, True) for i in range(6)]
               + [sample(False, 0.6 + i / 50, 0.80 + i / 200) for i in range(6)])
    gate = fit(samples, model="m")
    assert gate.weights and gate.fitted["balanced_accuracy"] == 1.0
    assert gate.fitted["leave_one_out_balanced_accuracy"] >= 0.8
    yes = gate.decide([0.95, 0.5], [0.9], feats=samples[0].feats)
    no = gate.decide([0.65, 0.4], [0.8], feats=samples[-1].feats)
    assert yes.covered and yes.order[0] == 0
    assert not no.covered and no.order == [] and "P(covered)" in no.reason
    assert Gate.from_json(gate.to_json()) == gate  # stored and read back unchanged


def test_a_strict_gate_answers_none_of_the_fitting_questions_the_lectures_do_not_cover() -> None:
    samples = ([sample(True, 0.9, 0.86 + i / 100) for i in range(8)]
               + [sample(False, 0.9, 0.80 + i / 100) for i in range(6)])
    # one uncovered question looks answerable: the fit at 0.5 lets it through
    samples.append(GateSample(False, [0.9], [0.9], None, samples[10].feats | {
        "top_score": 0.885, "best_sim": 0.865, "term_cov": 1.0}))
    gate = fit(samples, model="m")
    let_through = [s for s in samples if not s.answerable
                   and gate.decide(s.probs, s.scores, feats=s.feats).covered]
    worst = max(gate.p_covered_of(s.feats) for s in let_through)
    make_strict(gate, samples)
    # the lowest step of P above the uncovered question that looked answerable
    assert gate.min_p == min(t for t in STRICT_STEPS if t > worst) > 0.5
    assert gate.fitted["strict_min_p"] == gate.min_p
    assert not any(gate.decide(s.probs, s.scores, feats=s.feats).covered
                   for s in samples if not s.answerable)
    kept = sum(gate.decide(s.probs, s.scores, feats=s.feats).covered
               for s in samples if s.answerable)
    assert 0 < kept < 8 and gate.fitted["strict_answerable_answered"] == kept
    assert Gate.from_json(gate.to_json()).min_p == gate.min_p  # stored and read back
    # the quote strategy quotes from the same P with this gate, not the default gate's cut
    assert Gate.from_json(gate.to_json()).quote_min_covered == gate.min_p


def test_threshold_gate_keeps_the_best_passage_and_those_above_p_pass() -> None:
    gate = Gate(p_covered=0.7, p_pass=0.6)
    d = gate.decide([0.65, 0.9, 0.2], [0.9, 0.85, 0.8], max_passages=3)
    assert d.covered and d.order == [0, 1]
    assert not gate.decide([0.5, None], [0.9]).covered
    assert not gate.decide([None, None], [0.9]).covered


def test_term_coverage_finds_missing_subjects() -> None:
    texts = ["a derivada mede a taxa de variação da função"]
    assert term_coverage("oq a derivada da funçao mede?", texts) == 1.0
    assert term_coverage("como faço merge de dataframes no pandas", texts) == 0.0


def test_a_students_everyday_words_do_not_count_against_coverage() -> None:
    # the lecture at the answer says "códigos de Hamming" and "erro", never "acha" or "errado"
    texts = ["Os códigos de Hamming usam bits de paridade para localizar um erro num bloco"]
    assert term_coverage("como o hamming acha o bit errado?", texts) == 1.0
    # the subject's own word still counts when it is missing
    assert term_coverage("como o reed-solomon acha o bit errado?", texts) == 0.0
    # English questions keep every word: "loss" and "model" are the subject's own there
    assert term_coverage("how does the model reduce its loss?", texts) == 0.0


def test_a_frequent_word_the_course_seldom_says_is_the_subject() -> None:
    # "aniversário" is among Portuguese's most frequent words, so it did not count, and a
    # passage on coin flips covered the birthday problem, which the course never teaches
    texts = ["A probabilidade de tirar cara duas vezes é um quarto: o problema pede que se "
             "multipliquem as probabilidades de cada lançamento"]
    question = "qual a probabilidade no problema do aniversario"
    assert term_coverage(question, texts) == 1.0
    said_seldom = {"aniversario"}.__contains__  # the index: one lecture says it, of many
    assert term_coverage(question, texts, said_seldom) == 0.5  # "probabilidade" found, not it
    # an everyday word the course says often still does not count
    hamming = ["Os códigos de Hamming usam bits de paridade para localizar um erro num bloco"]
    assert term_coverage("como o hamming acha o bit errado?", hamming, said_seldom) == 1.0


def test_a_word_the_lecture_says_in_another_form_counts() -> None:
    # the lecture says "usado"; the student "usada" (same stem, another ending)
    texts = ["Hoje quase ninguém treina redes com sigmoide: o padrão usado é a ReLU"]
    assert term_coverage("a sigmoide ainda é usada hj em dia?", texts) == 1.0
    # a subject the windows lack still counts against them: "usada" alone is found
    assert term_coverage("a tangente hiperbolica ainda é usada?", texts) == pytest.approx(1 / 3)


def test_an_english_term_in_a_portuguese_question_counts_when_the_lecture_says_it_in_portuguese(
        ) -> None:
    # the attention lecture's translation says "consulta", "chave" and "valor"; the student
    # keeps the English names
    texts = ["Cada palavra produz um vetor de consulta, e cada chave responde a ela; os valores "
             "são somados com os pesos da atenção."]
    assert term_coverage("o q é atenção num transformer? tipo query key value", texts) == (
        pytest.approx(2 / 3))  # "transformer" is not there
    assert term_coverage("o q é atenção? tipo query key value", texts) == 1.0
    # an English term the windows say nothing for still counts against them
    assert term_coverage("a atenção usa dropout na query?", texts) == pytest.approx(1 / 2)
    # the glossary's word must be said, not its first five letters ("valoriza" is no "valor")
    assert term_coverage("pra que serve o value?", ["o mercado valoriza a empresa"]) == 0.0
    # an English question is not read through the glossary
    assert term_coverage("what is the query vector?", texts) < 1.0
    # the MLP lecture's translation says "grandes modelos de linguagem", never "LLM"
    facts = ["Como os grandes modelos de linguagem podem armazenar fatos sobre o mundo?"]
    assert term_coverage("como os LLMs armazenam fatos?", facts) == 1.0


def test_how_a_student_points_or_asks_is_not_a_subject_the_lecture_must_say() -> None:
    texts = ["A integral é a área sob o gráfico: somamos retângulos cada vez mais finos."]
    assert term_coverage("pq a integral é a area embaixo do grafico?", texts) == 1.0
    assert term_coverage("resume pra mim a parte da integral", texts) == 1.0
    assert term_coverage("meu prof disse q a integral é area, pq?", texts) == 1.0
    assert term_coverage("resume a transformada de laplace", texts) == 0.0


def test_a_bad_question_line_is_named(tmp_path: Path) -> None:
    f = tmp_path / "q.jsonl"
    f.write_text('{"id": "a1", "question": "x", "answerable": false}\n{"id": "a2"}\n')
    with pytest.raises(ValueError, match=r"q.jsonl: line 2: missing field 'question'"):
        read_questions(f)
    f.write_text('{"id": "a1", "question": "x", "answerable": true}\n')
    with pytest.raises(ValueError, match="line 1: an answerable question needs gold_lecture"):
        read_questions(f)


def test_idf_coverage_weighs_the_question_s_specific_word() -> None:
    windows = ["o determinante mede quanto a transformação estica a área",
               "a matriz inversa desfaz a transformação da matriz",
               "a área do paralelogramo e a matriz", "a derivada mede a taxa de variação"]
    rarity = TermRarity(windows)
    assert rarity.coverage("o que o determinante mede?", windows[:1]) == 1.0
    # a neighbouring subject: its common words are there, its own word is not
    sarrus = rarity.coverage("como calcula o determinante pela regra de sarrus?", windows[:1])
    assert sarrus < 0.4


def test_a_gate_on_idf_coverage_declines_a_subject_the_lectures_only_brush(
        sample_index, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from answer.pipeline import Pipeline
    from app.config import Settings
    from app.services import build_retriever

    gate_file = tmp_path / "gate.json"
    gate_file.write_text(Gate(weights={"idf_cov": 20.0}, bias=-10.0).to_json())
    settings = Settings(index_dir=sample_index.root, gate_file=gate_file, llm_base_url=None)
    retriever, embedder = build_retriever(settings)
    answerer = Pipeline.from_settings(settings, None, retriever,
                                      lambda texts, kind: embedder.embed(texts, kind))
    covered = "o que a última camada de uma rede neural faz?"
    neighbour = "como uma rede neural LSTM guarda memória de longo prazo?"
    feats = {q: answerer.features(q, answerer.candidates_for(q, h), [], h)
             for q in (covered, neighbour) for h in [retriever.search(q, 5)]}
    assert feats[covered]["idf_cov"] > 0.5 > feats[neighbour]["idf_cov"]
    reply = answerer.run(neighbour, retriever.search(neighbour, 5))  # no LLM is asked
    assert reply.covered is False and reply.answer is not None
    assert "idf_cov" in reply.reason and reply.moments  # the closest moments are still shown


def test_the_shipped_gate_answers_the_demo_s_question_over_the_sample_lectures(
        sample_index) -> None:  # type: ignore[no-untyped-def]
    # `make demo`, the README's first command, asks this over the sample lectures, which
    # answer it word for word; their best passage scores under the shipped model's threshold
    # (fitted on other corpora), and the fallback reads that every rare word of it is there
    from answer.pipeline import Pipeline
    from app.config import Settings
    from app.services import build_retriever

    settings = Settings(index_dir=sample_index.root, llm_base_url=None)
    retriever, embedder = build_retriever(settings)
    answerer = Pipeline.from_settings(settings, None, retriever,
                                      lambda texts, kind: embedder.embed(texts, kind))
    assert answerer.gate.fallback, "answer/gate.json ships a fallback"

    def decided(question: str):  # type: ignore[no-untyped-def]
        hits = retriever.search(question, 4)
        _, probs, feats = answerer.gate_signals(question, hits)
        return answerer.gate.decide(probs, [h.score for h in hits], 2, feats)

    demo = decided("Qual função de ativação é mais usada hoje e por quê?")
    assert demo.covered, demo.reason
    assert decided("o que é sobreajuste?").covered
    # a subject the lectures never teach is still declined
    assert not decided("como funciona o docker?").covered
    # the main model alone declines the demo's question on this corpus: the fallback did it
    assert "fallback" in demo.reason


def test_fit_gate_reads_several_question_files_and_refits_from_stored_signals(
        tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys
    from dataclasses import asdict

    from tests.conftest import ROOT

    answers, extra = tmp_path / "answers.jsonl", tmp_path / "gate.jsonl"
    answers.write_text('{"id": "a1", "question": "o que é a ReLU?", "answerable": true, '
                       '"gold_lecture": "redes-neurais"}\n'
                       '{"id": "u1", "question": "como uso o docker?", "answerable": false}\n')
    extra.write_text('{"id": "n1", "question": "o que é a regra de Sarrus?", '
                     '"answerable": false, "kind": "neighbouring subject"}\n')
    # stored signals of an older fit, without idf_cov: the fit uses what every sample has
    stored = ([sample(True, 0.9 + i / 100, 0.88 + i / 200) for i in range(6)]
              + [sample(False, 0.6 + i / 50, 0.80 + i / 200) for i in range(6)])
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({**asdict(s), "model": "m"}) + "\n" for s in stored))
    out = tmp_path / "gate.json"
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "fit-gate", str(answers), str(extra), "--out",
         str(out), "--samples", str(samples), "--json"], cwd=ROOT, capture_output=True,
        text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, check=False)
    assert done.returncode == 0, done.stderr
    gate = Gate.load(out)
    assert gate.fitted["questions_file"] == "answers.jsonl, gate.jsonl"
    assert gate.weights and "idf_cov" not in gate.weights
    assert json.loads(done.stdout)["fitted"]["questions"] == 12


def test_fit_gate_weighs_only_the_signals_named_and_names_an_unknown_one(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys
    from dataclasses import asdict

    from tests.conftest import ROOT

    questions = tmp_path / "retrieval.jsonl"  # a retrieval bench's rows: no `answerable`
    questions.write_text('{"id": "d1", "question": "o que é a ReLU?", '
                         '"gold_lecture": "redes-neurais", "gold_start": 0, "gold_end": 60}\n')
    assert read_questions(questions)[0].answerable
    stored = [GateSample(a, [None], [0.9], None,
                         {"best_p": 0.0, "top_score": 0.88 + i / 500, "best_sim": 0.9,
                          "top_unit": (0.90 if a else 0.87) + i / 1000,
                          "term_cov": 1.0 if a != (i == 0) else 0.5})
              for a in (True, False) for i in range(8)]
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({**asdict(s), "model": "m"}) + "\n" for s in stored))

    def fit_gate(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "app.cli", "fit-gate", str(questions), "--samples",
             str(samples), "--out", str(tmp_path / "gate.json"), *extra], cwd=ROOT,
            capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
            check=False)

    done = fit_gate("--features", "top_unit,term_cov")
    assert done.returncode == 0, done.stderr
    gate = Gate.load(tmp_path / "gate.json")
    assert set(gate.weights) <= {"top_unit", "term_cov"} and "top_unit" in gate.weights
    # best_p never varies (measured without the LLM check): never a signal of the fit
    done = fit_gate()
    assert done.returncode == 0 and "best_p" not in Gate.load(tmp_path / "gate.json").weights
    done = fit_gate("--features", "top_unit,unit_cov")
    assert done.returncode != 0 and "unit_cov" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    # a fallback model, read only when every rare word of the question is in the passage
    previous = tmp_path / "previous.json"
    previous.write_text(Gate(weights={"top_score": 45.0, "term_cov": 4.0}, bias=-42.5).to_json())
    assert fit_gate("--fallback", str(previous)).returncode == 0
    gate = Gate.load(tmp_path / "gate.json")
    assert gate.fallback["weights"] == {"top_score": 45.0, "term_cov": 4.0}
    low = {"top_score": 0.874, "top_unit": 0.874, "term_cov": 1.0, "best_p": 0.0,
           "best_sim": 0.9}
    assert gate.fallback_p(low) is None  # without idf_cov: not read
    assert gate.fallback_p({**low, "idf_cov": 0.5}) is None  # a word of it is missing
    assert gate.fallback_p({**low, "idf_cov": 1.0}) >= 0.5  # every rare word there: covers
    done = fit_gate("--strict")
    assert done.returncode == 0, done.stderr
    gate = Gate.load(tmp_path / "gate.json")
    assert gate.fitted["strict_min_p"] == gate.min_p >= 0.5
    assert not any(gate.decide([None], [0.9], feats=s.feats).covered
                   for s in stored if not s.answerable)
    done = fit_gate("--strict", "--fallback", str(previous))
    assert done.returncode != 0 and "--strict" in done.stderr
    previous.write_text(Gate().to_json())  # thresholds only: no model to fall back on
    done = fit_gate("--fallback", str(previous))
    assert done.returncode != 0 and "previous.json" in done.stderr


def test_a_fitted_gate_reads_the_question_s_words_even_when_a_similarity_alone_separates() -> None:
    # best_sim separates the fitting samples perfectly; term coverage only mostly. A threshold
    # on a cosine alone does not carry to another corpus, so the fit keeps a lexical signal.
    samples = [GateSample(a, [None], [0.9], None,
                          {"best_sim": (0.90 if a else 0.86) + i / 1000,
                           "term_cov": 1.0 if a != (i == 0) else 0.5})
               for a in (True, False) for i in range(8)]
    gate = fit(samples)
    assert "term_cov" in gate.weights


def test_english_names_are_put_in_the_lectures_portuguese_words() -> None:
    from answer.glossary import in_lecture_words

    assert in_lecture_words("pra que serve o Dot Product?") == "pra que serve o produto escalar?"
    assert in_lecture_words("self-attention vs cross attention") == (
        "autoatenção vs atenção cruzada")
    assert in_lecture_words("o que é a loss function da rede?") == (
        "o que é a função de custo da rede?")
    # a word inside another is not a name: "dot products" whole, not "dot" in "dotted"
    assert in_lecture_words("the dotted product rules") == "the dotted product rules"
    # the lectures translate "span" and "rank" as "extensão" and "classificação", and a
    # matrix's "posto" too; a health post stays a post
    assert in_lecture_words("o que é o span de dois vetores") == (
        "o que é o extensão de dois vetores")
    assert in_lecture_words("o que é o posto de uma matriz?") == (
        "o que é o classificação de uma matriz?")
    assert in_lecture_words("qual o posto de saúde mais perto?") == (
        "qual o posto de saúde mais perto?")
