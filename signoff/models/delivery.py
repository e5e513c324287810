"""Delivery attempts: one row per HTTP request made for a proposal."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from signoff.models.base import enum_field, fk_field, id_field, time_field


class ResponseClass(StrEnum):
    """What a response means for the proposal (docs/design.md section 4.8, "Response classes")."""

    APPLIED = "APPLIED"
    ACCEPTED = "ACCEPTED"
    RETRYABLE = "RETRYABLE"
    TERMINAL = "TERMINAL"
    # No outcome recorded: the request is in flight, or its worker died after the claim
    # (it may have reached the receiver, whose ``webhook-id`` is the proposal's).
    UNKNOWN = "UNKNOWN"


class DeliveryAttempt(SQLModel, table=True):
    """What was sent (as a digest) and what came back; never the secret or the raw body.
    Written when the attempt is claimed (``UNKNOWN``, no finish) and settled by the
    worker holding its ``lease`` once the answer is in."""

    __tablename__ = "delivery_attempts"
    __table_args__ = (sa.Index("ix_attempts_proposal", "proposal_id", "started_at", "id"),)

    id: str = id_field()
    proposal_id: str = fk_field("proposals.id", index=False)
    attempt_number: int
    response_class: ResponseClass = enum_field()
    status_code: int | None = None
    error_code: str | None = Field(default=None, sa_column=sa.Column(sa.String(64), nullable=True))
    request_digest: str = Field(sa_column=sa.Column(sa.String(71), nullable=False))
    response_digest: str | None = Field(
        default=None, sa_column=sa.Column(sa.String(71), nullable=True)
    )
    duration_ms: int | None = None
    started_at: datetime = time_field()
    finished_at: datetime | None = time_field(nullable=True)
    # The proposal's delivery lease generation that made the attempt (its worker's claim).
    lease: int | None = None
