"""Delegations: a reviewer away for a period names who takes the tasks offered to them."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

import sqlalchemy as sa
from sqlmodel import SQLModel

from signoff.models.base import fk_field, id_field, time_field


class DelegationState(StrEnum):
    """Whether a delegation still stands; stored as ``revoked_at``."""

    STANDING = "STANDING"
    REVOKED = "REVOKED"


class Delegation(SQLModel, table=True):
    __tablename__ = "delegations"
    __table_args__ = (sa.Index("ix_delegations_actor", "actor_id", "ends_at"),)

    id: str = id_field()
    actor_id: str = fk_field("actors.id", index=False)  # the one away
    delegate_id: str = fk_field("actors.id", index=False)
    starts_at: datetime = time_field()
    ends_at: datetime = time_field()
    created_at: datetime = time_field(default_now=True)
    # Set when the reviewer clears it, or names another delegate.
    revoked_at: datetime | None = time_field(nullable=True)
