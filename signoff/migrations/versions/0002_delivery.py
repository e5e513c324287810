"""delivery: proposal delivery bookkeeping, delivery attempts, incidents and dead letters

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 16:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("proposals", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("delivery_attempt_count", sa.Integer(), nullable=False, server_default="0")
        )
        batch_op.add_column(
            sa.Column("delivery_terminal", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.add_column(sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(
            sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True)
        )
        batch_op.add_column(sa.Column("last_error_code", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("accepted_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("applied_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(
            sa.Column("compensates_proposal_id", sa.String(length=36), nullable=True)
        )
        batch_op.create_foreign_key(
            "fk_proposals_compensates", "proposals", ["compensates_proposal_id"], ["id"]
        )
        batch_op.create_index("ix_proposals_due", ["state", "next_attempt_at"], unique=False)
        batch_op.create_index("ix_proposals_lease", ["state", "lease_expires_at"], unique=False)
    # Work already queued when this migration runs is due now.
    op.execute("UPDATE proposals SET next_attempt_at = updated_at WHERE state = 'QUEUED'")

    op.create_table(
        "delivery_attempts",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("proposal_id", sa.String(length=36), nullable=False),
        sa.Column("attempt_number", sa.Integer(), nullable=False),
        sa.Column("response_class", sa.String(length=32), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error_code", sa.String(length=64), nullable=True),
        sa.Column("request_digest", sa.String(length=71), nullable=False),
        sa.Column("response_digest", sa.String(length=71), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["proposal_id"], ["proposals.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("delivery_attempts", schema=None) as batch_op:
        batch_op.create_index(
            "ix_attempts_proposal", ["proposal_id", "started_at", "id"], unique=False
        )

    op.create_table(
        "incidents",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("fingerprint", sa.String(length=255), nullable=False),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("severity", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("entity_type", sa.String(length=50), nullable=False),
        sa.Column("entity_id", sa.String(length=36), nullable=False),
        sa.Column("occurrence_count", sa.Integer(), nullable=False),
        sa.Column("last_error_code", sa.String(length=64), nullable=True),
        sa.Column("first_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("acknowledged_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("fingerprint"),
    )
    with op.batch_alter_table("incidents", schema=None) as batch_op:
        batch_op.create_index(
            "ix_incidents_state_seen", ["state", "last_seen_at", "id"], unique=False
        )

    op.create_table(
        "dead_letters",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("incident_id", sa.String(length=36), nullable=False),
        sa.Column("job_type", sa.String(length=64), nullable=False),
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("proposal_id", sa.String(length=36), nullable=True),
        sa.Column("error_code", sa.String(length=64), nullable=False),
        sa.Column("attempt_count", sa.Integer(), nullable=False),
        sa.Column("details", JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["incident_id"], ["incidents.id"]),
        sa.ForeignKeyConstraint(["proposal_id"], ["proposals.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("dead_letters", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_dead_letters_incident_id"), ["incident_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_dead_letters_proposal_id"), ["proposal_id"], unique=False
        )


def downgrade() -> None:
    op.drop_table("dead_letters")
    op.drop_table("incidents")
    op.drop_table("delivery_attempts")
    with op.batch_alter_table("proposals", schema=None) as batch_op:
        batch_op.drop_index("ix_proposals_lease")
        batch_op.drop_index("ix_proposals_due")
        batch_op.drop_constraint("fk_proposals_compensates", type_="foreignkey")
        for column in (
            "compensates_proposal_id",
            "applied_at",
            "accepted_at",
            "last_error_code",
            "lease_expires_at",
            "next_attempt_at",
            "delivery_terminal",
            "delivery_attempt_count",
        ):
            batch_op.drop_column(column)
