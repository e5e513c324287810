"""oidc email: the hash of the verified email address each provider identity last carried,
by which a Slack user without an explicit link is matched to their actor

Revision ID: 0024_oidc_email
Revises: 0023_slack_email
Create Date: 2026-12-06 14:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024_oidc_email"
down_revision = "0023_slack_email"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (no batch): see 0007. Filled at each identity's next sign-in.
    op.add_column("oidc_identities", sa.Column("email_hash", sa.String(64), nullable=True))
    op.create_index("ix_oidc_identities_email_hash", "oidc_identities", ["email_hash"])


def downgrade() -> None:
    op.drop_index("ix_oidc_identities_email_hash", table_name="oidc_identities")
    op.drop_column("oidc_identities", "email_hash")
