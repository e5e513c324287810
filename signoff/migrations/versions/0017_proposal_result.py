"""proposal result: the JSON answer of the receiver that applied a proposal, kept for
targets that declare an output schema

Revision ID: 0017_proposal_result
Revises: 0016_audit_log
Create Date: 2026-12-06 00:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0017_proposal_result"
down_revision = "0016_audit_log"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    # Plain ADD COLUMN (no batch): see 0007.
    op.add_column("proposals", sa.Column("result", JSON, nullable=True))


def downgrade() -> None:
    op.drop_column("proposals", "result")
