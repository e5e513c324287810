"""key checks: the database records which secret key its sealed values were sealed with

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02 10:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Empty until a process with a key starts: only processes know the key.
    op.create_table(
        "key_checks",
        sa.Column("purpose", sa.String(length=50), nullable=False),
        sa.Column("check_value", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("purpose"),
    )


def downgrade() -> None:
    op.drop_table("key_checks")
