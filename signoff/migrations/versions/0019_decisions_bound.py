"""decisions bound to what was seen: actors gain a person key (linked actors are one
person), approvals record the approver's person and are unique per person and revision,
targets say whether an amender may approve their own revision, and approval tasks' stored
response schema asks for the digest the reviewer saw

Revision ID: 0019_decisions_bound
Revises: 0018_audit_unstamped
Create Date: 2026-12-06 11:30:00.000000
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0019_decisions_bound"
down_revision = "0018_audit_unstamped"
branch_labels = None
depends_on = None

ACTORS = sa.table("actors", sa.column("id", sa.String), sa.column("person", sa.String))
IDENTITIES = sa.table(
    "oidc_identities",
    sa.column("actor_id", sa.String),
    sa.column("issuer", sa.String),
    sa.column("subject", sa.String),
)
APPROVALS = sa.table(
    "approvals", sa.column("approver_id", sa.String), sa.column("person", sa.String)
)
TASKS = sa.table(
    "human_tasks",
    sa.column("kind", sa.String),
    sa.column("response_schema", sa.JSON().with_variant(postgresql.JSONB(), "postgresql")),
)
# As ``signoff.models.task.APPROVAL_RESPONSE_SCHEMA`` stood at this revision.
RESPONSE_SCHEMA = {
    "type": "object",
    "properties": {
        "decision": {"enum": ["APPROVED", "REJECTED"]},
        "payloadDigest": {"type": "string", "minLength": 1, "maxLength": 100},
        "reason": {"type": "string", "minLength": 3, "maxLength": 2000},
    },
    "required": ["decision", "payloadDigest"],
    "additionalProperties": False,
}
OLD_RESPONSE_SCHEMA = {
    "type": "object",
    "properties": {
        "decision": {"enum": ["APPROVED", "REJECTED"]},
        "reason": {"type": "string", "minLength": 3, "maxLength": 2000},
    },
    "required": ["decision"],
    "additionalProperties": False,
}


def upgrade() -> None:
    # Plain ADD COLUMN (no batch), as in 0016: a batch would copy the tables on SQLite.
    op.add_column("actors", sa.Column("person", sa.String(length=80), nullable=True))
    op.create_index("ix_actors_person", "actors", ["person"])
    op.add_column(
        "targets",
        sa.Column("amender_may_approve", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column(
        "approvals",
        sa.Column("person", sa.String(length=80), nullable=False, server_default=""),
    )
    bind = op.get_bind()
    bind.execute(sa.update(APPROVALS).values(person="actor:" + APPROVALS.c.approver_id))
    if bind.dialect.name == "postgresql":
        op.alter_column("approvals", "person", server_default=None)
    op.create_index(
        "uq_approvals_person_revision",
        "approvals",
        ["proposal_id", "revision", "person"],
        unique=True,
    )
    _link_signed_in_actors(bind)
    _set_response_schema(bind, RESPONSE_SCHEMA)


def _link_signed_in_actors(bind: sa.Connection) -> None:
    """An actor made by sign-in stands for the person its issuer and subject name."""
    for row in bind.execute(sa.select(IDENTITIES)).all():
        key = "oidc:" + hashlib.sha256(f"{row.issuer} {row.subject}".encode()).hexdigest()
        bind.execute(sa.update(ACTORS).where(ACTORS.c.id == row.actor_id).values(person=key))


def _set_response_schema(bind: sa.Connection, schema: dict[str, object]) -> None:
    bind.execute(sa.update(TASKS).where(TASKS.c.kind == "APPROVAL").values(response_schema=schema))


def downgrade() -> None:
    _set_response_schema(op.get_bind(), OLD_RESPONSE_SCHEMA)
    op.drop_index("uq_approvals_person_revision", table_name="approvals")
    op.drop_index("ix_actors_person", table_name="actors")
    # Plain DROP COLUMN (SQLite 3.35 on): a batch would rebuild tables others refer to.
    op.drop_column("approvals", "person")
    op.drop_column("targets", "amender_may_approve")
    op.drop_column("actors", "person")
