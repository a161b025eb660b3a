"""API tokens expire: ``api_tokens.expires_at``. Tokens made before this migration get 90 days
from the day it runs (then need ``aula users token`` again).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
    expires = datetime.now(UTC) + timedelta(days=90)
    if op.get_bind().dialect.name == "sqlite":  # naive UTC text, as app.db.models stores it
        expires = expires.replace(tzinfo=None)
    tokens = sa.table("api_tokens", sa.column("expires_at", sa.DateTime(timezone=True)))
    op.execute(tokens.update().where(tokens.c.expires_at.is_(None)).values(expires_at=expires))


def downgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_column("expires_at")
