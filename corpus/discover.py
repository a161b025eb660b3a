"""Find the transcripts under the given paths, one per lecture, with their metadata."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from corpus.metadata import humanise, lecture_id_for, load_manifest, sidecar_meta
from corpus.models import Cue, LectureMeta
from corpus.readers import RICHNESS, TRANSCRIPT_SUFFIXES, read_cues, sniff
from corpus.readers.errors import TranscriptError

SIDECARS = {"title.json", "title.txt", "video_url.txt"}


@dataclass
class Found:
    """One lecture to ingest: the file chosen for it and the ones passed over."""

    meta: LectureMeta
    path: Path
    fmt: str
    skipped: list[Path] = field(default_factory=list)
    table_key: str | None = None


@dataclass
class Discovery:
    lectures: list[Found] = field(default_factory=list)
    failed: list[tuple[Path, str]] = field(default_factory=list)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A path glob where ``**/`` spans any number of folders and ``*`` stays within one."""
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
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _candidates(root: Path, include: list[str]) -> list[tuple[Path, bool]]:
    """(file, matched an --include) for the transcript-like files under ``root``."""
    if root.is_file():
        return [(root, bool(include))]
    pats = [glob_regex(p) for p in include]
    out = []
    for f in sorted(root.rglob("*")):
        if not f.is_file() or f.name in SIDECARS or f.suffix.lower() not in TRANSCRIPT_SUFFIXES:
            continue
        rel = f.relative_to(root).as_posix()
        if pats and not any(p.match(rel) for p in pats):
            continue
        out.append((f, bool(pats)))
    return out


def _manifest_meta(rows: list[dict[str, str]], path: Path, lecture_id: str) -> dict[str, str]:
    """The most specific manifest row for a transcript (by path), else by lecture id."""
    best: dict[str, str] = {}
    best_len = -1
    resolved = path.resolve()
    for row in rows:
        rp = row.get("path")
        if rp:
            p = Path(rp)
            if (resolved == p or p in resolved.parents) and len(str(p)) > best_len:
                best, best_len = row, len(str(p))
        elif row.get("lecture_id") == lecture_id and best_len < 0:
            best = row
    return best


def discover(
    paths: list[Path], include: list[str] | None = None, manifest: Path | None = None
) -> Discovery:
    """Every lecture under ``paths``; same-lecture files in several formats give one lecture."""
    rows = load_manifest(manifest) if manifest else []
    result = Discovery()
    groups: dict[str, list[tuple[Path, str, LectureMeta, str | None]]] = {}
    for given in paths:
        given = Path(given)
        root = given if given.is_dir() else given.parent
        for f, explicit in _candidates(given, include or []):
            fmt = sniff(f)
            if fmt is None:
                if explicit:
                    result.failed.append((f, f"{f}: not a transcript format Aula reads"))
                continue
            if fmt == "table":
                try:
                    keys = list(_table(f, f.stat().st_mtime_ns))
                except TranscriptError as exc:
                    result.failed.append((f, str(exc)))
                    continue
                for key in keys:
                    meta = _meta(rows, f, key, {}, explicit_id=key)
                    groups.setdefault(meta.lecture_id, []).append((f, fmt, meta, key))
                continue
            lid = lecture_id_for(f, given if given.is_dir() else f)
            meta = _meta(rows, f, lid, sidecar_meta(f, root))
            groups.setdefault(meta.lecture_id, []).append((f, fmt, meta, None))
    for lid in sorted(groups):
        options = sorted(groups[lid], key=lambda o: (RICHNESS.index(o[1]), str(o[0])))
        f, fmt, meta, key = options[0]
        skipped = [o[0] for o in options[1:]]
        result.lectures.append(Found(meta, f, fmt, skipped, key))
    return result


def _meta(
    rows: list[dict[str, str]], f: Path, lid: str, side: dict[str, str],
    explicit_id: str | None = None,
) -> LectureMeta:
    row = _manifest_meta(rows, f, explicit_id or lid)
    lecture_id = row.get("lecture_id") or explicit_id or lid
    return LectureMeta(
        lecture_id=lecture_id,
        title=row.get("title") or side.get("title") or humanise(lecture_id),
        url=row.get("url") or side.get("url", ""),
        course=row.get("course", ""),
    )


@lru_cache(maxsize=8)
def _table(path: Path, mtime_ns: int) -> dict[str, list[Cue]]:
    from corpus.readers.table import read_table

    return read_table(path)


def load(found: Found) -> list[Cue]:
    """The cues of one found lecture."""
    if found.fmt == "table":
        return _table(found.path, found.path.stat().st_mtime_ns).get(found.table_key or "", [])
    return read_cues(found.path, found.fmt)[1]
