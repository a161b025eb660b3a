"""The student page at ``/`` and its static files."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.templating import Jinja2Templates

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=str(HERE / "templates"))
router = APIRouter(include_in_schema=False)
STATIC = {"app.js": "text/javascript", "dom.js": "text/javascript",
          "links.js": "text/javascript", "player.js": "text/javascript", "style.css": "text/css"}


@router.get("/", response_class=HTMLResponse)
def student_page(request: Request) -> HTMLResponse:
    data = request.app.state.services.retriever.data
    return templates.TemplateResponse(
        request, "index.html", {"lectures": len(data.lectures), "segments": len(data.segments)}
    )


@router.get("/static/{name}")
def static(name: str) -> FileResponse:
    if name not in STATIC:
        from fastapi import HTTPException

        raise HTTPException(404)
    return FileResponse(HERE / "static" / name, media_type=STATIC[name])
