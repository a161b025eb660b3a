"""The index directory: stable ids, atomic versions, model checks, real E5 + FAISS search."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from corpus.index import IndexStore, ModelMismatch, merge_lectures, remove_lectures
from corpus.ingest import ingest
from corpus.retrieve import Retriever
from tests.conftest import SAMPLES


def test_sample_questions_land_on_the_right_lecture(sample_index, embedder) -> None:
    data = sample_index.load()
    r = Retriever(data, embedder)
    hits = r.search("Qual a derivada de x ao quadrado?", 3)
    assert hits[0].lecture_id == "derivadas"
    hits = r.search("para que serve a taxa de aprendizado no gradiente descendente?", 3)
    assert hits[0].lecture_id == "redes-neurais"
    assert hits[0].title == "Introdução às redes neurais"
    assert hits[0].url.startswith("https://www.youtube.com/")
    assert 0.5 < hits[0].score <= 1.0  # the E5 cosine is shown, not the fused rank score


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_every_mode_returns_real_segments(sample_index, embedder, mode) -> None:
    data = sample_index.load()
    hits = Retriever(data, embedder, mode).search("função de ativação ReLU", 5)
    assert hits and all(h.end > h.start for h in hits)
    assert "ReLU" in " ".join(h.text for h in hits[:2])


def test_adding_a_lecture_keeps_every_existing_id(tmp_path: Path, embedder) -> None:
    store = IndexStore(tmp_path / "idx")
    ingest([SAMPLES / "derivadas"], store, embedder)
    before = store.load(with_faiss=False).segments[["corpus_id", "text"]]
    summary = ingest([SAMPLES / "redes-neurais"], store, embedder)
    after = store.load(with_faiss=False).segments
    merged = before.merge(after, on="corpus_id", suffixes=("_b", "_a"))
    assert len(merged) == len(before) and (merged.text_b == merged.text_a).all()
    assert summary.embedded == len(after) - len(before)
    # re-ingesting the same lecture embeds nothing and renumbers nothing
    again = ingest([SAMPLES / "redes-neurais"], store, embedder)
    assert again.embedded == 0 and again.reused > 0
    assert store.load(with_faiss=False).segments.corpus_id.tolist() == after.corpus_id.tolist()


def test_ingesting_unchanged_transcripts_keeps_the_live_version(tmp_path: Path, embedder
                                                               ) -> None:
    """A nightly `aula ingest` over transcripts nobody changed writes nothing, so no server
    reloads; a changed line is a new version, with only its windows embedded again."""
    lectures = tmp_path / "lectures"
    shutil.copytree(SAMPLES, lectures)
    store = IndexStore(tmp_path / "idx")
    ingest([lectures], store, embedder)
    live = store.live_version()
    again = ingest([lectures], store, embedder)
    assert again.unchanged and again.embedded == 0
    assert store.live_version() == live
    srt = lectures / "derivadas" / "derivadas.srt"
    text = srt.read_text(encoding="utf-8")
    first = next(line for line in text.splitlines() if line[:1].isalpha())
    srt.write_text(text.replace(first, first + " Isto é uma frase nova.", 1), encoding="utf-8")
    changed = ingest([lectures], store, embedder)
    assert not changed.unchanged and 0 < changed.embedded < changed.total_segments
    assert store.live_version() != live
    assert "Isto é uma frase nova." in " ".join(store.load(with_faiss=False).segments.text)


def test_remove_keeps_other_ids_and_search_works(tmp_path: Path, embedder) -> None:
    store = IndexStore(tmp_path / "idx")
    ingest([SAMPLES], store, embedder)
    data = store.load(with_faiss=False)
    keep = data.segments[data.segments.lecture_id == "redes-neurais"].corpus_id.tolist()
    store.write(remove_lectures(data, ["derivadas"]))
    data = store.load()
    assert data.segments.corpus_id.tolist() == keep
    hits = Retriever(data, embedder).search("derivada de x ao cubo", 3)
    assert all(h.lecture_id == "redes-neurais" for h in hits)


def test_interrupted_write_leaves_the_previous_index_usable(tmp_path: Path, embedder) -> None:
    store = IndexStore(tmp_path / "idx")
    ingest([SAMPLES / "derivadas"], store, embedder)
    before = store.load(with_faiss=False)

    def boom(texts, progress=False):  # noqa: ARG001 - the embedder dies mid-ingest
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        merge_lectures(before, {"x": ({"lecture_id": "x"}, [(0, 1, "texto novo")])}, boom)
    # a version folder half-written by a killed process is ignored and swept later
    half = tmp_path / "idx" / ".v000099.tmp-999999"
    half.mkdir()
    (half / "segments.parquet").write_bytes(b"garbage")
    data = store.load()
    assert len(data.segments) == len(before.segments)
    ingest([SAMPLES / "redes-neurais"], store, embedder)
    assert not half.exists()


def test_a_different_embedding_model_is_refused(tmp_path: Path, embedder) -> None:
    store = IndexStore(tmp_path / "idx")
    ingest([SAMPLES / "derivadas"], store, embedder)
    data = store.load(with_faiss=False)
    with pytest.raises(ModelMismatch, match="intfloat/multilingual-e5-base"):
        store.check_model(data, "intfloat/multilingual-e5-base")


def test_hnsw_and_flat_agree_on_a_small_index(tmp_path: Path, embedder) -> None:
    src = tmp_path / "lec"
    shutil.copytree(SAMPLES, src)
    flat, hnsw = IndexStore(tmp_path / "flat"), IndexStore(tmp_path / "hnsw")
    ingest([src], flat, embedder)
    ingest([src], hnsw, embedder, index_kind="hnsw")
    q = embedder.embed(["o que é retropropagação"], "query")
    a = flat.load().faiss_index.search(q, 3)[1]
    b = hnsw.load().faiss_index.search(q, 3)[1]
    assert np.array_equal(a, b)
