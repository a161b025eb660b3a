"""``GET /media/lectures``, ``GET /media/file/{lecture_id}``, ``GET /media/cues/{lecture_id}``:
the recordings the pages play in place, and the sentences shown beside the player.

A recording is served only when it is an indexed lecture's file (the file it was transcribed
from, or the recording beside the transcript it was read from) and its real path, links
followed, lies inside one of the folders the operator named in ``AULA_MEDIA_DIRS``. The route
takes a lecture id, never a path; anything else is 404. Range requests (206) let the browser
seek without downloading the whole file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import FileResponse

from app.config import Settings
from app.deps import RetrieverDep, SettingsDep
from corpus.readers.media import MIME_TYPES, beside, media_kind

router = APIRouter(tags=["media"])
NOT_SERVED = "esta aula não tem gravação servida por aqui"


def media_roots(settings: Settings) -> list[Path]:
    """The configured media folders, resolved (links followed); missing ones left out."""
    roots = []
    for raw in settings.service.media_dirs.split(","):
        if raw.strip():
            root = Path(raw.strip()).expanduser().resolve()
            if root.is_dir():
                roots.append(root)
    return roots


def served_file(meta: dict[str, str], roots: list[Path]) -> Path | None:
    """The recording of the lecture ``meta`` (a catalogue row) that may be served: its real
    path inside one of ``roots``, else None."""
    source = meta.get("source", "")
    if not source or not roots:
        return None
    found = beside(Path(source))
    if found is None:
        return None
    real = found.resolve()
    if not real.is_file() or not any(real.is_relative_to(root) for root in roots):
        return None
    return real


def media_of(retriever: Any, settings: Settings) -> dict[str, dict[str, str]]:
    """Lecture id -> ``src``, ``kind`` (video/audio) and ``type`` of every lecture whose
    recording is served."""
    roots = media_roots(settings)
    out = {}
    for lid, meta in retriever.data.lecture_meta().items():
        real = served_file(meta, roots)
        if real is not None:
            out[lid] = {"src": f"/media/file/{lid}", "kind": media_kind(real),
                        "type": MIME_TYPES.get(real.suffix.lower(), "application/octet-stream")}
    return out


@router.get("/media/lectures", summary="The lectures whose recording is played in place")
def lectures_with_media(retriever: RetrieverDep, settings: SettingsDep
                        ) -> dict[str, dict[str, str]]:
    return media_of(retriever, settings)


@router.get("/media/file/{lecture_id:path}", summary="A lecture's recording (range requests)",
            response_class=FileResponse, responses={206: {"description": "Part of the file"},
                                                    404: {"description": "Not served"}})
def media_file(lecture_id: str, retriever: RetrieverDep, settings: SettingsDep) -> FileResponse:
    meta = retriever.data.lecture_meta().get(lecture_id)
    real = served_file(meta, media_roots(settings)) if meta else None
    if real is None:
        raise HTTPException(404, NOT_SERVED)
    return FileResponse(real, media_type=MIME_TYPES.get(real.suffix.lower(),
                                                        "application/octet-stream"),
                        headers={"Cache-Control": "private, max-age=3600"})


@router.get("/media/cues/{lecture_id:path}", summary="What a lecture says around a second",
            responses={404: {"description": "Unknown lecture"}})
def lecture_cues(
    lecture_id: str, retriever: RetrieverDep,
    start: Annotated[float, Query(ge=0)] = 0.0,
    end: Annotated[float, Query(ge=0)] = 60.0,
) -> list[dict[str, Any]]:
    """The lecture's sentences (timed cues) between ``start`` and ``end`` seconds, at most ten
    minutes of them: the transcript shown beside the player."""
    if lecture_id not in retriever.data.lecture_meta():
        raise HTTPException(404, "aula desconhecida")
    end = min(max(end, start), start + 600)
    cues = retriever.cues_between(lecture_id, start, end)
    return [{"start": c.start, "end": c.end, "text": c.text} for c in cues]
