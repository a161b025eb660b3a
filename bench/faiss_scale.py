"""FAISS over N synthetic 384-d unit vectors: flat (exact) vs HNSW latency, HNSW recall@10.

Flat is the baseline measured in the same run. N defaults to 1,000,000
(BENCH_FAISS_N to change); vectors have a low intrinsic dimension, as embeddings do.
"""

from __future__ import annotations

import time

import numpy as np

from bench.common import env_int, median, pct, report


def synthetic(n: int, dim: int, seed: int = 0) -> np.ndarray:
    """Unit vectors with a low intrinsic dimension, like text embeddings (not isotropic noise)."""
    basis = np.random.default_rng(42).standard_normal((48, dim)).astype(np.float32)
    rng = np.random.default_rng(seed)
    out = np.empty((n, dim), np.float32)
    step = 100_000
    for a in range(0, n, step):
        b = min(n, a + step)
        z = rng.standard_normal((b - a, 48)).astype(np.float32)
        out[a:b] = z @ basis + 0.5 * rng.standard_normal((b - a, dim)).astype(np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def main() -> None:
    import faiss

    n, dim, nq, k = env_int("BENCH_FAISS_N", 1_000_000), 384, env_int("BENCH_FAISS_Q", 200), 10
    xb = synthetic(n, dim)
    xq = synthetic(nq, dim, seed=1)
    flat = faiss.IndexFlatIP(dim)
    flat.add(xb)
    t0 = time.perf_counter()
    hnsw = faiss.IndexHNSWFlat(dim, 16, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = 40
    hnsw.add(xb)
    build_s = time.perf_counter() - t0

    def one_by_one(index: faiss.Index) -> tuple[list[float], np.ndarray]:
        lat, ids = [], []
        for q in xq:
            t = time.perf_counter()
            _, i = index.search(q.reshape(1, -1), k)
            lat.append((time.perf_counter() - t) * 1000)
            ids.append(i[0])
        return lat, np.array(ids)

    flat_lat, truth = one_by_one(flat)
    figures: dict[str, float | int] = {
        "vectors": n,
        "queries": nq,
        "flat_latency_ms_p50": median(flat_lat),
        "flat_latency_ms_p95": pct(flat_lat, 95),
        "hnsw_build_s (M=16, efC=40)": build_s,
    }
    for ef in (64, 256):
        hnsw.hnsw.efSearch = ef
        lat, got = one_by_one(hnsw)
        recall = np.mean([len(set(a) & set(b)) / k for a, b in zip(truth, got, strict=True)])
        figures[f"hnsw_ef{ef}_latency_ms_p50"] = median(lat)
        figures[f"hnsw_ef{ef}_latency_ms_p95"] = pct(lat, 95)
        figures[f"hnsw_ef{ef}_speedup_vs_flat_p50"] = median(flat_lat) / median(lat)
        figures[f"hnsw_ef{ef}_recall_at_10_vs_flat"] = float(recall)
    figures["threads"] = faiss.omp_get_max_threads()
    report("faiss_scale", figures)


if __name__ == "__main__":
    main()
