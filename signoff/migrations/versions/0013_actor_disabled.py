"""actor disabled: an operator may disable an actor, whose tokens are then refused until
it is enabled again

Revision ID: 0013_actor_disabled
Revises: 0012_notification_links
Create Date: 2026-12-02 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_actor_disabled"
down_revision = "0012_notification_links"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (no batch): see 0007; on SQLite a batch would copy `actors`, which
    # nearly every table references.
    op.add_column("actors", sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("actors", "disabled_at")
