"""The vector store protocol: the index folder (FAISS + BM25) and Milvus (milvus-lite, in a
file and as the gRPC server a Milvus cluster speaks) answer the same questions with the same
windows; the BM25 sparse vectors score as the folder's BM25; a Milvus collection follows the
catalogue through re-ingest and removal with stable ids."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from corpus.bm25 import BM25Index, BM25Weights
from corpus.index import IndexStore, remove_lectures
from corpus.ingest import ingest
from corpus.retrieve import Retriever
from corpus.vector_store import MilvusStore, VectorStoreError, milvus_filter
from tests.conftest import SAMPLES

QUESTIONS = [
    "o que a ReLU devolve para números negativos?",
    "pq se usava sigmoide antigamente",
    "derivada é a taxa de variação de quê?",
    "what does a neuron compute?",
    "regra da cadeia",
]


@pytest.fixture(params=["file", "server"])
def milvus_uri(request, tmp_path: Path) -> str:  # type: ignore[no-untyped-def]
    if request.param == "file":
        return str(tmp_path / "milvus.db")
    return str(request.getfixturevalue("milvus_server"))


def test_bm25_sparse_vectors_score_as_the_folders_bm25() -> None:
    texts = [p.read_text(encoding="utf-8") for p in sorted(SAMPLES.glob("*/*.srt"))]
    texts += ["a ReLU devolve zero para negativos", "", "derivada derivada derivada da função"]
    index, weights = BM25Index(list(range(len(texts))), texts), BM25Weights(texts)
    for q in [*QUESTIONS, "derivada da derivada", "palavra-que-não-existe"]:
        qv = weights.query(q)
        mine = np.array([sum(v * weights.document(i).get(k, 0.0) for k, v in qv.items())
                         for i in range(len(texts))])
        np.testing.assert_allclose(mine, index.scores(q), rtol=1e-5, atol=1e-9)


def test_both_stores_give_the_same_hits(sample_index: IndexStore, embedder, milvus_uri: str  # type: ignore[no-untyped-def]
                                        ) -> None:
    data = sample_index.load()
    store = MilvusStore(milvus_uri, "same_hits", texts=data.segments["text"].tolist())
    try:
        store.drop()
        assert store.sync(data) == {"written": len(data.segments), "deleted": 0}
        folder, shared = Retriever(data, embedder), Retriever(data, embedder, store=store)
        for q in QUESTIONS:
            for mode in ("dense", "bm25", "hybrid"):
                a, b = folder.search(q, 4, mode=mode), shared.search(q, 4, mode=mode)
                assert [h.corpus_id for h in a] == [h.corpus_id for h in b], (q, mode)
                assert [h.answer_start for h in a] == [h.answer_start for h in b]
        only = shared.search(QUESTIONS[0], 4, lectures=["derivadas"])
        assert only and {h.lecture_id for h in only} == {"derivadas"}
        fused = store.hybrid(embedder.embed([QUESTIONS[0]], "query")[0], QUESTIONS[0], 3)
        assert len(fused[0]) == 3  # Milvus' own ranker over both fields
    finally:
        store.drop()
        store.close()


def test_a_collection_follows_reingest_and_removal_with_stable_ids(
        tmp_path: Path, embedder, milvus_uri: str) -> None:  # type: ignore[no-untyped-def]
    lectures = tmp_path / "lectures"
    shutil.copytree(SAMPLES, lectures)
    folder = IndexStore(tmp_path / "index")
    store = MilvusStore(milvus_uri, "follow")
    try:
        store.drop()
        summary = ingest([lectures], folder, embedder, vector_store=store)
        assert summary.vector_store["written"] == summary.total_segments
        first = folder.load()
        ids = set(first.segments["corpus_id"].tolist())
        assert store.stored_ids() == ids
        ingest([lectures], folder, embedder, vector_store=store)  # nothing changed: same ids
        assert store.stored_ids() == ids
        gone = set(first.segments.loc[first.segments["lecture_id"] == "derivadas",
                                      "corpus_id"].tolist())
        data = remove_lectures(first, ["derivadas"])
        folder.write(data)
        assert store.sync(data)["deleted"] == len(gone)
        assert store.stored_ids() == ids - gone
        qv = embedder.embed(["derivada de uma função"], "query")[0]
        found, _ = store.dense(qv, 10)
        assert set(found.tolist()) <= ids - gone
    finally:
        store.drop()
        store.close()


def test_ids_a_shared_store_holds_beyond_this_version_are_left_out(
        sample_index: IndexStore, embedder, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = sample_index.load()
    store = MilvusStore(str(tmp_path / "m.db"), texts=data.segments["text"].tolist())
    try:
        store.sync(data)
        older = remove_lectures(data, ["derivadas"])  # a replica still on another version
        hits = Retriever(older, embedder, store=store).search("derivada", 5)
        assert hits and all(h.lecture_id == "redes-neurais" for h in hits)
    finally:
        store.close()


def test_a_collection_of_another_dimension_is_refused_by_name(
        sample_index: IndexStore, tmp_path: Path) -> None:
    data = sample_index.load(with_faiss=False)
    store = MilvusStore(str(tmp_path / "m.db"), "dims")
    try:
        store.sync(data)
        other = remove_lectures(data, [])
        other.vectors = np.zeros((len(data.segments), 8), np.float32)
        with pytest.raises(VectorStoreError, match="'dims'.*AULA_MILVUS_COLLECTION"):
            store.sync(other)
    finally:
        store.close()


ODD_IDS = ['aula "ção"\nduas linhas', "barra\\ 𝔸\ttab\r"]  # the sample's two lectures
NO_SUCH = ['a" or id > 0 or "', "ctl\x01\x7f\u2028", "aula-ção", 'aula "ção"']


def test_a_search_limited_to_odd_lecture_ids_finds_exactly_those(
        sample_index: IndexStore, tmp_path: Path) -> None:
    # Lecture ids come from file names and course pages: accents, quotes and line breaks
    # each match only the lecture that has that id, and none rewrites the filter.
    data = sample_index.load(with_faiss=False)
    renamed = dict(zip(sorted(data.segments["lecture_id"].unique()), ODD_IDS, strict=True))
    data.segments["lecture_id"] = data.segments["lecture_id"].map(renamed)
    store = MilvusStore(str(tmp_path / "m.db"), "odd_ids")
    try:
        store.sync(data)
        qv = data.vectors[0]
        for lid in renamed.values():
            ids, _ = store.dense(qv, 50, lectures=[lid, *NO_SUCH])
            got = set(data.segments.set_index("corpus_id").loc[ids, "lecture_id"])
            assert got == {lid}, lid
        for other in NO_SUCH:
            assert len(store.dense(qv, 50, lectures=[other])[0]) == 0, other
    finally:
        store.close()
    assert milvus_filter(["x"], ["c1"]) == 'lecture_id in ["x"] and course in ["c1"]'
    assert milvus_filter() == ""


def test_an_unreachable_server_is_one_clear_error() -> None:
    with pytest.raises(VectorStoreError, match="127.0.0.1:9"):
        MilvusStore("http://127.0.0.1:9")


def test_aula_sync_moves_an_existing_index_to_milvus(sample_index: IndexStore,
                                                     tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    index = tmp_path / "index"
    shutil.copytree(sample_index.root, index)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "AULA_INDEX_DIR": str(index)}
    folder = subprocess.run([sys.executable, "-m", "app.cli", "sync"], cwd=ROOT, env=env,
                            capture_output=True, text=True)
    assert folder.returncode == 1 and "nothing to sync" in folder.stderr
    env |= {"AULA_VECTOR_STORE": "milvus", "AULA_MILVUS_URI": str(tmp_path / "m.db")}
    done = subprocess.run([sys.executable, "-m", "app.cli", "sync", "--json"], cwd=ROOT,
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    n = len(sample_index.load(with_faiss=False).segments)
    assert json.loads(done.stdout) == {"collection": "aula_windows", "written": n, "deleted": 0}
    found = subprocess.run([sys.executable, "-m", "app.cli", "search", "ReLU", "-k", "2",
                            "--json"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert found.returncode == 0 and json.loads(found.stdout), found.stderr
    store = MilvusStore(str(tmp_path / "m.db"))
    try:
        assert store.count() == n
    finally:
        store.close()
