"""Stored answers, annotations and their history, users, sessions, API tokens.

Revision ID: 0001
Revises:
Create Date: 2026-05-20
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _ts(name: str, nullable: bool = False) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _indexes(table: str, *columns: str) -> None:
    """One single-column index per column, named ``ix_<table>_<column>``."""
    for column in columns:
        op.create_index(f"ix_{table}_{column}", table, [column])


def upgrade() -> None:
    _create_users()
    _create_sessions()
    _create_api_tokens()
    _create_answers()
    _create_annotation_history()


def _create_users() -> None:
    """Accounts: name, role and password hash."""
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=False),
        _ts("created_at"),
    )


def _create_sessions() -> None:
    """Browser sessions, with their CSRF token and expiry."""
    op.create_table(
        "sessions",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("csrf", sa.String(64), nullable=False),
        _ts("created_at"),
        _ts("expires_at"),
    )
    _indexes("sessions", "user_id", "expires_at")


def _create_api_tokens() -> None:
    """API tokens, stored hashed."""
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"),
                  nullable=False),
        _ts("created_at"),
    )
    _indexes("api_tokens", "user_id")


def _create_answers() -> None:
    """Each answer given, with its evidence, judge verdict and manual label."""
    op.create_table(
        "answers",
        sa.Column("id", sa.Integer(), primary_key=True),
        _ts("created_at"),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("covered", sa.Boolean(), nullable=True),
        sa.Column("citations", sa.JSON(), nullable=False),
        sa.Column("segments", sa.JSON(), nullable=False),
        sa.Column("models", sa.JSON(), nullable=False),
        sa.Column("timings", sa.JSON(), nullable=False),
        sa.Column("lectures", sa.Text(), nullable=False),
        sa.Column("ar", sa.Float(), nullable=True),
        sa.Column("ar_score", sa.Integer(), nullable=True),
        sa.Column("automated", sa.String(2), nullable=True),
        sa.Column("reasoning", sa.Text(), nullable=True),
        sa.Column("judge_model", sa.String(200), nullable=True),
        sa.Column("judge_error", sa.Text(), nullable=True),
        _ts("judged_at", nullable=True),
        sa.Column("manual", sa.String(2), nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("annotated_by", sa.String(64), nullable=True),
        _ts("annotated_at", nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
    )
    _indexes("answers", "created_at", "ar", "automated", "manual")


def _create_annotation_history() -> None:
    """Every change of an answer's manual label or comment."""
    op.create_table(
        "annotation_history",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("answer_id", sa.Integer(), sa.ForeignKey("answers.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("user", sa.String(64), nullable=False),
        _ts("at"),
        sa.Column("old_label", sa.String(2), nullable=True),
        sa.Column("new_label", sa.String(2), nullable=True),
        sa.Column("old_comment", sa.Text(), nullable=True),
        sa.Column("new_comment", sa.Text(), nullable=True),
        sa.Column("source", sa.String(32), nullable=False),
        sa.UniqueConstraint("answer_id", "version", name="uq_history_version"),
    )
    _indexes("annotation_history", "answer_id")

def downgrade() -> None:
    op.drop_table("annotation_history")
    op.drop_table("answers")
    op.drop_table("api_tokens")
    op.drop_table("sessions")
    op.drop_table("users")
