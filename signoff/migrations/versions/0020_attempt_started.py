"""attempt started: a delivery attempt is recorded when it is claimed, before its request
is sent, and settled with its outcome after; one whose worker died keeps no outcome
(``UNKNOWN``, no finish), so the history shows every attempt that may have reached the
receiver

Revision ID: 0020_attempt_started
Revises: 0019_decisions_bound
Create Date: 2026-12-06 11:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020_attempt_started"
down_revision = "0019_decisions_bound"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("delivery_attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lease", sa.Integer(), nullable=True))
        batch_op.alter_column("duration_ms", existing_type=sa.Integer(), nullable=True)
        batch_op.alter_column(
            "finished_at", existing_type=sa.DateTime(timezone=True), nullable=True
        )


def downgrade() -> None:
    # Attempts never settled have no finish: they are given their start, and no duration.
    op.execute(
        "UPDATE delivery_attempts SET finished_at = started_at, duration_ms = 0 "
        "WHERE finished_at IS NULL"
    )
    with op.batch_alter_table("delivery_attempts", schema=None) as batch_op:
        batch_op.alter_column(
            "finished_at", existing_type=sa.DateTime(timezone=True), nullable=False
        )
        batch_op.alter_column("duration_ms", existing_type=sa.Integer(), nullable=False)
        batch_op.drop_column("lease")
