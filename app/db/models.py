"""The tables, as SQLAlchemy 2 models. The schema itself is owned by the Alembic migrations in
``app/db/migrations``; ``tests/review/test_store.py`` checks the two never drift apart."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

LABEL_LEN = 2
NAME_LEN = 64
MAX_INT = 2**31 - 1
"""The largest id or version an ``Integer`` column holds (32 bits on PostgreSQL)."""


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in and out, on every backend (SQLite keeps naive UTC text)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime: pass an aware UTC datetime")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC)  # type: ignore[no-any-return]


class Base(DeclarativeBase):
    pass


class User(Base):
    """An instructor account (students ask without one)."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME_LEN), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    password_hash: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class WebSession(Base):
    """A login on the review page; the cookie holds the token, the table only its SHA-256."""

    __tablename__ = "sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    csrf: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)


class ApiToken(Base):
    """A bearer token for scripts; stored as its SHA-256, shown once when created, refused
    after ``expires_at`` (a token without one, from before expiry existed, is refused too)."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class StoredAnswer(Base):
    """One answered question: what was asked, answered and cited, how it was judged, and the
    instructor's annotation. ``version`` grows by one with each annotation change."""

    __tablename__ = "answers"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    question: Mapped[str] = mapped_column(Text)
    answer: Mapped[str] = mapped_column(Text)
    covered: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    citations: Mapped[list[Any]] = mapped_column(JSON)
    segments: Mapped[list[Any]] = mapped_column(JSON)
    models: Mapped[dict[str, Any]] = mapped_column(JSON)
    timings: Mapped[dict[str, Any]] = mapped_column(JSON)
    # "|lecture-a|lecture-b|": the lectures of the retrieved segments, for the queue filter.
    lectures: Mapped[str] = mapped_column(Text, default="")
    # The evidence check: P(answer right) and {strategy, moments, sentences} (answer/pipeline.py).
    confidence: Mapped[float | None] = mapped_column(Float, nullable=True)
    evidence: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)

    ar: Mapped[float | None] = mapped_column(Float, nullable=True, index=True)
    ar_score: Mapped[int | None] = mapped_column(Integer, nullable=True)
    automated: Mapped[str | None] = mapped_column(String(LABEL_LEN), nullable=True, index=True)
    reasoning: Mapped[str | None] = mapped_column(Text, nullable=True)
    judge_model: Mapped[str | None] = mapped_column(String(200), nullable=True)
    judge_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    # What the judges measured (AR score, claim probabilities, thresholds): app/judging.py.
    judge_signals: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    judged_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)

    manual: Mapped[str | None] = mapped_column(String(LABEL_LEN), nullable=True, index=True)
    comment: Mapped[str | None] = mapped_column(Text, nullable=True)
    annotated_by: Mapped[str | None] = mapped_column(String(NAME_LEN), nullable=True)
    annotated_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    version: Mapped[int] = mapped_column(Integer, default=1)


class AnnotationChange(Base):
    """One change of an annotation: who, when, old -> new, and the version it produced."""

    __tablename__ = "annotation_history"
    # Two saves can never both produce the same version of an item.
    __table_args__ = (UniqueConstraint("answer_id", "version", name="uq_history_version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    answer_id: Mapped[int] = mapped_column(
        ForeignKey("answers.id", ondelete="CASCADE"), index=True
    )
    version: Mapped[int] = mapped_column(Integer)
    user: Mapped[str] = mapped_column(String(NAME_LEN))
    at: Mapped[datetime] = mapped_column(UTCDateTime())
    old_label: Mapped[str | None] = mapped_column(String(LABEL_LEN), nullable=True)
    new_label: Mapped[str | None] = mapped_column(String(LABEL_LEN), nullable=True)
    old_comment: Mapped[str | None] = mapped_column(Text, nullable=True)
    new_comment: Mapped[str | None] = mapped_column(Text, nullable=True)
    source: Mapped[str] = mapped_column(String(32))


class RateBucket(Base):
    """A client's token bucket for one rate limit, shared by every server process
    (``app.ratelimit.DatabaseLimiter``); a bucket that has refilled is deleted."""

    __tablename__ = "rate_limits"

    key: Mapped[str] = mapped_column(String(128), primary_key=True)  # "<limit>:<client>"
    tokens: Mapped[float] = mapped_column(Float)
    updated: Mapped[float] = mapped_column(Float)  # seconds since the epoch, any process's clock
