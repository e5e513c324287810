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
    )

    id: str = id_field()
    action: str = Field(sa_column=sa.Column(sa.String(100), nullable=False))
    actor_id: str | None = fk_field("actors.id", nullable=True, index=False)
    target_type: str = Field(sa_column=sa.Column(sa.String(50), nullable=False))
    target_id: str = Field(sa_column=sa.Column(sa.String(36), nullable=False))
    details: dict[str, Any] = json_field(default={})
    created_at: datetime = time_field(default_now=True)
