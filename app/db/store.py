"""Repository functions over a SQLAlchemy session: answers, annotations with a version check and
history, users, sessions, API tokens.

Every function takes the session of a transaction the caller opened (``Database.read()`` /
``write()``) and ``now`` where time matters, and returns plain dicts or dataclasses, never ORM
objects, so routes, the CLI and tests use the results after the transaction is gone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal, get_args

from sqlalchemy import CursorResult, delete, func, select, update
from sqlalchemy.orm import Session
from sqlalchemy.sql import ColumnElement

from app.db.models import (
    MAX_INT,
    AnnotationChange,
    ApiToken,
    StoredAnswer,
    User,
    WebSession,
)
from corpus.errors import InputError
from eval.record import normalise_newlines

LABELS = ("C", "PC", "I")
COMMENT_REQUIRED = ("PC", "I")
MAX_COMMENT = 4000
ROLES = ("instructor",)


class NotFound(LookupError):
    """No stored answer has that id."""


class InvalidAnnotation(InputError):
    """A label or comment that cannot be stored; ``field`` names which."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class Conflict(Exception):
    """The item changed since the version the caller saw; ``current`` is the item now."""

    def __init__(self, current: dict[str, Any], version: int) -> None:
        super().__init__(
            f"version {version} is stale: the item is at version {current['version']}"
        )
        self.current = current


class ImportRejected(InputError):
    """An import with bad rows; nothing was stored. ``errors`` has one line per bad row."""

    def __init__(self, errors: list[str]) -> None:
        shown = errors[:20] + ([f"... and {len(errors) - 20} more"] if len(errors) > 20 else [])
        super().__init__("import rejected, nothing changed:\n" + "\n".join(shown))
        self.errors = errors


class UserExists(InputError):
    pass


# --- annotations: pure checks ---------------------------------------------------------------


def check_annotation(
    label: Any, comment: Any, *, require_comment: Sequence[str] = COMMENT_REQUIRED
) -> tuple[str, str | None]:
    """The label (C, PC or I, any case) and the comment (line endings as LF, stripped; blank
    -> None), or ``InvalidAnnotation`` naming the field. PC and I need a comment saying what
    is wrong. Every comment is stored through here, whichever way it came in."""
    text = "" if label is None else str(label).strip()
    if not text:
        raise InvalidAnnotation("label", "missing; use C, PC or I")
    key = text.upper()
    if key not in LABELS:
        raise InvalidAnnotation("label", f"unknown label {text!r}; use C, PC or I")
    note = "" if comment is None else normalise_newlines(str(comment)).strip()
    if not note and key in require_comment:
        raise InvalidAnnotation(
            "comment", f"required for {key}: say what is missing or wrong in the answer"
        )
    if len(note) > MAX_COMMENT:
        raise InvalidAnnotation("comment", f"{len(note)} characters; the limit is {MAX_COMMENT}")
    return key, note or None


# --- answers ----------------------------------------------------------------------------------


def lectures_key(segments: Iterable[Mapping[str, Any]]) -> str:
    """``"|a|b|"``: the lectures of the segments, for an exact-match filter with LIKE."""
    ids = sorted({str(s.get("lecture_id", "")) for s in segments} - {""})
    return "|" + "|".join(ids) + "|" if ids else ""


def save_answer(s: Session, out: Mapping[str, Any], now: datetime) -> int:
    """Store one answered question (the ``/ask`` response body); returns its id."""
    segments = list(out.get("segments") or [])
    row = StoredAnswer(
        created_at=now,
        question=str(out["question"]),
        answer=str(out.get("answer") or ""),
        covered=out.get("covered"),
        citations=list(out.get("citations") or []),
        segments=segments,
        models=dict(out.get("models") or {}),
        timings=dict(out.get("timings") or {}),
        lectures=lectures_key(segments),
        confidence=out.get("confidence"),
        evidence={k: out.get(k)
                  for k in ("strategy", "moments", "sentences", "search_query", "reason")}
        if out.get("strategy") else None,
        version=1,
    )
    s.add(row)
    s.flush()
    return int(row.id)


def item(row: StoredAnswer) -> dict[str, Any]:
    """Everything about one stored answer, as plain data."""
    return {
        "id": row.id,
        "created_at": row.created_at.isoformat(),
        "question": row.question,
        "answer": row.answer,
        "covered": row.covered,
        "citations": row.citations,
        "segments": row.segments,
        "models": row.models,
        "timings": row.timings,
        "lectures": [x for x in row.lectures.split("|") if x],
        "confidence": row.confidence,
        "evidence": row.evidence,
        "ar": row.ar,
        "ar_score": row.ar_score,
        "automated": row.automated,
        "reasoning": row.reasoning,
        "judge_model": row.judge_model,
        "judge_error": row.judge_error,
        "judge_signals": row.judge_signals,
        "judged_at": row.judged_at.isoformat() if row.judged_at else None,
        "manual": row.manual,
        "comment": row.comment,
        "annotated_by": row.annotated_by,
        "annotated_at": row.annotated_at.isoformat() if row.annotated_at else None,
        "version": row.version,
    }


def summary(row: StoredAnswer) -> dict[str, Any]:
    """The queue's view of a stored answer."""
    return {
        "id": row.id,
        "created_at": row.created_at.isoformat(),
        "question": row.question,
        "lectures": [x for x in row.lectures.split("|") if x],
        "confidence": row.confidence,
        "evidence": row.evidence,
        "ar": row.ar,
        "automated": row.automated,
        "label_confidence": (row.judge_signals or {}).get("label_confidence"),
        "manual": row.manual,
        "annotated_by": row.annotated_by,
        "version": row.version,
    }


def get_item(s: Session, answer_id: int) -> dict[str, Any]:
    return item(_stored(s, answer_id))


def _stored(s: Session, answer_id: int) -> StoredAnswer:
    """The stored answer ``answer_id``; an id no column can hold is as unknown as any other."""
    row = s.get(StoredAnswer, answer_id) if 1 <= answer_id <= MAX_INT else None
    if row is None:
        raise NotFound(f"no stored answer with id {answer_id}")
    return row


@dataclass(frozen=True)
class QueueFilter:
    """The review queue's filters; None means any. ``manual``/``automated`` take C, PC, I or
    "none" (not annotated / not judged); dates are UTC days, both ends included."""

    unreviewed: bool = False
    manual: str | None = None
    automated: str | None = None
    ar_min: float | None = None
    ar_max: float | None = None
    lecture: str | None = None
    date_from: date | None = None
    date_to: date | None = None

    def where(self) -> list[ColumnElement[bool]]:
        A = StoredAnswer
        conds: list[ColumnElement[bool]] = []
        if self.unreviewed:
            conds.append(A.manual.is_(None))
        for column, value in ((A.manual, self.manual), (A.automated, self.automated)):
            if value == "none":
                conds.append(column.is_(None))
            elif value:
                conds.append(column == value)
        if self.ar_min is not None:
            conds.append(A.ar >= self.ar_min)
        if self.ar_max is not None:
            conds.append(A.ar <= self.ar_max)
        if self.lecture:
            conds.append(A.lectures.contains(f"|{self.lecture}|", autoescape=True))
        if self.date_from is not None:
            conds.append(A.created_at >= datetime.combine(self.date_from, time(), UTC))
        if self.date_to is not None and self.date_to < date.max:  # date.max: no end
            end = datetime.combine(self.date_to + timedelta(days=1), time(), UTC)
            conds.append(A.created_at < end)
        return conds


QueueOrder = Literal["oldest", "least_sure"]
QUEUE_ORDERS: tuple[str, ...] = get_args(QueueOrder)
"""The queue's orders: oldest first, or the automated labels the label model was least sure of
first (then the labels it gave no probability for: a rule's, AR's alone, none yet; oldest
first among equals)."""


def queue(
    s: Session, f: QueueFilter = QueueFilter(), *, limit: int = 100, offset: int = 0,
    order: str = "oldest",
) -> tuple[list[dict[str, Any]], int]:
    """One page of the queue in ``order`` (``QUEUE_ORDERS``) and how many items match in all."""
    if order not in QUEUE_ORDERS:
        raise ValueError(f"unknown queue order {order!r}; use one of {', '.join(QUEUE_ORDERS)}")
    conds = f.where()
    total = s.scalar(select(func.count()).select_from(StoredAnswer).where(*conds)) or 0
    keys: list[Any] = [StoredAnswer.id]
    if order == "least_sure":
        sure = StoredAnswer.judge_signals["label_confidence"].as_float()
        keys.insert(0, sure.asc().nulls_last())
    rows = s.scalars(
        select(StoredAnswer).where(*conds).order_by(*keys).limit(limit).offset(offset)
    )
    return [summary(r) for r in rows], int(total)


def lectures(s: Session) -> list[str]:
    """Every lecture id that appears in stored answers."""
    found: set[str] = set()
    for key in s.scalars(select(StoredAnswer.lectures).distinct()):
        found.update(x for x in key.split("|") if x)
    return sorted(found)


def set_automated(
    s: Session,
    answer_id: int,
    *,
    ar_score: int | None,
    label: str | None,
    reasoning: str | None,
    model: str,
    error: str | None,
    now: datetime,
    signals: dict[str, Any] | None = None,
) -> None:
    """Record the automated judgement of an answer (AR = score / 3) and what the judges
    measured (``signals``); never touches the instructor's annotation or its version."""
    s.execute(
        update(StoredAnswer)
        .where(StoredAnswer.id == answer_id)
        .values(
            ar_score=ar_score,
            ar=None if ar_score is None else ar_score / 3,
            automated=label,
            reasoning=reasoning,
            judge_model=model,
            judge_error=error,
            judge_signals=signals,
            judged_at=now,
        )
    )


def unjudged(s: Session, limit: int = 100) -> list[tuple[int, str, str]]:
    """(id, question, answer) of answers never judged, oldest first."""
    rows = s.execute(
        select(StoredAnswer.id, StoredAnswer.question, StoredAnswer.answer)
        .where(StoredAnswer.judged_at.is_(None))
        .order_by(StoredAnswer.id)
        .limit(limit)
    )
    return [(int(i), q, a) for i, q, a in rows]


# --- annotations ------------------------------------------------------------------------------


def annotate(
    s: Session,
    answer_id: int,
    *,
    label: Any,
    comment: Any,
    version: int,
    user: str,
    now: datetime,
    source: str = "review",
    require_comment: Sequence[str] = COMMENT_REQUIRED,
) -> dict[str, Any]:
    """Set the manual annotation if the item is still at ``version``; returns the item.

    A stale ``version`` raises ``Conflict`` with the item as it is now, so nothing an
    instructor saved is ever overwritten unseen. Saving the same label and comment again is
    a no-op (no new version, no history row).
    """
    label, comment = check_annotation(label, comment, require_comment=require_comment)
    row = _stored(s, answer_id)
    if row.version != version:
        raise Conflict(item(row), version)
    if (row.manual, row.comment) == (label, comment):
        return item(row)
    _apply(s, row, label, comment, user, now, source)
    return item(row)


def _apply(
    s: Session, row: StoredAnswer, label: str, comment: str | None, user: str, now: datetime,
    source: str,
) -> None:
    old_label, old_comment, version = row.manual, row.comment, row.version
    done: CursorResult[Any] = s.execute(  # type: ignore[assignment]
        update(StoredAnswer)
        .where(StoredAnswer.id == row.id, StoredAnswer.version == version)
        .values(manual=label, comment=comment, annotated_by=user, annotated_at=now,
                version=version + 1)
        .execution_options(synchronize_session=False)
    )
    if done.rowcount != 1:  # another writer got there between our read and this update
        s.expire(row)
        raise Conflict(item(row), version)
    s.add(AnnotationChange(
        answer_id=row.id, version=version + 1, user=user, at=now, old_label=old_label,
        new_label=label, old_comment=old_comment, new_comment=comment, source=source,
    ))
    s.flush()
    s.refresh(row)


def history(s: Session, answer_id: int) -> list[dict[str, Any]]:
    """Every change of an item's annotation, oldest first."""
    if not 1 <= answer_id <= MAX_INT:
        return []
    rows = s.scalars(
        select(AnnotationChange)
        .where(AnnotationChange.answer_id == answer_id)
        .order_by(AnnotationChange.version)
    )
    return [
        {
            "version": r.version,
            "user": r.user,
            "at": r.at.isoformat(),
            "old_label": r.old_label,
            "new_label": r.new_label,
            "old_comment": r.old_comment,
            "new_comment": r.new_comment,
            "source": r.source,
        }
        for r in rows
    ]


def export_items(s: Session, *, annotated_only: bool = True) -> list[dict[str, Any]]:
    """Stored answers (only the manually annotated ones by default), oldest first."""
    q = select(StoredAnswer).order_by(StoredAnswer.id)
    if annotated_only:
        q = q.where(StoredAnswer.manual.is_not(None))
    return [item(r) for r in s.scalars(q)]


@dataclass(frozen=True)
class ImportRow:
    """One annotation read from an import file; ``where`` names it in messages."""

    where: str
    answer_id: str
    label: str
    comment: str | None = None
    version: int | None = None
    needs_comment: bool = True
    keep_comment: bool = False
    """The file carries no comments (report records): the stored comment stays."""


@dataclass(frozen=True)
class ImportResult:
    changed: int
    unchanged: int


def import_annotations(
    s: Session,
    rows: Sequence[ImportRow],
    *,
    user: str,
    now: datetime,
    source: str,
    overwrite: bool = False,
) -> ImportResult:
    """Apply every row, or none: all rows are checked first and any bad one (unknown label,
    missing comment, unknown id, repeated id, stale version, or an annotation already there
    without a version to show the file knew it) raises ``ImportRejected`` naming each."""
    plan, errors = _import_plan(s, rows, overwrite)
    if errors:
        raise ImportRejected(errors)
    for where, row, label, comment in plan:
        try:
            _apply(s, row, label, comment, user, now, source)
        except Conflict as exc:  # someone saved it while we imported: the caller rolls back
            raise ImportRejected([f"{where}: version: {exc}"]) from exc
    return ImportResult(changed=len(plan), unchanged=len(rows) - len(plan))


_Planned = tuple[str, StoredAnswer, str, str | None]
"""(where in the file, the stored answer, its new label, its new comment)."""


def _import_plan(s: Session, rows: Sequence[ImportRow], overwrite: bool
                 ) -> tuple[list[_Planned], list[str]]:
    """The changes the rows ask for, and an error line for each row that cannot be applied."""
    ids = _answer_ids(rows)
    found = {
        a.id: a
        for a in s.scalars(select(StoredAnswer).where(StoredAnswer.id.in_(set(ids.values()))))
    }
    errors: list[str] = []
    plan: list[_Planned] = []
    seen: dict[int, str] = {}
    for r in rows:
        try:
            label, comment = check_annotation(
                r.label, r.comment, require_comment=COMMENT_REQUIRED if r.needs_comment else ()
            )
        except InvalidAnnotation as exc:
            errors.append(f"{r.where}: {exc}")
            continue
        row = found.get(ids.get(r.answer_id, -1))
        if row is None:
            errors.append(f"{r.where}: id: no stored answer with id {r.answer_id!r}")
            continue
        if r.keep_comment:
            comment = row.comment
        if row.id in seen:
            errors.append(f"{r.where}: id: {row.id} appears again (first in {seen[row.id]})")
            continue
        seen[row.id] = r.where
        if (row.manual, row.comment) == (label, comment):
            continue
        error = _version_error(r, row, overwrite)
        if error:
            errors.append(error)
        else:
            plan.append((r.where, row, label, comment))
    return plan, errors


def _answer_ids(rows: Sequence[ImportRow]) -> dict[str, int]:
    """The rows' ids that could name a stored answer, as integers."""
    ids: dict[str, int] = {}
    for r in rows:
        try:
            ids[r.answer_id] = int(r.answer_id)
        except ValueError:
            pass
    return {k: v for k, v in ids.items() if 1 <= v <= MAX_INT}  # others name no stored answer


def _version_error(r: ImportRow, row: StoredAnswer, overwrite: bool) -> str | None:
    """Why ``r`` may not replace the stored annotation: a stale version, or an annotation
    already there that the file shows no sign of knowing (without ``overwrite``)."""
    if r.version is not None and r.version != row.version:
        return (f"{r.where}: version: stale version {r.version}; item {row.id} is at version "
                f"{row.version} ({_annotation(row)})")
    if r.version is None and row.manual is not None and not overwrite:
        return (f"{r.where}: version: item {row.id} is already annotated ({_annotation(row)}); "
                "give its version to replace it, or import with overwrite")
    return None


def _annotation(row: StoredAnswer) -> str:
    who = f" by {row.annotated_by}" if row.annotated_by else ""
    return f"{row.manual}{who}, version {row.version}"


# --- users, sessions, tokens ------------------------------------------------------------------


@dataclass(frozen=True)
class UserInfo:
    id: int
    name: str
    role: str


def _info(u: User) -> UserInfo:
    return UserInfo(id=u.id, name=u.name, role=u.role)


def add_user(s: Session, name: str, role: str, password_hash: str, now: datetime) -> UserInfo:
    if role not in ROLES:
        raise InputError(f"role: unknown role {role!r}; use {', '.join(ROLES)}")
    if s.scalar(select(User).where(User.name == name)) is not None:
        raise UserExists(f"user {name!r} already exists")
    u = User(name=name, role=role, password_hash=password_hash, created_at=now)
    s.add(u)
    s.flush()
    return _info(u)


def set_password(s: Session, name: str, password_hash: str) -> None:
    s.execute(update(User).where(User.name == name).values(password_hash=password_hash))


def find_user(s: Session, name: str) -> tuple[UserInfo, str] | None:
    """The user and their password hash."""
    u = s.scalar(select(User).where(User.name == name))
    return None if u is None else (_info(u), u.password_hash)


def list_users(s: Session) -> list[UserInfo]:
    return [_info(u) for u in s.scalars(select(User).order_by(User.name))]


def start_session(
    s: Session, user_id: int, token_hash: str, csrf: str, now: datetime, lifetime: timedelta
) -> datetime:
    """Store a login session; returns when it expires. Expired sessions are dropped here."""
    s.execute(delete(WebSession).where(WebSession.expires_at <= now))
    expires = now + lifetime
    s.add(WebSession(token_hash=token_hash, user_id=user_id, csrf=csrf, created_at=now,
                     expires_at=expires))
    s.flush()
    return expires


def session_user(s: Session, token_hash: str, now: datetime) -> tuple[UserInfo, str] | None:
    """The user of a live session and its CSRF token; None if unknown or expired."""
    found = s.execute(
        select(User, WebSession.csrf)
        .join(WebSession, WebSession.user_id == User.id)
        .where(WebSession.token_hash == token_hash, WebSession.expires_at > now)
    ).first()
    return None if found is None else (_info(found[0]), str(found[1]))


def end_session(s: Session, token_hash: str) -> None:
    s.execute(delete(WebSession).where(WebSession.token_hash == token_hash))


def add_token(
    s: Session, user_id: int, token_hash: str, now: datetime, expires: datetime
) -> None:
    """Store an API token that is refused from ``expires`` on; expired ones are dropped here."""
    s.execute(delete(ApiToken).where(ApiToken.expires_at <= now))
    s.add(ApiToken(token_hash=token_hash, user_id=user_id, created_at=now, expires_at=expires))
    s.flush()


def token_user(s: Session, token_hash: str, now: datetime) -> UserInfo | None:
    """The user of a live API token; None if unknown, revoked or expired."""
    u = s.scalar(
        select(User).join(ApiToken, ApiToken.user_id == User.id)
        .where(ApiToken.token_hash == token_hash, ApiToken.expires_at > now)
    )
    return None if u is None else _info(u)


def revoke_tokens(s: Session, user_id: int, token_hash: str | None = None) -> int:
    """Delete the user's API tokens (only ``token_hash`` when given); returns how many."""
    q = delete(ApiToken).where(ApiToken.user_id == user_id)
    if token_hash is not None:
        q = q.where(ApiToken.token_hash == token_hash)
    return int(s.execute(q).rowcount)  # type: ignore[attr-defined]


def end_sessions(s: Session, user_id: int) -> int:
    """Log the user out everywhere; returns how many sessions ended."""
    res = s.execute(delete(WebSession).where(WebSession.user_id == user_id))
    return int(res.rowcount)  # type: ignore[attr-defined]


def remove_user(s: Session, user_id: int) -> None:
    """Delete the account with its sessions and tokens (annotations keep the name)."""
    s.execute(delete(ApiToken).where(ApiToken.user_id == user_id))
    s.execute(delete(WebSession).where(WebSession.user_id == user_id))
    s.execute(delete(User).where(User.id == user_id))
