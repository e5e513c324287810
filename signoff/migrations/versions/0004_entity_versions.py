"""entity versions: proposals, human_tasks and incidents count their updates; change
events carry the version of the entity they describe

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 10:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

VERSIONED_TABLES = ("proposals", "human_tasks", "incidents")


def upgrade() -> None:
    # Existing rows start at version 1; events already in the feed carry no version.
    for table in VERSIONED_TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(
                sa.Column("version", sa.Integer(), nullable=False, server_default="1")
            )
    with op.batch_alter_table("change_events", schema=None) as batch_op:
        batch_op.add_column(sa.Column("entity_version", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("change_events", schema=None) as batch_op:
        batch_op.drop_column("entity_version")
    for table in reversed(VERSIONED_TABLES):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("version")
