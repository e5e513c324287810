"""history: a proposal let through without a person is decided when it is proposed
(decided_at was left empty), and decided proposals are read most recently decided first

Revision ID: 0025_history
Revises: 0024_oidc_email
Create Date: 2026-12-06 14:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025_history"
down_revision = "0024_oidc_email"
branch_labels = None
depends_on = None

PROPOSALS = sa.table(
    "proposals",
    sa.column("state", sa.String),
    sa.column("decided_at", sa.DateTime),
    sa.column("created_at", sa.DateTime),
)


def upgrade() -> None:
    op.execute(
        PROPOSALS.update()
        .where(PROPOSALS.c.decided_at.is_(None), PROPOSALS.c.state != "APPROVAL_REQUIRED")
        .values(decided_at=PROPOSALS.c.created_at)
    )
    op.create_index("ix_proposals_decided", "proposals", ["decided_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_proposals_decided", table_name="proposals")
