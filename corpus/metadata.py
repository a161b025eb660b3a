"""Lecture metadata: an optional manifest (CSV or YAML) and sidecar files beside transcripts."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any

GENERIC = {
    "sentence_translations", "sentence_timings", "transcript", "transcricao", "captions",
    "subtitles", "legendas", "portuguese", "english", "pt", "en", "pt-br", "pt_br", "audio",
    "community", "brazil_community",
}
FIELDS = ("lecture_id", "path", "title", "url", "course")


class ManifestError(ValueError):
    pass


def load_manifest(path: Path) -> list[dict[str, str]]:
    """Rows with ``path`` and/or ``lecture_id`` plus optional title, url, course."""
    path = Path(path)
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            data: Any = yaml.safe_load(path.read_text(encoding="utf-8")) or []
            if isinstance(data, dict):
                data = data.get("lectures", [data])
        else:
            import pandas as pd

            data = pd.read_csv(path, dtype=str, keep_default_na=False).to_dict("records")
    except Exception as exc:  # noqa: BLE001 - yaml/pandas raise many kinds
        raise ManifestError(f"{path}: cannot read manifest: {exc}") from exc
    if not isinstance(data, list):
        raise ManifestError(f"{path}: expected a list of lectures")
    rows = []
    for i, raw in enumerate(data, start=1):
        if not isinstance(raw, dict):
            raise ManifestError(f"{path}: row {i}: expected a mapping")
        row = {k: str(v).strip() for k, v in raw.items() if k in FIELDS and v is not None}
        if not row.get("path") and not row.get("lecture_id"):
            raise ManifestError(f"{path}: row {i}: needs 'path' or 'lecture_id'")
        if row.get("path"):
            p = Path(row["path"])
            row["path"] = str((p if p.is_absolute() else path.parent / p).resolve())
        rows.append(row)
    return rows


def _title_from_json(path: Path) -> str:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    if isinstance(data, str):
        return data.strip()
    if isinstance(data, dict):
        for key in ("translatedText", "input", "title"):
            if isinstance(data.get(key), str) and data[key].strip():
                return str(data[key]).strip()
    return ""


def sidecar_meta(transcript: Path, root: Path) -> dict[str, str]:
    """``video_url.txt``, ``title.json`` / ``title.txt`` nearest the transcript, up to ``root``."""
    found: dict[str, str] = {}
    folder = transcript.parent
    root = root if root.is_dir() else root.parent
    while True:
        if "url" not in found and (folder / "video_url.txt").is_file():
            lines = (folder / "video_url.txt").read_text(encoding="utf-8", errors="replace")
            url = next((ln.strip() for ln in lines.splitlines() if ln.strip()), "")
            if url:
                found["url"] = url
        if "title" not in found:
            if (folder / "title.json").is_file():
                title = _title_from_json(folder / "title.json")
                if title:
                    found["title"] = title
            elif (folder / "title.txt").is_file():
                title = (folder / "title.txt").read_text(encoding="utf-8", errors="replace")
                if title.strip():
                    found["title"] = title.strip().splitlines()[0]
        if folder == root or folder.parent == folder or root not in folder.parents:
            break
        folder = folder.parent
    return found


def lecture_id_for(transcript: Path, root: Path) -> str:
    """A readable id from the path below ``root``: ``2017/neural-networks``, ``makemore1``."""
    if transcript == root or root.is_file():
        return transcript.stem
    parts = list(PurePosixPath(transcript.relative_to(root).as_posix()).with_suffix("").parts)
    while len(parts) > 1 and (
        parts[-1].lower() in GENERIC or parts[-1] == parts[-2]
    ):
        parts.pop()
    if len(parts) == 1 and parts[0].lower() in GENERIC:
        parts = [root.name]
    return "/".join(parts)


def humanise(lecture_id: str) -> str:
    last = lecture_id.rsplit("/", 1)[-1].replace("-", " ").replace("_", " ").strip()
    return last[:1].upper() + last[1:] if last else lecture_id
