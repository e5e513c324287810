"""delivery lease generation: a fencing number that never repeats for one proposal;
operation keys recorded like every other idempotency key

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 02:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Existing proposals start from their attempt count: no lease held before this
    # migration can match a generation handed out after it.
    with op.batch_alter_table("proposals", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("delivery_lease", sa.Integer(), nullable=False, server_default="0")
        )
    op.execute("UPDATE proposals SET delivery_lease = delivery_attempt_count")
    # proposeAction now keeps its operation keys where every keyed mutation keeps its
    # keys; the proposals made before carry theirs, with the same request digest. The
    # record's id is the proposal's (both are UUIDs, and each proposal has one record).
    result = (
        "json_build_object('proposal_id', id)::jsonb"
        if op.get_bind().dialect.name == "postgresql"
        else "json_object('proposal_id', id)"
    )
    op.execute(
        "INSERT INTO idempotency_records "
        "(id, actor_id, operation, key, request_digest, result, created_at) "
        f"SELECT id, proposed_by_id, 'proposeAction', operation_key, request_digest, {result}, "
        "created_at FROM proposals WHERE compensates_proposal_id IS NULL"
    )


def downgrade() -> None:
    op.execute("DELETE FROM idempotency_records WHERE operation = 'proposeAction'")
    with op.batch_alter_table("proposals", schema=None) as batch_op:
        batch_op.drop_column("delivery_lease")
