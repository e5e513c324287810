"""agent execution: targets without a url, whose approved proposals the agent executes
itself, and who took a proposal's one execution right (docs/design.md section 4.21)

Revision ID: 0022_agent_execution
Revises: 0020_attempt_started
Create Date: 2026-12-06 11:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022_agent_execution"
down_revision = "0020_attempt_started"
branch_labels = None
depends_on = None


def upgrade() -> None:
    _url_nullable(True)
    # Plain ADD COLUMN (no batch): see 0007.
    op.add_column(
        "proposals",
        sa.Column("agent_executes", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    if op.get_bind().dialect.name == "sqlite":
        # SQLite takes a reference in ADD COLUMN, but alembic would add it as a constraint.
        op.execute(
            "ALTER TABLE proposals ADD COLUMN executed_by_id VARCHAR(36) REFERENCES actors (id)"
        )
    else:
        op.add_column(
            "proposals",
            sa.Column("executed_by_id", sa.String(36), sa.ForeignKey("actors.id"), nullable=True),
        )
    op.add_column("proposals", sa.Column("executor", sa.String(200), nullable=True))
    op.add_column(
        "proposals",
        sa.Column("execution_started_at", sa.DateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    for name in ("execution_started_at", "executor", "executed_by_id", "agent_executes"):
        with op.batch_alter_table("proposals") as batch:
            batch.drop_column(name)
    _url_nullable(False)


def _url_nullable(nullable: bool) -> None:
    """SQLite cannot change NOT NULL in place, and a batch would copy targets, which
    proposals refer to: SQLite's own procedure for dropping (or restoring) a NOT NULL
    constraint edits the stored definition, and needs no copy
    (https://www.sqlite.org/lang_altertable.html, "making other kinds of table schema
    changes")."""
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        op.alter_column("targets", "url", existing_type=sa.String(2048), nullable=nullable)
        return
    before, after = (NOT_NULL, NULLABLE) if nullable else (NULLABLE, NOT_NULL)
    version = bind.exec_driver_sql("PRAGMA schema_version").scalar_one()
    bind.exec_driver_sql("PRAGMA writable_schema = ON")
    changed = bind.execute(
        sa.text(
            "UPDATE sqlite_master SET sql = replace(sql, :before, :after) "
            "WHERE type = 'table' AND name = 'targets'"
        ),
        {"before": before, "after": after},
    ).rowcount
    bind.exec_driver_sql(f"PRAGMA schema_version = {int(version) + 1}")
    bind.exec_driver_sql("PRAGMA writable_schema = OFF")
    assert changed == 1


NOT_NULL = "url VARCHAR(2048) NOT NULL"
NULLABLE = "url VARCHAR(2048)"
