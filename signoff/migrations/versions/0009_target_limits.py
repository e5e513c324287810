"""target limits: per-target concurrency and rate, and the circuit breaker's state

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 04:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    # Plain ADD COLUMN (no batch): see 0007.
    op.add_column(
        "targets",
        sa.Column("max_concurrency", sa.Integer(), nullable=False, server_default="20"),
    )
    op.add_column("targets", sa.Column("rate_per_second", sa.Float(), nullable=True))
    # The rate limiter's theoretical arrival time (GCRA): when the next delivery is due.
    op.add_column("targets", sa.Column("rate_available_at", TIME, nullable=True))
    op.add_column(
        "targets",
        sa.Column("circuit_state", sa.String(length=16), nullable=False, server_default="CLOSED"),
    )
    op.add_column(
        "targets",
        sa.Column("consecutive_failures", sa.Integer(), nullable=False, server_default="0"),
    )
    op.add_column("targets", sa.Column("last_error", sa.String(length=200), nullable=True))
    op.add_column("targets", sa.Column("last_error_at", TIME, nullable=True))
    op.add_column("targets", sa.Column("circuit_opened_at", TIME, nullable=True))
    op.add_column("targets", sa.Column("circuit_probe_at", TIME, nullable=True))


def downgrade() -> None:
    for name in (
        "circuit_probe_at",
        "circuit_opened_at",
        "last_error_at",
        "last_error",
        "consecutive_failures",
        "circuit_state",
        "rate_available_at",
        "rate_per_second",
        "max_concurrency",
    ):
        op.drop_column("targets", name)
