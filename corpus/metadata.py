"""Lecture metadata from paths, sidecar files and a manifest: ids, titles, URLs, courses."""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from corpus.errors import InputError
from corpus.readers.errors import TranscriptError
from corpus.readers.text import read_text

log = logging.getLogger(__name__)

#: Trailing path parts that say nothing about which lecture it is; dropped from ids.
GENERIC_NAMES = frozenset(
    {
        "sentence_translations",
        "transcript",
        "captions",
        "subtitles",
        "portuguese",
        "english",
        "pt",
        "en",
        "pt-br",
        "audio",
    }
)
#: Files next to transcripts that hold metadata, not cues.
SIDECAR_NAMES = frozenset({"title.json", "title.txt", "video_url.txt"})
MANIFEST_FIELDS = ("path", "lecture_id", "title", "url", "course")
WEB_SCHEMES = frozenset({"http", "https"})
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
# A host (with a dot, or localhost) and an optional port at the start: a link typed without
# its scheme, such as ``youtube.com/watch?v=x``.
_BARE_HOST_RE = re.compile(rf"^(?:localhost|{_LABEL}(?:\.{_LABEL})+)(?::\d{{1,5}})?(?:[/?#]|$)")


class ManifestError(InputError):
    """A manifest that cannot be used; ``str()`` names the file and row in one line."""

    def __init__(self, path: Path, reason: str, where: str | None = None) -> None:
        self.path, self.where, self.reason = Path(path), where, reason
        super().__init__(": ".join(x for x in (str(path), where, reason) if x))


def web_url(raw: str) -> str:
    """``raw`` as an absolute http(s) link, the only kind a page may put in ``href``.

    A host typed without a scheme (``youtube.com/watch?v=x``, ``//host/x``) gets ``https://``;
    anything else that is not an http(s) link with a host (``javascript:``, ``data:``,
    ``file:``, a relative path) raises ``ValueError``. Blank stays ``""``.
    """
    url = raw.strip()
    if not url:
        return ""
    if url.startswith("//"):
        url = "https:" + url
    elif _BARE_HOST_RE.match(url):
        url = "https://" + url
    parts = urlsplit(url)
    if parts.scheme.lower() not in WEB_SCHEMES or not parts.hostname:
        raise ValueError(f"{url[:80]!r} is not an http(s) link")
    return url


def lecture_id_for(transcript: Path, root: Path) -> str:
    """A readable lecture id from the transcript's path relative to ``root``.

    POSIX slashes, no extension, and trailing parts dropped while they are generic
    (:data:`GENERIC_NAMES`) or repeat their folder's name:
    ``2017/neural-networks/portuguese/sentence_translations.json`` -> ``2017/neural-networks``,
    ``makemore1/makemore1.json`` -> ``makemore1``. When ``root`` is the file itself, the id is
    one name: the stem, or the nearest folder name if the stem is generic (also the fallback
    when every part below ``root`` is generic).
    """
    transcript, root = Path(transcript).absolute(), Path(root).absolute()
    if root not in transcript.parents:  # the root is the file itself
        parts = _trimmed([*transcript.parent.parts[1:], transcript.stem])
        return parts[-1] if parts else transcript.stem
    rel = transcript.relative_to(root)
    parts = _trimmed([root.name, *rel.parent.parts, transcript.stem])[1:]
    return "/".join(parts) if parts else lecture_id_for(transcript, transcript)


def _trimmed(parts: list[str]) -> list[str]:
    """Drop trailing generic names and names equal to their parent's (keeps the first part)."""
    parts = list(parts)
    while len(parts) > 1 and (
        parts[-1].casefold() in GENERIC_NAMES or parts[-1].casefold() == parts[-2].casefold()
    ):
        parts.pop()
    return parts


def default_title(lecture_id: str) -> str:
    """The last part of the id, humanised: ``2017/neural-networks`` -> ``Neural networks``."""
    words = " ".join(lecture_id.rsplit("/", 1)[-1].replace("_", " ").replace("-", " ").split())
    return words[:1].upper() + words[1:]


def sidecar_meta(transcript: Path, root: Path) -> dict[str, str]:
    """``title`` and ``url`` from sidecar files in the transcript's folder and its parents up to
    and including ``root`` (the nearest file wins): ``video_url.txt`` (first non-empty line),
    ``title.json`` (a string, or an object's ``translatedText``, else ``input``), ``title.txt``.
    URLs go through :func:`web_url`. A sidecar that cannot be read, or a link that is not
    http(s), is logged and ignored.
    """
    transcript, root = Path(transcript).absolute(), Path(root).absolute()
    top = root if root in transcript.parents else transcript.parent
    folder = transcript.parent
    found: dict[str, str] = {}
    while True:
        for key, name, parse in (
            ("url", "video_url.txt", _url_line),
            ("title", "title.json", _json_title),
            ("title", "title.txt", _first_line),
        ):
            file = folder / name
            if key not in found and file.is_file():
                value = _safe(parse, file)
                if value:
                    found[key] = value
        if folder == top:
            return found
        folder = folder.parent


def _safe(parse: Any, file: Path) -> str:
    try:
        return str(parse(file))
    except (TranscriptError, ValueError, OSError) as exc:
        log.warning("%s: ignored sidecar: %s", file, exc)
        return ""


def _first_line(file: Path) -> str:
    return next((x.strip() for x in read_text(file).splitlines() if x.strip()), "")


def _url_line(file: Path) -> str:
    return web_url(_first_line(file))


def _json_title(file: Path) -> str:
    data = json.loads(read_text(file))
    if isinstance(data, str):
        return data.strip()
    if isinstance(data, dict):
        for key in ("translatedText", "input", "title"):
            if isinstance(data.get(key), str) and data[key].strip():
                return str(data[key]).strip()
    raise ValueError("expected a JSON string or an object with translatedText or input")


def load_manifest(path: Path) -> dict[str, dict[str, str]]:
    """Manifest rows from CSV or YAML, keyed by the row's absolute POSIX ``path`` (file or
    folder, relative to the manifest's folder) or, for rows without a path, its ``lecture_id``.

    Values hold the row's non-empty ``lecture_id``, ``title``, ``url``, ``course``. YAML may be
    a list of rows, ``{lectures: [rows]}``, or ``{lecture_id: {title: ...}}``. A row with an
    unknown column, without ``path`` and ``lecture_id``, with a path that does not exist, or
    repeating another row's key raises :class:`ManifestError` naming the row.
    """
    path = Path(path)
    if not path.is_file():
        raise ManifestError(path, "no such manifest file")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        rows = _csv_rows(path)
    elif suffix in (".yaml", ".yml"):
        rows = _yaml_rows(path)
    else:
        raise ManifestError(path, "a manifest must be .csv, .yaml or .yml")
    out: dict[str, dict[str, str]] = {}
    seen: dict[str, str] = {}
    for where, row in rows:
        key, values = _manifest_row(path, where, row)
        if key in seen:
            raise ManifestError(path, f"repeats {key!r} from {seen[key]}", where)
        seen[key] = where
        out[key] = values
    return out


def _csv_rows(path: Path) -> list[tuple[str, dict[str, Any]]]:
    reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
    rows = []
    try:
        for row in reader:
            if None in row:
                raise ManifestError(path, "more fields than the header", f"line {reader.line_num}")
            if any((v or "").strip() for v in row.values()):
                rows.append((f"line {reader.line_num}", dict(row)))
    except csv.Error as exc:
        raise ManifestError(path, f"bad CSV: {exc}", f"line {reader.line_num}") from exc
    return rows


def _yaml_rows(path: Path) -> list[tuple[str, dict[str, Any]]]:
    try:
        data = yaml.safe_load(read_text(path))
    except yaml.YAMLError as exc:
        raise ManifestError(path, f"bad YAML: {' '.join(str(exc).split())}") from exc
    if isinstance(data, dict) and isinstance(data.get("lectures"), list):
        data = data["lectures"]
    if isinstance(data, dict):
        data = [
            {"lecture_id": k, **v} if isinstance(v, dict) else {"lecture_id": k, "title": v}
            for k, v in data.items()
        ]
    if not isinstance(data, list):
        raise ManifestError(path, "expected a list of rows, {lectures: [...]} or {id: {...}}")
    rows = []
    for i, row in enumerate(data, start=1):
        if not isinstance(row, dict):
            raise ManifestError(path, f"expected a mapping, got {row!r}"[:120], f"row {i}")
        rows.append((f"row {i}", row))
    return rows


def _manifest_row(path: Path, where: str, row: dict[str, Any]) -> tuple[str, dict[str, str]]:
    values: dict[str, str] = {}
    for name, value in row.items():
        name = str(name).strip().lower()
        if name not in MANIFEST_FIELDS:
            if not name and (value is None or not str(value).strip()):
                continue
            raise ManifestError(
                path, f"unknown column {name!r} (known: {', '.join(MANIFEST_FIELDS)})", where
            )
        if isinstance(value, dict | list):
            raise ManifestError(path, f"{name!r} must be text, got {value!r}"[:120], where)
        if value is not None and str(value).strip():
            values[name] = str(value).strip()
    if "url" in values:
        try:
            values["url"] = web_url(values["url"])
        except ValueError as exc:
            raise ManifestError(path, f"url: {exc}", where) from None
    if "path" not in values:
        if "lecture_id" not in values:
            raise ManifestError(path, "row has neither 'path' nor 'lecture_id'", where)
        return values["lecture_id"], values
    target = Path(values.pop("path")).expanduser()
    target = (target if target.is_absolute() else path.parent / target).resolve()
    if not target.exists():
        raise ManifestError(path, f"path {str(target)!r} does not exist", where)
    return target.as_posix(), values


def manifest_meta(
    manifest: dict[str, dict[str, str]], transcript: Path, lecture_id: str, *, rename: bool = True
) -> dict[str, str]:
    """The manifest's fields for one transcript whose path-derived id is ``lecture_id``.

    Folder rows apply to everything below them (deeper folders win), then the row for the
    lecture id, then the row for the file itself. A ``lecture_id`` from a path row renames the
    lecture unless ``rename`` is False (tables, whose file holds many lectures).
    """
    target = Path(transcript).resolve()
    by_path: dict[str, str] = {}
    for folder in reversed(target.parents):
        by_path.update(manifest.get(folder.as_posix(), {}))
    exact = manifest.get(target.as_posix(), {})
    if not rename:
        by_path.pop("lecture_id", None)
        exact = {k: v for k, v in exact.items() if k != "lecture_id"}
    final_id = exact.get("lecture_id") or by_path.get("lecture_id") or lecture_id
    by_id = manifest.get(final_id, {}) if not final_id.startswith("/") else {}
    return {**by_path, **by_id, **exact, "lecture_id": final_id}
