"""Turning transcript bytes into clean text: decoding (UTF-8, else Latin-1) and caption markup."""

from __future__ import annotations

import html
import re
from pathlib import Path

from corpus.readers.errors import TranscriptError

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f]")
_TAG = re.compile(r"<[^<>]*>")
_ASS_OVERRIDE = re.compile(r"\{\\[^{}]*\}")


def decode(data: bytes, path: Path) -> str:
    """Decode transcript bytes: UTF-8 (BOM or not), UTF-16 with a BOM, else Latin-1 text.

    Latin-1 is accepted only when the result has no control characters besides tab and newlines
    (Windows-1252 is tried for the bytes 0x80-0x9f, e.g. curly quotes); anything else is refused
    as not text.
    """
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise _not_text(path, data, exc.start) from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return _decode_8bit(data, path, exc.start)
    if "\x00" in text:
        raise _not_text(path, data, data.index(b"\x00"))
    return text


def read_text(path: Path) -> str:
    """Read a transcript file as text (see :func:`decode`); the error names the file."""
    return decode(Path(path).read_bytes(), Path(path))


def clean_caption(text: str) -> str:
    """Caption text without markup: tags like ``<v Ana>``, ``<i>``, ``<00:01.000>``, ``{\\an8}``,
    HTML entities unescaped, and whitespace (newlines included) collapsed to single spaces."""
    text = _ASS_OVERRIDE.sub("", _TAG.sub("", text))
    return " ".join(html.unescape(text).split())


def _decode_8bit(data: bytes, path: Path, utf8_error_at: int) -> str:
    for codec in ("latin-1", "cp1252"):
        try:
            text = data.decode(codec)
        except UnicodeDecodeError:
            continue
        if not _CONTROL.search(text):
            return text
    bad = _CONTROL.search(data.decode("latin-1"))
    raise _not_text(path, data, bad.start() if bad else utf8_error_at)


def _not_text(path: Path, data: bytes, offset: int) -> TranscriptError:
    line = data.count(b"\n", 0, offset) + 1
    return TranscriptError(
        path, f"not UTF-8 or Latin-1 text (byte 0x{data[offset]:02x}; binary file?)", line=line
    )
