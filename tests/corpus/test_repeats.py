"""A transcript filed under two lectures: search shows it once, under the lecture it fits."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from corpus.index import IndexStore
from corpus.ingest import ingest
from corpus.repeats import misfiled
from corpus.retrieve import Retriever

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "lectures"

EIGEN = [
    "Autovetores e autovalores é um tópico que muitos estudantes acham pouco intuitivo.",
    "Um autovetor fica na sua própria reta durante a transformação.",
    "O autovalor é o fator pelo qual o autovetor é esticado ou comprimido.",
    "Para achar os autovetores, procuramos lambda que zera o determinante.",
    "Uma rotação de noventa graus não tem autovetores reais.",
]


def _cues(lecture_id: str, sentences: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"lecture_id": lecture_id, "start": range(len(sentences)),
                         "end": range(1, len(sentences) + 1), "text": sentences})


def test_the_lecture_left_out_is_the_one_whose_title_the_text_does_not_fit() -> None:
    cues = pd.concat([_cues("2016/change-of-basis", EIGEN), _cues("2016/eigenvalues", EIGEN)])
    titles = {"2016/change-of-basis": "Mudança de base | Capítulo 13, Álgebra linear",
              "2016/eigenvalues": "Autovetores e autovalores | Capítulo 14, Álgebra linear"}
    assert misfiled(cues, titles) == {"2016/change-of-basis": "2016/eigenvalues"}
    # the same text under the other title: the other lecture stays
    swapped = {"2016/change-of-basis": titles["2016/eigenvalues"],
               "2016/eigenvalues": titles["2016/change-of-basis"]}
    assert misfiled(cues, swapped) == {"2016/eigenvalues": "2016/change-of-basis"}
    # uploaded twice under one title: one of the two is shown
    assert len(misfiled(cues, {k: "Autovetores" for k in titles})) == 1
    # a lecture that shares a sentence or two is not a copy
    own = EIGEN[:2] + [f"Uma frase própria da aula de bases, número {i}." for i in range(8)]
    assert misfiled(pd.concat([_cues("a", EIGEN), _cues("b", own)]), {}) == {}


def test_search_shows_a_copied_transcript_once_and_still_finds_it_when_asked_by_lecture(
        tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    lectures = tmp_path / "lectures"
    shutil.copytree(SAMPLES / "derivadas", lectures / "derivadas")
    (lectures / "a-copia").mkdir()  # its id sorts first; its title says nothing of the text
    shutil.copy(SAMPLES / "derivadas" / "derivadas.srt", lectures / "a-copia" / "a-copia.srt")
    shutil.copytree(SAMPLES / "redes-neurais", lectures / "redes-neurais")
    store = IndexStore(tmp_path / "index")
    ingest([lectures], store, embedder)
    retriever = Retriever(store.load(), embedder)
    assert retriever.misfiled == {"a-copia": "derivadas"}
    hits = retriever.search("o que é a derivada de uma função?", 5)
    assert hits[0].lecture_id == "derivadas"
    assert "a-copia" not in {h.lecture_id for h in hits}
    texts = [h.text for h in hits]
    assert len(texts) == len(set(texts))  # no window twice
    asked = retriever.search("o que é a derivada de uma função?", 3, lectures=["a-copia"])
    assert asked and {h.lecture_id for h in asked} == {"a-copia"}
    # fusion weights are fitted on what search shows: the copy is in no channel's pool
    pools = retriever.pools("o que é a derivada de uma função?")
    assert {"dense", "bm25"} <= set(pools)
    for rows, scores in pools.values():
        assert len(rows) == len(scores) > 0
        assert "a-copia" not in {retriever.window(int(r))[0] for r in rows}


def _srt(sentences: list[str]) -> str:
    return "\n".join(f"{i}\n00:00:{2 * i:02d},000 --> 00:00:{2 * i + 2:02d},000\n{t}\n"
                     for i, t in enumerate(sentences))


def test_a_misfiled_transcript_is_read_from_the_lectures_own_file_beside_it(
        tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    """3b1b-pt's change-of-basis: its sentence_translations.json (and auto_generated.srt) hold
    the eigenvalues lecture, its community.srt its own."""
    lectures = tmp_path / "lectures"
    for name, title in (("autovetores", "Autovetores e autovalores"),
                        ("mudanca-de-base", "Mudança de base")):
        (lectures / name).mkdir(parents=True)
        (lectures / name / "transcript.srt").write_text(_srt(EIGEN), encoding="utf-8")
        (lectures / name / "title.txt").write_text(title, encoding="utf-8")
    own = ["A Jennifer usa outros vetores de base para descrever o mesmo espaço.",
           "Para traduzir um vetor da base dela para a nossa, multiplicamos pela matriz.",
           "A matriz de mudança de base tem os vetores da Jennifer como colunas.",
           "A inversa dessa matriz traduz da nossa linguagem para a dela."]
    (lectures / "mudanca-de-base" / "community.srt").write_text(_srt(own), encoding="utf-8")
    store = IndexStore(tmp_path / "index")
    summary = ingest([lectures], store, embedder, include=["**/transcript.srt"])
    [rep] = summary.replaced
    assert rep["lecture_id"] == "mudanca-de-base" and rep["why"] == "autovetores"
    assert rep["read"].endswith("community.srt")
    assert summary.repeated == []
    retriever = Retriever(store.load(), embedder)
    assert retriever.misfiled == {}
    hits = retriever.search("como traduzir um vetor da base da jennifer?", 2)
    assert hits[0].lecture_id == "mudanca-de-base"
    assert retriever.search("o que é um autovetor?", 1)[0].lecture_id == "autovetores"


def test_an_empty_transcript_beside_only_empty_ones_is_reported_without_them(
        tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    """3b1b-pt's hilbert-curve: sentence_translations.json and auto_generated.srt both empty."""
    lectures = tmp_path / "lectures"
    shutil.copytree(SAMPLES / "derivadas", lectures / "derivadas")
    folder = lectures / "curva"
    folder.mkdir()
    (folder / "transcript.srt").write_text("")
    (folder / "auto_generated.srt").write_text("")
    summary = ingest([lectures], IndexStore(tmp_path / "index"), embedder,
                     include=["**/transcript.srt", "derivadas/*"])
    assert [Path(p).name for p in summary.empty] == ["transcript.srt"]
    assert summary.others == {} and summary.replaced == []
    assert [lec["lecture_id"] for lec in summary.lectures] == ["derivadas"]
