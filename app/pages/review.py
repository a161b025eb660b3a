"""The instructor review page at ``/review`` and its static files.

Anonymous visitors (students included) get the login form with 401 and no stored question;
an instructor's session gets the queue, with the session's CSRF token in a meta tag for the
page's writes.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.templating import Jinja2Templates

from app.auth import INSTRUCTOR, DatabaseDep, identify

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=str(HERE / "templates"))
router = APIRouter(include_in_schema=False)
STATIC = {"review.js": "text/javascript", "review.css": "text/css",
          "login.js": "text/javascript"}


@router.get("/review", response_class=HTMLResponse)
def review_page(request: Request, db: DatabaseDep) -> HTMLResponse:
    who = identify(db, request)
    if who is None or who.user.role != INSTRUCTOR:
        return templates.TemplateResponse(request, "login.html", {}, status_code=401)
    return templates.TemplateResponse(
        request, "review.html", {"name": who.name, "csrf": who.csrf or ""},
        headers={"Cache-Control": "no-store"},
    )


@router.get("/review/static/{name}")
def review_static(name: str) -> FileResponse:
    if name not in STATIC:
        raise HTTPException(404)
    return FileResponse(HERE / "static" / name, media_type=STATIC[name])
