"""channel switches: an operator may disable, enable and remove a notification channel; a
removed channel's row stays, as its notifications reference it

Revision ID: 0014_channel_switches
Revises: 0013_actor_disabled
Create Date: 2026-12-03 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_channel_switches"
down_revision = "0013_actor_disabled"
branch_labels = None
depends_on = None

COLUMNS = ("disabled_at", "removed_at")


def upgrade() -> None:
    # Plain ADD COLUMN (no batch): see 0007; on SQLite a batch would copy
    # `notification_channels`, which `notifications` references.
    for column in COLUMNS:
        op.add_column(
            "notification_channels", sa.Column(column, sa.DateTime(timezone=True), nullable=True)
        )


def downgrade() -> None:
    for column in reversed(COLUMNS):
        op.drop_column("notification_channels", column)
