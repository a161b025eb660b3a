"""The review API: instructor login, the queue of stored answers, one item with its history,
annotations with a version check, export and import. Everything but login needs an
instructor (``InstructorDep``): students get 401, other roles 403.

Errors a user can fix answer 422 with ``field`` naming what is wrong; a stale version answers
409 with ``current`` (the item as it is now); a database that cannot be reached answers 503
(the handlers in ``app.main``).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Path, Query, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from app.auth import (
    SESSION_COOKIE,
    DatabaseDep,
    InstructorDep,
    logout,
    throttled_login,
)
from app.db import exchange, store
from app.db.models import MAX_INT
from app.schemas import NOT_BLANK, ErrorOut, Text, error_responses

router = APIRouter(tags=["review"], responses=error_responses(401, 403, 422, 503))


class ConflictOut(BaseModel):
    detail: str
    current: dict[str, Any] = Field(description="The item as it is now")

AnswerId = Annotated[int, Path(ge=1, le=MAX_INT, description="A stored answer's id")]


class LoginIn(BaseModel):
    name: Text = Field(min_length=1, max_length=64)
    password: Text = Field(min_length=1, max_length=1024)


MAX_IMPORT = 8_000_000
"""Characters of one import (also bounded in bytes by ``AULA_MAX_IMPORT_BYTES``)."""


class AnnotationIn(BaseModel):
    # PC and I need a comment that is not blank: said in the schema so clients know it.
    model_config = ConfigDict(json_schema_extra={"oneOf": [
        {"properties": {"label": {"const": "C"}}},
        {"properties": {"label": {"enum": ["PC", "I"]},
                        "comment": {"type": "string", "pattern": NOT_BLANK}},
         "required": ["comment"]},
    ]})

    label: Text = Field(description="C, PC or I", json_schema_extra={"enum": list(store.LABELS)})
    comment: Text | None = Field(None, max_length=store.MAX_COMMENT, validate_default=True,
                                description="Required for PC and I (not blank)")
    version: int = Field(ge=1, le=MAX_INT,
                         description="The item's version this annotation was made on")

    @field_validator("label")
    @classmethod
    def _label(cls, v: str) -> str:
        if v not in store.LABELS:
            raise ValueError(f"unknown label {v!r}; use C, PC or I")
        return v

    @field_validator("comment")
    @classmethod
    def _comment(cls, v: str | None, info: ValidationInfo) -> str | None:
        label = info.data.get("label")
        if label in store.COMMENT_REQUIRED and not (v or "").strip():
            raise ValueError(f"required for {label}: say what is missing or wrong in the answer")
        return v


class ImportIn(BaseModel):
    text: Text = Field(description="A CSV export or Markdown records (not blank)",
                      max_length=MAX_IMPORT, json_schema_extra={"minLength": 1,
                                                                "pattern": NOT_BLANK})
    format: Literal["csv", "md"] | None = None
    overwrite: bool = False

    @field_validator("text")
    @classmethod
    def _text(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("the import is empty")
        return v


def _now() -> datetime:
    return datetime.now(UTC)


# --- login ------------------------------------------------------------------------------------


@router.post("/review/login", summary="Instructor login: sets the session cookie",
             responses=error_responses(413, 429))
def review_login(body: LoginIn, request: Request, db: DatabaseDep) -> Response:
    """JSON only, so a cross-site HTML form cannot post it; the reply carries the CSRF token
    the page sends back in ``X-CSRF-Token`` on every write."""
    settings = request.app.state.services.settings
    minutes = settings.security.session_minutes
    got = throttled_login(request, db, body.name, body.password, timedelta(minutes=minutes))
    if got is None:
        raise HTTPException(401, "nome ou senha incorretos")
    token, csrf, expires = got
    resp = JSONResponse({"name": body.name.strip(), "csrf": csrf,
                         "expires_at": expires.isoformat()})
    resp.set_cookie(SESSION_COOKIE, token, max_age=int(minutes * 60), httponly=True,
                    samesite="strict", path="/",
                    # behind a TLS proxy the scheme is https only when the proxy is trusted
                    secure=settings.security.secure_cookies or request.url.scheme == "https")
    return resp


@router.post("/review/logout", summary="End the session")
def review_logout(request: Request, who: InstructorDep, db: DatabaseDep) -> Response:
    cookie = request.cookies.get(SESSION_COOKIE)
    if cookie:
        logout(db, cookie)
    resp = JSONResponse({"ok": True})
    resp.delete_cookie(SESSION_COOKIE, path="/")
    return resp


@router.get("/api/review/me", summary="Who is logged in (and the session's CSRF token)")
def me(who: InstructorDep) -> dict[str, Any]:
    return {"name": who.name, "role": who.user.role, "csrf": who.csrf}


# --- queue and items --------------------------------------------------------------------------


@router.get("/api/review/items", summary="The review queue (filtered; oldest first, or the "
                                                   "least sure automated labels first)")
def items(
    who: InstructorDep,
    db: DatabaseDep,
    request: Request,
    limit: int = Query(100, ge=1, le=1000),
    offset: int = Query(0, ge=0, le=MAX_INT),
    order: store.QueueOrder = Query(
        "oldest", description="oldest: oldest first; least_sure: the labels the label model "
                              "was least sure of first, then those it gave no probability for"),
) -> dict[str, Any]:
    f = _filter_from(request)
    with db.read() as s:
        rows, total = store.queue(s, f, limit=limit, offset=offset, order=order)
        lectures = store.lectures(s)
    return {"items": rows, "total": total, "lectures": lectures}


def _filter_from(request: Request) -> store.QueueFilter:
    """The queue filter from the query string: unreviewed, manual, automated (C, PC, I or
    none), ar_min, ar_max, lecture, from, to (YYYY-MM-DD)."""
    q = request.query_params

    def num(name: str) -> float | None:
        raw = q.get(name)
        if not raw:
            return None
        try:
            value = float(raw)
        except ValueError:
            raise HTTPException(422, f"{name}: {raw!r} is not a number") from None
        if not 0 <= value <= 1:
            raise HTTPException(422, f"{name}: {value} is outside 0..1")
        return value

    def day(name: str) -> date | None:
        raw = q.get(name)
        if not raw:
            return None
        try:
            return date.fromisoformat(raw)
        except ValueError:
            raise HTTPException(422, f"{name}: {raw!r} is not a date (YYYY-MM-DD)") from None

    def label(name: str) -> str | None:
        raw = (q.get(name) or "").strip()
        if not raw or raw == "none":
            return raw or None
        if raw.upper() not in store.LABELS:
            raise HTTPException(422, f"{name}: unknown label {raw!r}; use C, PC, I or none")
        return raw.upper()

    date_from, date_to = day("from"), day("to")
    if date_from and date_to and date_from > date_to:
        raise HTTPException(422, f"from: {date_from} is after to ({date_to})")
    return store.QueueFilter(
        unreviewed=q.get("unreviewed", "").lower() in ("1", "true", "on", "yes"),
        manual=label("manual"), automated=label("automated"),
        ar_min=num("ar_min"), ar_max=num("ar_max"), lecture=q.get("lecture") or None,
        date_from=date_from, date_to=date_to,
    )


@router.get("/api/review/items/{answer_id}", summary="One stored answer with its history",
            responses=error_responses(404))
def get_item(answer_id: AnswerId, who: InstructorDep, db: DatabaseDep) -> dict[str, Any]:
    with db.read() as s:
        try:
            it = store.get_item(s, answer_id)
        except store.NotFound as exc:
            raise HTTPException(404, str(exc)) from None
        it["history"] = store.history(s, answer_id)
    return it


@router.put(
    "/api/review/items/{answer_id}/annotation",
    summary="Set the manual annotation (C, PC, I and a comment) if the version still matches",
    responses={404: error_responses(404)[404], 413: error_responses(413)[413],
               409: {"model": ConflictOut, "description": "Stale version; `current` is the item "
                                                          "now"},
               422: {"model": ErrorOut,
                     "description": "Unknown label or missing comment; `field` says which"}},
)
def annotate(
    answer_id: AnswerId, body: AnnotationIn, who: InstructorDep, db: DatabaseDep
) -> Any:
    try:
        with db.write() as s:
            it = store.annotate(s, answer_id, label=body.label, comment=body.comment,
                                version=body.version, user=who.name, now=_now())
            it["history"] = store.history(s, answer_id)
    except store.InvalidAnnotation as exc:
        return JSONResponse(status_code=422, content={"detail": str(exc), "field": exc.field})
    except store.NotFound as exc:
        raise HTTPException(404, str(exc)) from None
    except store.Conflict as exc:
        current = exc.current
        with db.read() as s:
            current["history"] = store.history(s, answer_id)
        return JSONResponse(status_code=409, content={"detail": str(exc), "current": current})
    return it


@router.get("/api/review/items/{answer_id}/history", summary="Every change of an annotation")
def item_history(answer_id: AnswerId, who: InstructorDep, db: DatabaseDep) -> list[dict[str, Any]]:
    with db.read() as s:
        return store.history(s, answer_id)


# --- export and import ------------------------------------------------------------------------


@router.get(
    "/api/review/export",
    summary="Annotated items as an eval question set or records",
    response_class=Response,
    responses={200: {"description": "CSV (format=csv) or Markdown records (format=md)",
                     "content": {"text/csv": {"schema": {"type": "string"}},
                                 "text/markdown": {"schema": {"type": "string"}}}}},
)
def export(
    who: InstructorDep,
    db: DatabaseDep,
    format: Literal["csv", "md"] = "csv",
    all: bool = False,
) -> PlainTextResponse:
    with db.read() as s:
        rows = store.export_items(s, annotated_only=not all)
    text = exchange.export(rows, format)
    kind = "text/csv" if format == "csv" else "text/markdown"
    name = f"aula-anotacoes.{format}"
    return PlainTextResponse(text, media_type=f"{kind}; charset=utf-8",
                             headers={"Content-Disposition": f'attachment; filename="{name}"'})


@router.post(
    "/api/review/import",
    summary="Import annotations from a CSV export or records: all rows or none",
    responses={413: error_responses(413)[413],
               422: {"model": ErrorOut,
                     "description": "Bad rows; `errors` names each, nothing changed"}},
)
def import_annotations(body: ImportIn, who: InstructorDep, db: DatabaseDep) -> Any:
    fmt = body.format or exchange.guess_format("", body.text)
    try:
        rows = exchange.parse_import(body.text, fmt)
        with db.write() as s:
            res = store.import_annotations(s, rows, user=who.name, now=_now(),
                                           source=f"import-{fmt}", overwrite=body.overwrite)
    except exchange.ImportFormatError as exc:
        return JSONResponse(status_code=422, content={"detail": str(exc), "errors": [str(exc)]})
    except store.ImportRejected as exc:
        return JSONResponse(status_code=422, content={"detail": str(exc), "errors": exc.errors})
    return {"changed": res.changed, "unchanged": res.unchanged}
