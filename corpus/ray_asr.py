"""Recordings transcribed by a pool of Ray actors (``aula ingest --ray``).

Transcribing is the cost of ingesting a folder of recordings (Whisper base runs well below
real time on 2 cores). ``RayTranscripts`` is a ``MediaTranscripts`` whose ``prepare`` sends
every recording without a transcript to ``workers`` actors, each loading the model once (on a
GPU when the cluster gives it one), and writes what comes back where the local path writes it,
so the next ingest, with Ray or without, finds it. A file an actor cannot transcribe is named
and skipped as on the local path.

The actors read the recordings by path: on a cluster, the course folder (and the model, for
``--asr-model``) must be at the same path on every node. ``address`` is as for
``corpus.ray_embed``: ``local``, ``auto`` or ``ray://HEAD:10001``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from corpus.asr import AsrOptions, MediaTranscript, MediaTranscripts, Transcriber, sha256_file
from corpus.ray_embed import WORKER_ENV, start_ray
from corpus.readers.errors import TranscriptError

log = logging.getLogger(__name__)


class _AsrActor:
    """One Whisper model per actor, loaded on its first file."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.transcriber = Transcriber(AsrOptions(**options))

    def transcribe(self, path: str) -> dict[str, Any]:
        """The Whisper JSON of ``path``, the seconds it took and the model; or the error."""
        started = time.perf_counter()
        try:
            data = self.transcriber.transcribe(Path(path))
        except TranscriptError as exc:
            return {"error": exc.reason}
        return {"data": data, "took": time.perf_counter() - started,
                "model": self.transcriber.model_id}


class RayTranscripts(MediaTranscripts):
    """Transcripts found as ``MediaTranscripts`` finds them; the missing ones made on Ray."""

    def __init__(self, folder: Path, transcriber: Transcriber | None = None,
                 beside: bool = False, *, address: str = "local", workers: int = 2) -> None:
        super().__init__(folder, transcriber, beside)
        self.address = address
        self.workers = max(1, workers)
        self._ready: dict[Path, MediaTranscript | TranscriptError] = {}

    def prepare(self, media: Sequence[Path], progress: bool = False) -> None:
        """Transcribe, over Ray, every recording in ``media`` without a transcript."""
        todo: dict[Path, str] = {}
        for path in map(Path, media):
            digest = sha256_file(path)
            found = self.found(path, digest)
            if found is not None:
                self._ready[path] = found
            else:
                todo[path] = digest
        if todo:
            self._transcribe(todo, progress)

    def transcript_for(self, media: Path, progress: bool = False) -> MediaTranscript:
        ready = self._ready.pop(Path(media), None)
        if isinstance(ready, TranscriptError):
            raise ready
        return ready or super().transcript_for(media, progress)

    def _transcribe(self, todo: dict[Path, str], progress: bool) -> None:
        start_ray(self.address, self.workers)
        import ray
        from ray.exceptions import RayActorError, RayError

        o = self.transcriber.options
        threads = o.threads or 1  # one actor per CPU, as the embedding actors
        options = {**asdict(o), "threads": threads, "cache_dir": str(o.cache_dir)}
        gpus = float(ray.cluster_resources().get("GPU", 0))
        size = min(self.workers, len(todo))
        actor_class: Any = ray.remote(num_cpus=0 if gpus else threads,
                                      num_gpus=min(1.0, gpus / size) if gpus else 0,
                                      runtime_env={"env_vars": WORKER_ENV})(_AsrActor)
        idle: list[Any] = [actor_class.remote(options) for _ in range(size)]
        waiting = list(todo)
        running: dict[Any, tuple[Any, Path]] = {}
        bar = _files_bar(len(todo)) if progress else None
        try:
            while waiting or running:
                while idle and waiting:
                    actor, path = idle.pop(), waiting.pop(0)
                    running[actor.transcribe.remote(str(path))] = (actor, path)
                [ref], _ = ray.wait(list(running), num_returns=1)
                actor, path = running.pop(ref)
                try:
                    out = ray.get(ref)
                except RayError as exc:  # the actor died (out of memory, say): name the file
                    out = {"error": f"transcription on Ray failed ({exc})"[:300]}
                    if isinstance(exc, RayActorError):
                        actor = actor_class.remote(options)
                idle.append(actor)
                if "error" in out:
                    self._ready[path] = TranscriptError(path, out["error"])
                else:
                    self._ready[path] = self.keep(path, todo[path], out["data"], out["took"],
                                                  out["model"])
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
            for actor, _ in running.values():
                idle.append(actor)
            for actor in idle:  # their CPUs go back to the embedding actors
                ray.kill(actor)


def _files_bar(total: int) -> Any:
    from tqdm import tqdm

    return tqdm(desc="transcrevendo em Ray", unit="gravação", total=total)
