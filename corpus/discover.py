"""Find the lectures under the given paths: one transcript per lecture, with its metadata.

What counts as a transcript: files with a reader extension (.srt, .vtt, .json, .csv, .parquet)
whose content has a known shape. In a folder walk, files of other shapes (a .json that is
neither Whisper nor a sentence list, a CSV without ``lecture, start, end, text``), sidecars
(``title.json``, ``title.txt``, ``video_url.txt``) and hidden files/folders are ignored
silently, unless an ``--include`` pattern selected them: then they are reported in
``failed``, as are files named directly and files that cannot be decoded or parsed at all.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from corpus.metadata import (
    GENERIC_NAMES,
    SIDECAR_NAMES,
    default_title,
    lecture_id_for,
    load_manifest,
    manifest_meta,
    sidecar_meta,
)
from corpus.models import Cue, LectureMeta
from corpus.readers import FORMATS, READERS, RICHNESS, sniff
from corpus.readers.errors import TranscriptError
from corpus.readers.media import is_media
from corpus.readers.table import read_table


@dataclass
class Found:
    """One lecture to read: its metadata, the file chosen, its format, and the poorer files of
    the same lecture that were left out. ``table_lecture`` is the id inside a table file."""

    meta: LectureMeta
    path: Path
    fmt: str
    skipped: list[Path] = field(default_factory=list)
    table_lecture: str | None = None


@dataclass
class Discovery:
    """The lectures found, and the files that looked like transcripts but could not be used."""

    lectures: list[Found] = field(default_factory=list)
    failed: list[tuple[Path, str]] = field(default_factory=list)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex for a glob over POSIX relative paths: ``*`` and ``?`` stay within a folder,
    ``**/`` matches zero or more folders, ``[...]`` is a character class. A pattern without
    ``/`` matches the file name at any depth (``*.srt``)."""
    pattern = pattern.removeprefix("./")
    if "/" not in pattern:
        pattern = "**/" + pattern
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (close := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : close]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = close + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def discover(
    paths: Sequence[Path], include: Sequence[str] = (), manifest: Path | None = None
) -> Discovery:
    """Find one transcript per lecture under ``paths`` (files or folders, walked recursively in
    sorted order), keeping only folder files whose relative path matches an ``include`` glob
    when any is given (named files are always kept).

    Files that end up with the same lecture id (e.g. ``NAME/NAME.json`` and ``NAME/NAME.srt``)
    are one lecture: the richest format (:data:`RICHNESS`) is read and the others are listed in
    ``skipped``. Metadata: manifest over sidecar files over defaults. With no ``paths``, the
    manifest's ``path`` rows are used.
    """
    rows = load_manifest(manifest) if manifest else {}
    if not paths:
        paths = [Path(k) for k in rows if k.startswith("/")]
    patterns = [glob_regex(p) for p in include]
    result = Discovery()
    candidates: list[Found] = []
    seen: set[Path] = set()
    for root in map(Path, paths):
        if not root.exists():
            result.failed.append((root, "no such file or folder"))
            continue
        for file, wanted in _files(root, patterns):
            if file.resolve() in seen:
                continue
            seen.add(file.resolve())
            try:
                candidates += _lectures_in(file, root, wanted, rows)
            except TranscriptError as exc:
                result.failed.append((file, str(exc)))
    result.lectures = _richest(candidates)
    return result


def load(found: Found) -> list[Cue]:
    """The cues of one found lecture (for a table, the rows of that lecture only)."""
    if found.fmt == "table":
        return read_table(found.path).get(found.table_lecture or found.meta.lecture_id, [])
    return READERS[found.fmt](found.path)


def _files(root: Path, patterns: list[re.Pattern[str]]) -> Iterator[tuple[Path, bool]]:
    """Transcript-like files under ``root`` and whether the user asked for them explicitly."""
    if not root.is_dir():
        yield root, True
        return
    visited: set[str] = set()
    for folder, dirs, files in os.walk(root, followlinks=True):
        # Linked folders are followed (lecture folders are often links into a shared disk),
        # each real folder once, so a link back to an ancestor cannot loop.
        real = os.path.realpath(folder)
        if real in visited:
            dirs[:] = []
            continue
        visited.add(real)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith(".") or name.lower() in SIDECAR_NAMES:
                continue
            file = Path(folder) / name
            rel = file.relative_to(root).as_posix()
            if patterns and not any(p.fullmatch(rel) for p in patterns):
                continue
            if file.suffix.lower() in FORMATS or is_media(file):
                yield file, bool(patterns)


def other_transcripts(path: Path) -> list[str]:
    """The names of the other transcript-like files beside ``path`` (same folder, a known
    extension, not a sidecar), sorted: what an operator could read instead of an empty or
    misfiled transcript."""
    folder = Path(path).parent
    try:
        names = sorted(f.name for f in folder.iterdir() if f.is_file())
    except OSError:
        return []
    return [n for n in names
            if n != Path(path).name and not n.startswith(".") and n.lower() not in SIDECAR_NAMES
            and Path(n).suffix.lower() in FORMATS]


def siblings(found: Found) -> list[Found]:
    """The other transcripts beside ``found``'s file (``other_transcripts``) as the same
    lecture, richest format first: what an empty or misfiled transcript falls back to. Only
    for a file named for no lecture (``sentence_translations.json``, ``transcript.srt``: a
    generic name), which stands for its folder; beside ``aula1.srt``, ``aula2.srt`` is another
    lecture."""
    if found.path.stem.casefold() not in GENERIC_NAMES or found.fmt == "table":
        return []
    out = []
    for name in other_transcripts(found.path):
        path = found.path.parent / name
        try:
            fmt = sniff(path)
        except OSError:
            continue
        if fmt is not None and fmt != "table":
            out.append(Found(found.meta, path, fmt))
    return sorted(out, key=lambda f: -RICHNESS[f.fmt])


def _lectures_in(
    file: Path, root: Path, wanted: bool, rows: dict[str, dict[str, str]]
) -> list[Found]:
    if is_media(file):  # transcribed at ingest (corpus.asr), unless a transcript beside wins
        return [Found(_meta(file, root, lecture_id_for(file, root), rows), file, "media")]
    fmt = sniff(file) if file.suffix.lower() in FORMATS else None
    if fmt is None:
        if wanted:
            raise TranscriptError(
                file,
                "not a transcript (known: .srt, .vtt, Whisper or sentence .json, "
                ".csv/.parquet with lecture, start, end, text)",
            )
        return []
    if fmt == "table":
        return [
            Found(_meta(file, root, lecture, rows, table=True), file, fmt, table_lecture=lecture)
            for lecture in read_table(file)
        ]
    return [Found(_meta(file, root, lecture_id_for(file, root), rows), file, fmt)]


def _meta(
    file: Path, root: Path, lecture_id: str, rows: dict[str, dict[str, str]], table: bool = False
) -> LectureMeta:
    fields = {} if table else sidecar_meta(file, root)
    fields.update(manifest_meta(rows, file, lecture_id, rename=not table))
    final_id = fields["lecture_id"]
    return LectureMeta(
        lecture_id=final_id,
        title=fields.get("title") or default_title(final_id),
        url=fields.get("url", ""),
        course=fields.get("course", ""),
    )


def _richest(candidates: list[Found]) -> list[Found]:
    """One Found per lecture id, in first-seen order: the richest format, ties to the first."""
    groups: dict[str, list[Found]] = {}
    for item in candidates:
        groups.setdefault(item.meta.lecture_id, []).append(item)
    out = []
    for group in groups.values():
        best = max(group, key=lambda f: RICHNESS[f.fmt])  # max keeps the first of equals
        best.skipped = [f.path for f in group if f is not best]
        out.append(best)
    return out
