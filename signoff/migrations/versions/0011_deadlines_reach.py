"""deadlines, reminders, delegation, notifications: each target's deadline policy, copied
onto its proposals; each queue's reminder offsets and each task's reminder schedule;
delegations; queue notification channels and their outbox; single-use approval links

Revision ID: 0011_deadlines_reach
Revises: 0010_amendments_policies
Create Date: 2026-12-01 19:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0011_deadlines_reach"
down_revision = "0010_amendments_policies"
branch_labels = None
depends_on = None

TIME = sa.DateTime(timezone=True)
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
    op.add_column(
        "queues", sa.Column("reminder_percents", JSON, nullable=False, server_default="[]")
    )
    op.add_column("human_tasks", sa.Column("due_from", TIME, nullable=True))
    op.add_column(
        "human_tasks",
        sa.Column("reminders_sent", sa.Integer(), nullable=False, server_default="0"),
    )
    op.add_column("human_tasks", sa.Column("next_reminder_at", TIME, nullable=True))
    op.create_index("ix_tasks_next_reminder", "human_tasks", ["next_reminder_at"])
    op.create_table(
        "delegations",
        sa.Column("id", sa.String(length=36), primary_key=True),
        sa.Column("actor_id", sa.String(length=36), sa.ForeignKey("actors.id"), nullable=False),
        sa.Column("delegate_id", sa.String(length=36), sa.ForeignKey("actors.id"), nullable=False),
        sa.Column("starts_at", TIME, nullable=False),
        sa.Column("ends_at", TIME, nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("revoked_at", TIME, nullable=True),
    )
    op.create_index("ix_delegations_actor", "delegations", ["actor_id", "ends_at"])
    op.create_table(
        "notification_channels",
        sa.Column("id", sa.String(length=36), primary_key=True),
        sa.Column("queue_id", sa.String(length=36), sa.ForeignKey("queues.id"), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("signing_secret", sa.String(length=128), nullable=True),
        sa.Column("include_payload", sa.Boolean(), nullable=False),
        sa.Column(
            "created_by_id", sa.String(length=36), sa.ForeignKey("actors.id"), nullable=False
        ),
        sa.Column("created_at", TIME, nullable=False),
    )
    op.create_index("ix_notification_channels_queue_id", "notification_channels", ["queue_id"])
    op.create_table(
        "notifications",
        sa.Column("id", sa.String(length=36), primary_key=True),
        sa.Column(
            "channel_id",
            sa.String(length=36),
            sa.ForeignKey("notification_channels.id"),
            nullable=False,
        ),
        sa.Column("queue_id", sa.String(length=36), sa.ForeignKey("queues.id"), nullable=False),
        sa.Column("task_id", sa.String(length=36), sa.ForeignKey("human_tasks.id"), nullable=False),
        sa.Column("event", sa.String(length=64), nullable=False),
        sa.Column("body", JSON, nullable=False),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False, server_default="1"),
        sa.Column("attempt_count", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", TIME, nullable=True),
        sa.Column("lease_expires_at", TIME, nullable=True),
        sa.Column("last_error_code", sa.String(length=64), nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("sent_at", TIME, nullable=True),
    )
    op.create_index("ix_notifications_channel_id", "notifications", ["channel_id"])
    op.create_index("ix_notifications_due", "notifications", ["state", "next_attempt_at"])
    op.create_table(
        "approval_links",
        sa.Column("id", sa.String(length=36), primary_key=True),
        sa.Column("token_hash", sa.String(length=64), nullable=False, unique=True),
        sa.Column("task_id", sa.String(length=36), sa.ForeignKey("human_tasks.id"), nullable=False),
        sa.Column(
            "proposal_id", sa.String(length=36), sa.ForeignKey("proposals.id"), nullable=False
        ),
        sa.Column("reviewer_id", sa.String(length=36), sa.ForeignKey("actors.id"), nullable=False),
        sa.Column("payload_digest", sa.String(length=71), nullable=False),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False, server_default="1"),
        sa.Column("expires_at", TIME, nullable=False),
        sa.Column(
            "created_by_id", sa.String(length=36), sa.ForeignKey("actors.id"), nullable=False
        ),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("used_at", TIME, nullable=True),
    )
    op.create_index("ix_approval_links_task_id", "approval_links", ["task_id"])


def downgrade() -> None:
    op.drop_table("approval_links")
    op.drop_table("notifications")
    op.drop_table("notification_channels")
    op.drop_index("ix_delegations_actor", table_name="delegations")
    op.drop_table("delegations")
    op.drop_index("ix_tasks_next_reminder", table_name="human_tasks")
    for name in ("next_reminder_at", "reminders_sent", "due_from"):
        op.drop_column("human_tasks", name)
    op.drop_column("queues", "reminder_percents")
    op.drop_column("proposals", "escalation_level")
    for table in POLICY_TABLES:
        for name in ("escalation_chain", "deadline_reason", "deadline_action"):
            op.drop_column(table, name)
