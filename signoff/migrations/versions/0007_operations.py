"""operations: incidents people can work (acknowledge, resolve, open), dead-letter states,
repair actions, reconciliation runs, and paused targets

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 02:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")

INCIDENT_COLUMNS: tuple[tuple[str, sa.types.TypeEngine[str]], ...] = (
    ("summary", sa.Text()),
    ("opened_by_id", sa.String(length=36)),
    ("acknowledged_by_id", sa.String(length=36)),
    ("resolved_by_id", sa.String(length=36)),
    ("resolution_code", sa.String(length=64)),
    ("resolution_summary", sa.Text()),
)


def upgrade() -> None:
    # Plain ADD COLUMN / DROP COLUMN (no batch): on SQLite a batch would copy each table,
    # which its foreign keys refuse once other tables reference its rows.
    for name, type_ in INCIDENT_COLUMNS:
        op.add_column("incidents", sa.Column(name, type_, nullable=True))
    # Lists put the most severe first: the rank is stored beside the severity, so that
    # order can be paginated by a plain column.
    op.add_column(
        "incidents",
        sa.Column("severity_rank", sa.Integer(), nullable=False, server_default="1"),
    )
    op.execute(
        "UPDATE incidents SET severity_rank = CASE severity WHEN 'CRITICAL' THEN 0 "
        "WHEN 'HIGH' THEN 1 WHEN 'MEDIUM' THEN 2 ELSE 3 END"
    )
    op.create_index("ix_incidents_rank_seen", "incidents", ["severity_rank", "last_seen_at", "id"])
    op.add_column(
        "dead_letters",
        sa.Column("state", sa.String(length=32), nullable=False, server_default="OPEN"),
    )
    # A dead letter whose incident was already resolved is resolved with it.
    op.execute(
        "UPDATE dead_letters SET state = 'RESOLVED' WHERE incident_id IN "
        "(SELECT id FROM incidents WHERE state = 'RESOLVED')"
    )
    op.add_column("targets", sa.Column("paused_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "reconciliation_runs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("scanned_count", sa.Integer(), nullable=False),
        sa.Column("repaired_count", sa.Integer(), nullable=False),
        sa.Column("error_code", sa.String(length=64), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_reconciliation_runs_started", "reconciliation_runs", ["started_at", "id"])
    op.create_table(
        "repair_actions",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("incident_id", sa.String(length=36), nullable=True),
        sa.Column("reconciliation_run_id", sa.String(length=36), nullable=True),
        sa.Column("action_type", sa.String(length=64), nullable=False),
        sa.Column("entity_type", sa.String(length=50), nullable=False),
        sa.Column("entity_id", sa.String(length=36), nullable=False),
        sa.Column("operation_key", sa.String(length=255), nullable=False),
        sa.Column("before", JSON, nullable=False),
        sa.Column("after", JSON, nullable=False),
        sa.Column("actor_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["incident_id"], ["incidents.id"]),
        sa.ForeignKeyConstraint(["reconciliation_run_id"], ["reconciliation_runs.id"]),
        sa.ForeignKeyConstraint(["actor_id"], ["actors.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("operation_key"),
    )
    op.create_index("ix_repair_actions_incident", "repair_actions", ["incident_id", "created_at"])
    op.create_index(
        "ix_repair_actions_run", "repair_actions", ["reconciliation_run_id", "created_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_repair_actions_run", table_name="repair_actions")
    op.drop_index("ix_repair_actions_incident", table_name="repair_actions")
    op.drop_table("repair_actions")
    op.drop_index("ix_reconciliation_runs_started", table_name="reconciliation_runs")
    op.drop_table("reconciliation_runs")
    op.drop_column("targets", "paused_at")
    op.drop_column("dead_letters", "state")
    op.drop_index("ix_incidents_rank_seen", table_name="incidents")
    op.drop_column("incidents", "severity_rank")
    for name, _ in reversed(INCIDENT_COLUMNS):
        op.drop_column("incidents", name)
