"""operations statistics: proposals indexed by when they were decided and applied, so the
last day's hourly figures (operationsStatistics) read that day's rows, not every proposal

Revision ID: 0024_operations_statistics
Revises: 0023_slack_email
Create Date: 2026-12-06 14:10:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0024_operations_statistics"
down_revision = "0023_slack_email"
branch_labels = None
depends_on = None

INDEXES = {"ix_proposals_decided": "decided_at", "ix_proposals_applied": "applied_at"}


def upgrade() -> None:
    for name, column in INDEXES.items():
        op.create_index(name, "proposals", [column])


def downgrade() -> None:
    for name in INDEXES:
        op.drop_index(name, table_name="proposals")
