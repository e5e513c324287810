"""audit log: every audit record gets a position and a leaf hash in a verifiable log, and
signed checkpoints are kept; the log is built over the existing records in their order,
none of them rewritten

Revision ID: 0016_audit_log
Revises: 0014_channel_switches
Create Date: 2026-12-05 23:50:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from signoff.events.auditlog import AUDIT, entry
from signoff.evidence.verify import entry_hash

revision = "0016_audit_log"
down_revision = "0015_oidc_identities"
branch_labels = None
depends_on = None

BATCH = 2000


def upgrade() -> None:
    # Plain ADD COLUMN (no batch), as in 0007: a batch would copy the table on SQLite.
    op.add_column("audit_events", sa.Column("position", sa.BigInteger(), nullable=True))
    op.add_column("audit_events", sa.Column("leaf_hash", sa.String(length=64), nullable=True))
    op.create_index("ix_audit_position", "audit_events", ["position"], unique=True)
    op.add_column(
        "change_feed_state",
        sa.Column("audit_size", sa.BigInteger(), nullable=False, server_default="0"),
    )
    op.create_table(
        "audit_checkpoints",
        sa.Column("size", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("root", sa.String(length=64), nullable=False),
        sa.Column("issued_at", sa.String(length=40), nullable=False),
        sa.Column("signature", sa.String(length=100), nullable=False),
        sa.Column("key_id", sa.String(length=16), nullable=False),
        sa.Column("previous_size", sa.BigInteger(), nullable=True),
        sa.Column(
            "consistency",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("size"),
    )
    _build_log(op.get_bind())


def _build_log(bind: sa.Connection) -> None:
    """Positions for today's records in the order they were written, as the sequencer
    would have given them; each row only gains its position and leaf hash."""
    rows = bind.execute(
        sa.select(
            AUDIT.c.id,
            AUDIT.c.action,
            AUDIT.c.actor_id,
            AUDIT.c.target_type,
            AUDIT.c.target_id,
            AUDIT.c.details,
            AUDIT.c.created_at,
        ).order_by(AUDIT.c.created_at, AUDIT.c.id)
    ).all()
    update = (
        sa.update(AUDIT)
        .where(AUDIT.c.id == sa.bindparam("row_id"))
        .values(position=sa.bindparam("new_position"), leaf_hash=sa.bindparam("new_leaf"))
    )
    for start in range(0, len(rows), BATCH):
        batch = [
            {
                "row_id": row.id,
                "new_position": position,
                "new_leaf": entry_hash(entry(position, row)).hex(),
            }
            for position, row in enumerate(rows[start : start + BATCH], start)
        ]
        bind.execute(update, batch)
    state = sa.table(
        "change_feed_state",
        sa.column("id", sa.Integer()),
        sa.column("last_cursor", sa.BigInteger()),
        sa.column("pruned_through", sa.BigInteger()),
        sa.column("audit_size", sa.BigInteger()),
    )
    if bind.execute(sa.select(state.c.id).where(state.c.id == 1)).first() is None:
        cursor = bind.execute(sa.text("SELECT MAX(cursor) FROM change_events")).scalar()
        bind.execute(
            sa.insert(state).values(
                id=1, last_cursor=cursor or 0, pruned_through=0, audit_size=len(rows)
            )
        )
    else:
        bind.execute(sa.update(state).where(state.c.id == 1).values(audit_size=len(rows)))


def downgrade() -> None:
    op.drop_table("audit_checkpoints")
    with op.batch_alter_table("change_feed_state") as batch_op:
        batch_op.drop_column("audit_size")
    op.drop_index("ix_audit_position", table_name="audit_events")
    with op.batch_alter_table("audit_events") as batch_op:
        batch_op.drop_column("leaf_hash")
        batch_op.drop_column("position")
