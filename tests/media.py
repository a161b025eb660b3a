"""Recorded lectures made for tests: Portuguese speech from Debian's espeak-ng, a picture from
PyAV, and the second each sentence starts, so a test can check where a citation opens."""

from __future__ import annotations

import io
import shutil
import subprocess
import wave
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

ESPEAK = shutil.which("espeak-ng")
VOICE = ["-v", "pt-br", "-s", "120", "-g", "4"]
"""Slow Brazilian Portuguese with gaps between words: Whisper base transcribes it well."""
GAP_SECONDS = 1.0


@dataclass
class Speech:
    """Mono 16-bit samples and, for each sentence, the second its voice starts."""

    samples: np.ndarray
    rate: int
    starts: list[float]

    @property
    def seconds(self) -> float:
        return len(self.samples) / self.rate


def speak(sentences: Sequence[str], gap: float = GAP_SECONDS) -> Speech:
    """The sentences spoken one after another, ``gap`` seconds of silence between them."""
    if ESPEAK is None:
        raise RuntimeError("espeak-ng is not installed (apt-get install espeak-ng)")
    parts: list[np.ndarray] = []
    starts: list[float] = []
    rate = 22050
    at = 0
    for text in sentences:
        raw = subprocess.run([ESPEAK, *VOICE, "--stdout", text], check=True,
                             capture_output=True).stdout
        with wave.open(io.BytesIO(raw)) as w:
            rate = w.getframerate()
            pcm = np.frombuffer(w.readframes(w.getnframes()), np.int16)
        voiced = np.flatnonzero(np.abs(pcm) > 500)
        starts.append((at + (int(voiced[0]) if len(voiced) else 0)) / rate)
        silence = np.zeros(int(gap * rate), np.int16)
        parts += [pcm, silence]
        at += len(pcm) + len(silence)
    return Speech(np.concatenate(parts), rate, starts)


def write_video(path: Path, speech: Speech, size: tuple[int, int] = (160, 96), fps: int = 4
                ) -> Path:
    """An .mp4 (H.264 + AAC) or .webm (VP8 + Opus) of ``speech`` over a slowly changing colour."""
    import av

    webm = path.suffix == ".webm"
    with av.open(str(path), "w") as out:
        video = out.add_stream("libvpx" if webm else "libx264", rate=fps)
        video.width, video.height = size
        video.pix_fmt = "yuv420p"
        audio = out.add_stream("libopus" if webm else "aac", rate=48000 if webm else speech.rate)
        audio.layout = "mono"
        frames = int(speech.seconds * fps) + 1
        for i in range(frames):
            shade = np.full((size[1], size[0], 3), (40 + 5 * i) % 256, np.uint8)
            frame = av.VideoFrame.from_ndarray(shade, format="rgb24")
            frame.pts = i
            frame.time_base = Fraction(1, fps)
            out.mux(video.encode(frame))
        out.mux(video.encode())
        _encode_audio(out, audio, speech)
    return path


def write_audio(path: Path, speech: Speech) -> Path:
    """An audio-only file (.mp3, .wav, .ogg...) of ``speech``, by its suffix."""
    import av

    codec = {".mp3": "libmp3lame", ".wav": "pcm_s16le", ".ogg": "libopus",
             ".flac": "flac"}[path.suffix]
    with av.open(str(path), "w") as out:
        rate = 48000 if codec == "libopus" else speech.rate
        audio = out.add_stream(codec, rate=rate)
        audio.layout = "mono"
        _encode_audio(out, audio, speech)
    return path


def _encode_audio(out, stream, speech: Speech) -> None:  # type: ignore[no-untyped-def]
    import av

    size = stream.codec_context.frame_size or 1024
    resampler = av.AudioResampler(format=stream.codec_context.format.name, layout="mono",
                                  rate=stream.codec_context.sample_rate, frame_size=size)
    step = 1024
    for i in range(0, len(speech.samples), step):
        chunk = speech.samples[i:i + step].reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(chunk, format="s16", layout="mono")
        frame.sample_rate = speech.rate
        frame.pts = i
        frame.time_base = Fraction(1, speech.rate)
        for resampled in resampler.resample(frame):
            out.mux(stream.encode(resampled))
    for resampled in resampler.resample(None):
        out.mux(stream.encode(resampled))
    out.mux(stream.encode())


@dataclass
class RecordedCourse:
    """The ``recorded_course`` fixture: its folder and the speech of its two recordings."""

    VIDEO_SENTENCES = (
        "Hoje vamos falar sobre redes neurais.",
        "A função sigmoide transforma qualquer número em um valor entre zero e um.",
        "O gradiente descendente ajusta os pesos da rede passo a passo.",
        "A taxa de aprendizado controla o tamanho de cada passo.",
    )
    AUDIO_SENTENCES = (
        "Nesta aula estudamos a convolução de imagens.",
        "Um filtro percorre a imagem e detecta as bordas.",
    )

    YOUTUBE = "https://www.youtube.com/watch?v=aulaDeriv01"

    root: Path
    video: Speech
    audio: Speech
