"""notification links: a notification channel may be addressed to one reviewer and carry
single-use approval links for them; each link made for a notification names it

Revision ID: 0012_notification_links
Revises: 0011_deadlines_reach
Create Date: 2026-12-01 22:05:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_notification_links"
down_revision = "0011_deadlines_reach"
branch_labels = None
depends_on = None

REFERENCES = (
    ("notification_channels", "reviewer_id", "actors"),
    ("approval_links", "notification_id", "notifications"),
)


def upgrade() -> None:
    # Plain ADD COLUMN (no batch): see 0007. Alembic would add each foreign key as a
    # separate constraint, which SQLite cannot ALTER in; SQLite takes it in the column.
    for table, column, target in REFERENCES:
        if op.get_bind().dialect.name == "sqlite":
            op.execute(
                f"ALTER TABLE {table} ADD COLUMN {column} VARCHAR(36) REFERENCES {target} (id)"
            )
        else:
            op.add_column(
                table,
                sa.Column(column, sa.String(length=36), sa.ForeignKey(f"{target}.id")),
            )
    op.add_column(
        "notification_channels", sa.Column("link_ttl_seconds", sa.Integer(), nullable=True)
    )
    op.create_index("ix_approval_links_notification_id", "approval_links", ["notification_id"])


def downgrade() -> None:
    op.drop_index("ix_approval_links_notification_id", table_name="approval_links")
    op.drop_column("approval_links", "notification_id")
    op.drop_column("notification_channels", "link_ttl_seconds")
    op.drop_column("notification_channels", "reviewer_id")
