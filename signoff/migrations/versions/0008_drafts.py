"""drafts: agent-prepared drafts, their owners, and the change feed's session key

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 03:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "drafts",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("account_id", sa.String(length=36), nullable=False),
        sa.Column("session_id", sa.String(length=200), nullable=False),
        sa.Column("prepared_by_id", sa.String(length=36), nullable=False),
        sa.Column("owner", JSON, nullable=False),
        sa.Column("owner_kind", sa.String(length=32), nullable=False),
        sa.Column("owner_key", sa.String(length=71), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False, server_default="1"),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("values", JSON, nullable=True),
        sa.Column("values_digest", sa.String(length=71), nullable=True),
        sa.Column("updated_by_user", JSON, nullable=False),
        sa.Column("expires_at", TIME, nullable=False),
        sa.Column("cancel_reason", sa.String(length=32), nullable=True),
        sa.Column("operation_key", sa.String(length=64), nullable=True),
        sa.Column("reserved_digest", sa.String(length=71), nullable=True),
        sa.Column("reserved_at", TIME, nullable=True),
        sa.Column("dispatched_at", TIME, nullable=True),
        sa.Column("observed_at", TIME, nullable=True),
        sa.Column("receipt", JSON, nullable=True),
        sa.Column("owner_execution_ref", sa.String(length=200), nullable=True),
        sa.Column("values_dropped_at", TIME, nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("operation_key"),
    )
    op.create_index("ix_drafts_session", "drafts", ["account_id", "session_id", "created_at", "id"])
    op.create_index("ix_drafts_expiry", "drafts", ["expires_at", "id"])
    op.create_index("ix_drafts_owner", "drafts", ["owner_key"])
    op.create_table(
        "draft_owners",
        sa.Column("owner_key", sa.String(length=71), nullable=False),
        sa.Column("draft_id", sa.String(length=36), nullable=True),
        sa.Column("manual_submitted_at", TIME, nullable=True),
        sa.Column("updated_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("owner_key"),
    )
    op.add_column("change_events", sa.Column("session_key", sa.String(length=240), nullable=True))
    op.create_index("ix_change_events_session", "change_events", ["session_key", "cursor"])


def downgrade() -> None:
    op.drop_index("ix_change_events_session", table_name="change_events")
    op.drop_column("change_events", "session_key")
    op.drop_table("draft_owners")
    op.drop_index("ix_drafts_owner", table_name="drafts")
    op.drop_index("ix_drafts_expiry", table_name="drafts")
    op.drop_index("ix_drafts_session", table_name="drafts")
    op.drop_table("drafts")
