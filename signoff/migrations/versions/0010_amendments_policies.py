"""amendments, bulk decisions and approval policies: proposal revisions, approvals per
revision, and the target settings behind them

Revision ID: 0010_amendments_policies
Revises: 0009
Create Date: 2026-12-01 19:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0010_amendments_policies"
down_revision = "0009"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    # Plain ADD COLUMN (no batch) where it suffices: see 0007.
    op.add_column(
        "proposals", sa.Column("revision", sa.Integer(), nullable=False, server_default="1")
    )
    op.add_column(
        "proposals",
        sa.Column("awaiting_proposer", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column("proposals", sa.Column("policy_rule", JSON, nullable=True))
    op.add_column(
        "targets", sa.Column("amendable", sa.Boolean(), nullable=False, server_default=sa.true())
    )
    op.add_column(
        "targets",
        sa.Column(
            "amendments_need_proposer", sa.Boolean(), nullable=False, server_default=sa.false()
        ),
    )
    op.add_column("targets", sa.Column("summary_field", sa.String(length=200), nullable=True))
    op.add_column("targets", sa.Column("approval_policy", JSON, nullable=True))
    op.add_column(
        "approvals", sa.Column("revision", sa.Integer(), nullable=False, server_default="1")
    )
    # A reviewer decides once per revision. No table references approvals, so SQLite's
    # batch copy of the table is safe here.
    with op.batch_alter_table("approvals") as batch:
        batch.drop_constraint("uq_approvals_reviewer", type_="unique")
        batch.create_unique_constraint(
            "uq_approvals_reviewer_revision", ["proposal_id", "revision", "approver_id"]
        )
    op.create_table(
        "proposal_revisions",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("proposal_id", sa.String(length=36), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("payload", JSON, nullable=False),
        sa.Column("payload_digest", sa.String(length=71), nullable=False),
        sa.Column("diff", JSON, nullable=False),
        sa.Column("amended_by_id", sa.String(length=36), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.ForeignKeyConstraint(["proposal_id"], ["proposals.id"]),
        sa.ForeignKeyConstraint(["amended_by_id"], ["actors.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("proposal_id", "revision", name="uq_proposal_revisions_revision"),
    )


def downgrade() -> None:
    op.drop_table("proposal_revisions")
    # Decisions on amended revisions cannot fit the one-decision-per-reviewer constraint.
    op.execute("DELETE FROM approvals WHERE revision > 1")
    with op.batch_alter_table("approvals") as batch:
        batch.drop_constraint("uq_approvals_reviewer_revision", type_="unique")
        batch.create_unique_constraint("uq_approvals_reviewer", ["proposal_id", "approver_id"])
    op.drop_column("approvals", "revision")
    for name in ("approval_policy", "summary_field", "amendments_need_proposer", "amendable"):
        op.drop_column("targets", name)
    for name in ("policy_rule", "awaiting_proposer", "revision"):
        op.drop_column("proposals", name)
