"""Recorded lectures as media files: which suffixes count, and whether one is video or audio.

A media file has no cues of its own: ``corpus.asr`` transcribes it (or finds the transcript it
wrote before) and the Whisper JSON reader reads the result.
"""

from __future__ import annotations

from pathlib import Path

VIDEO_SUFFIXES = frozenset({".mp4", ".mkv", ".webm", ".mov"})
AUDIO_SUFFIXES = frozenset({".mp3", ".m4a", ".wav", ".ogg", ".flac"})
MEDIA_SUFFIXES = VIDEO_SUFFIXES | AUDIO_SUFFIXES
MIME_TYPES = {
    ".mp4": "video/mp4", ".mkv": "video/x-matroska", ".webm": "video/webm",
    ".mov": "video/quicktime", ".mp3": "audio/mpeg", ".m4a": "audio/mp4", ".wav": "audio/wav",
    ".ogg": "audio/ogg", ".flac": "audio/flac",
}


def is_media(path: Path) -> bool:
    """Whether ``path`` has a media suffix we transcribe."""
    return Path(path).suffix.lower() in MEDIA_SUFFIXES


def media_kind(path: Path) -> str:
    """``"video"`` or ``"audio"``: the HTML element that plays ``path``."""
    return "video" if Path(path).suffix.lower() in VIDEO_SUFFIXES else "audio"


def beside(transcript: Path) -> Path | None:
    """The media file a transcript was made from: the file itself when it is media, else a
    media file with the same name beside it (``aula1.srt`` -> ``aula1.mp4``), else None."""
    transcript = Path(transcript)
    if is_media(transcript):
        return transcript
    for suffix in sorted(MEDIA_SUFFIXES):
        for candidate in (transcript.with_suffix(suffix), transcript.with_suffix(suffix.upper())):
            if candidate.is_file():
                return candidate
    return None
