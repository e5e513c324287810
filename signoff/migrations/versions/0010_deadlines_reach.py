"""deadlines: each target's deadline policy, copied onto its proposals

Revision ID: 0010_deadlines_reach
Revises: 0009
Create Date: 2026-12-01 19:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0010_deadlines_reach"
down_revision = "0009"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(JSONB(), "postgresql")
POLICY_TABLES = ("targets", "proposals")


def upgrade() -> None:
    # Plain ADD COLUMN (no batch): see 0007.
    for table in POLICY_TABLES:
        op.add_column(
            table,
            sa.Column(
                "deadline_action", sa.String(length=16), nullable=False, server_default="EXPIRE"
            ),
        )
        op.add_column(table, sa.Column("deadline_reason", sa.String(length=2000), nullable=True))
        op.add_column(
            table, sa.Column("escalation_chain", JSON, nullable=False, server_default="[]")
        )
    op.add_column(
        "proposals",
        sa.Column("escalation_level", sa.Integer(), nullable=False, server_default="0"),
    )


def downgrade() -> None:
    op.drop_column("proposals", "escalation_level")
    for table in POLICY_TABLES:
        for name in ("escalation_chain", "deadline_reason", "deadline_action"):
            op.drop_column(table, name)
