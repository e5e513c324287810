"""change feed

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 16:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "change_events",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("cursor", sa.BigInteger(), nullable=True),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("entity_type", sa.String(length=32), nullable=False),
        sa.Column("entity_id", sa.String(length=36), nullable=False),
        sa.Column("queue_id", sa.String(length=36), nullable=True),
        sa.Column("proposal_id", sa.String(length=36), nullable=True),
        sa.Column("actor_id", sa.String(length=36), nullable=True),
        sa.Column(
            "snapshot",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("change_events", schema=None) as batch_op:
        batch_op.create_index("ix_change_events_cursor", ["cursor"], unique=True)
        batch_op.create_index("ix_change_events_published", ["published_at"], unique=False)
        batch_op.create_index("ix_change_events_occurred", ["occurred_at"], unique=False)
        batch_op.create_index("ix_change_events_queue", ["queue_id", "cursor"], unique=False)
        batch_op.create_index("ix_change_events_proposal", ["proposal_id", "cursor"], unique=False)

    op.create_table(
        "change_feed_state",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("last_cursor", sa.BigInteger(), nullable=False),
        sa.Column("pruned_through", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )


def downgrade() -> None:
    op.drop_table("change_feed_state")
    with op.batch_alter_table("change_events", schema=None) as batch_op:
        batch_op.drop_index("ix_change_events_proposal")
        batch_op.drop_index("ix_change_events_queue")
        batch_op.drop_index("ix_change_events_occurred")
        batch_op.drop_index("ix_change_events_published")
        batch_op.drop_index("ix_change_events_cursor")
    op.drop_table("change_events")
