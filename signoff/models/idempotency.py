"""Idempotency records: what a keyed mutation returned the first time."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from signoff.models.base import fk_field, id_field, json_field, time_field


class IdempotencyRecord(SQLModel, table=True):
    __tablename__ = "idempotency_records"
    __table_args__ = (
        sa.UniqueConstraint("actor_id", "operation", "key", name="uq_idempotency_key"),
    )

    id: str = id_field()
    actor_id: str = fk_field("actors.id", index=False)
    operation: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    key: str = Field(sa_column=sa.Column(sa.String(200), nullable=False))
    request_digest: str = Field(sa_column=sa.Column(sa.String(71), nullable=False))
    result: dict[str, Any] = json_field(default={})
    created_at: datetime = time_field(default_now=True)
