"""slack and email: notification channels of kinds SLACK_APP and EMAIL (stored as strings,
no change), where each posted Slack message went, and the Slack user an actor decides as

Revision ID: 0023_slack_email
Revises: 0022_agent_execution
Create Date: 2026-12-06 11:20:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023_slack_email"
down_revision = "0022_agent_execution"
branch_labels = None
depends_on = None

MESSAGE_COLUMNS = ("slack_channel", "slack_ts")


def upgrade() -> None:
    # Plain ADD COLUMN (no batch): see 0007; on SQLite a batch would copy tables others
    # reference. The unique key is an index for the same reason.
    for column in MESSAGE_COLUMNS:
        op.add_column("notifications", sa.Column(column, sa.String(32), nullable=True))
    op.add_column("actors", sa.Column("slack_user_id", sa.String(32), nullable=True))
    op.create_index("uq_actors_slack_user_id", "actors", ["slack_user_id"], unique=True)


def downgrade() -> None:
    op.drop_index("uq_actors_slack_user_id", table_name="actors")
    op.drop_column("actors", "slack_user_id")
    for column in reversed(MESSAGE_COLUMNS):
        op.drop_column("notifications", column)
