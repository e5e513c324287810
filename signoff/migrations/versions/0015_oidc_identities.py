"""oidc identities and console sessions: an actor signed in through an OpenID provider
is found by its issuer and subject; a console session holds its sealed refresh token

Revision ID: 0015_oidc_identities
Revises: 0014_channel_switches
Create Date: 2026-12-05 23:50:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_oidc_identities"
down_revision = "0014_channel_switches"
branch_labels = None
depends_on = None

TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "oidc_identities",
        sa.Column("id", sa.String(length=36), primary_key=True),
        sa.Column("actor_id", sa.String(length=36), sa.ForeignKey("actors.id"), nullable=False),
        sa.Column("issuer", sa.String(length=2048), nullable=False),
        sa.Column("subject", sa.String(length=255), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.UniqueConstraint("issuer", "subject", name="uq_oidc_identities_subject"),
    )
    op.create_index("ix_oidc_identities_actor_id", "oidc_identities", ["actor_id"])
    op.create_table(
        "console_sessions",
        sa.Column("id", sa.String(length=36), primary_key=True),
        sa.Column("actor_id", sa.String(length=36), sa.ForeignKey("actors.id"), nullable=False),
        sa.Column(
            "identity_id",
            sa.String(length=36),
            sa.ForeignKey("oidc_identities.id"),
            nullable=False,
        ),
        sa.Column("token_hash", sa.String(length=64), nullable=False, unique=True),
        sa.Column("refresh_token", sa.Text(), nullable=True),
        sa.Column("id_token", sa.Text(), nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("refreshed_at", TIME, nullable=False),
        sa.Column("ended_at", TIME, nullable=True),
    )
    op.create_index("ix_console_sessions_actor_id", "console_sessions", ["actor_id"])
    op.create_index("ix_console_sessions_identity_id", "console_sessions", ["identity_id"])


def downgrade() -> None:
    op.drop_table("console_sessions")
    op.drop_table("oidc_identities")
