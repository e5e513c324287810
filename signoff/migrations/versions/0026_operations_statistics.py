"""operations statistics: proposals indexed by when they were applied, so the last day's
hourly figures (operationsStatistics) read that day's rows, not every proposal (the
decided side uses 0025_history's ``ix_proposals_decided``)

Revision ID: 0026_operations_statistics
Revises: 0025_history
Create Date: 2026-12-06 14:10:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0026_operations_statistics"
down_revision = "0025_history"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_proposals_applied", "proposals", ["applied_at"])


def downgrade() -> None:
    op.drop_index("ix_proposals_applied", table_name="proposals")
