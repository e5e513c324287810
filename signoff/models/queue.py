"""Queues: where human tasks wait."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from signoff.constants import QUEUE_CLAIM_TTL_DEFAULT_SECONDS, QUEUE_DUE_DEFAULT_SECONDS
from signoff.models.base import id_field, json_field, time_field


class Queue(SQLModel, table=True):
    __tablename__ = "queues"

    id: str = id_field()
    slug: str = Field(sa_column=sa.Column(sa.String(64), nullable=False, unique=True))
    name: str = Field(sa_column=sa.Column(sa.String(200), nullable=False))
    claim_ttl_seconds: int = QUEUE_CLAIM_TTL_DEFAULT_SECONDS
    default_due_seconds: int = QUEUE_DUE_DEFAULT_SECONDS
    # Reminders (docs/design.md section 5.4): percentages of each task's time to its due
    # time at which a ``task.due_soon`` event is sent, ascending (e.g. ``[50, 90]``).
    reminder_percents: list[int] = json_field(default=[])
    created_at: datetime = time_field(default_now=True)
