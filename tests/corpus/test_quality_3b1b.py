"""Portuguese student questions find the right 3b1b deep-learning video in the top 5."""

from __future__ import annotations

import json
import shutil

import pytest

from corpus.index import IndexStore
from corpus.ingest import ingest
from corpus.retrieve import Retriever
from tests.conftest import ROOT, SHARED

CORPUS = SHARED / "corpora" / "3b1b-pt"
VIDEOS = [
    "2017/neural-networks", "2017/gradient-descent", "2017/backpropagation",
    "2017/backpropagation-calculus", "2024/attention", "2024/gpt", "2024/mlp",
    "2017/derivatives", "2017/chain-rule-and-product-rule",  # distractors
]
pytestmark = pytest.mark.skipif(not CORPUS.exists(), reason="../shared/corpora/3b1b-pt absent")


@pytest.fixture(scope="module")
def dl_retriever(tmp_path_factory, embedder) -> Retriever:  # type: ignore[no-untyped-def]
    src = tmp_path_factory.mktemp("3b1b")
    for v in VIDEOS:
        shutil.copytree(CORPUS / v, src / v)
    store = IndexStore(src / "index")
    summary = ingest([src], store, embedder,
                     include=["**/portuguese/sentence_translations.json"])
    assert summary.total_lectures == len(VIDEOS)
    return Retriever(store.load(), embedder)


def questions() -> list[dict]:
    path = ROOT / "tests" / "data" / "questions_dl.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_sidecar_titles_and_urls_come_along(dl_retriever: Retriever) -> None:
    meta = dl_retriever.data.lecture_meta()["2017/neural-networks"]
    assert "rede neural" in meta["title"].lower()
    assert "youtube" in meta["url"] or "youtu.be" in meta["url"]


@pytest.mark.parametrize("q", questions(), ids=lambda q: q["id"])
def test_question_finds_its_video_in_top5(dl_retriever: Retriever, q: dict) -> None:
    hits = dl_retriever.search(q["question"], 5)
    assert q["gold_lecture"] in [h.lecture_id for h in hits], [h.lecture_id for h in hits]


def test_a_short_question_naming_a_lecture_s_title_finds_that_lecture_first(
        dl_retriever: Retriever) -> None:
    from answer.question import understand
    from answer.retrieve import search

    for question, lecture in (("o que é um gpt?", "2024/gpt"),
                              ("o que é uma rede neural?", "2017/neural-networks")):
        hits = search(dl_retriever, understand(question), 10).hits
        assert hits[0].lecture_id == lecture, [h.lecture_id for h in hits]
