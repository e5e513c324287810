"""audit unstamped: a partial index of the audit records still waiting for their position,
so that the sequencer's look for them at every round reads only those

Revision ID: 0018_audit_unstamped
Revises: 0017_proposal_result
Create Date: 2026-12-06 02:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018_audit_unstamped"
down_revision = "0017_proposal_result"
branch_labels = None
depends_on = None

UNSTAMPED = sa.text("position IS NULL")


def upgrade() -> None:
    op.create_index(
        "ix_audit_unstamped",
        "audit_events",
        ["created_at", "id"],
        postgresql_where=UNSTAMPED,
        sqlite_where=UNSTAMPED,
    )


def downgrade() -> None:
    op.drop_index("ix_audit_unstamped", table_name="audit_events")
