"""The append-only audit log."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from signoff.models.base import fk_field, id_field, json_field, time_field


class AuditEvent(SQLModel, table=True):
    __tablename__ = "audit_events"
    __table_args__ = (
        sa.Index("ix_audit_target", "target_type", "target_id", "created_at", "id"),
        sa.Index("ix_audit_created", "created_at", "id"),
        sa.Index("ix_audit_position", "position", unique=True),
        # The records waiting for their position, in the order they get it: the sequencer
        # looks for them at every round, so the look must not grow with the log.
        sa.Index(
            "ix_audit_unstamped",
            "created_at",
            "id",
            postgresql_where=sa.text("position IS NULL"),
            sqlite_where=sa.text("position IS NULL"),
        ),
    )

    id: str = id_field()
    action: str = Field(sa_column=sa.Column(sa.String(100), nullable=False))
    actor_id: str | None = fk_field("actors.id", nullable=True, index=False)
    target_type: str = Field(sa_column=sa.Column(sa.String(50), nullable=False))
    target_id: str = Field(sa_column=sa.Column(sa.String(36), nullable=False))
    details: dict[str, Any] = json_field(default={})
    created_at: datetime = time_field(default_now=True)
    # The record's place in the verifiable log, from 0, stamped in commit order by the
    # feed's sequencer (NULL until then), and the hex SHA-256 of its RFC 9162 leaf: the
    # canonical JSON of the record with its position (docs/design.md section 15).
    position: int | None = Field(default=None, sa_column=sa.Column(sa.BigInteger, nullable=True))
    leaf_hash: str | None = Field(default=None, sa_column=sa.Column(sa.String(64), nullable=True))


class AuditCheckpoint(SQLModel, table=True):
    """A signed tree head of the audit log: its size, root and time, signed with Ed25519
    over ``signoff.evidence.verify.checkpoint_note``; kept, each with the proof that the
    log it covers extends the previous checkpoint's."""

    __tablename__ = "audit_checkpoints"

    size: int = Field(sa_column=sa.Column(sa.BigInteger, primary_key=True, autoincrement=False))
    root: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    # Exactly the text that was signed (ISO 8601, UTC, microseconds).
    issued_at: str = Field(sa_column=sa.Column(sa.String(40), nullable=False))
    signature: str = Field(sa_column=sa.Column(sa.String(100), nullable=False))
    key_id: str = Field(sa_column=sa.Column(sa.String(16), nullable=False))
    previous_size: int | None = Field(
        default=None, sa_column=sa.Column(sa.BigInteger, nullable=True)
    )
    consistency: list[str] = json_field(default=[])
