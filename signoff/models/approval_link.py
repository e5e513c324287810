"""Single-use approval links: one reviewer, one digest, one decision, stored hashed."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from signoff.models.base import VERSIONED, enum_field, fk_field, id_field, time_field, version_field


class ApprovalLinkState(StrEnum):
    ACTIVE = "ACTIVE"  # usable until ``expires_at``
    USED = "USED"  # decided once; never again
    REVOKED = "REVOKED"


class ApprovalLink(SQLModel, table=True):
    __tablename__ = "approval_links"
    __mapper_args__ = VERSIONED

    id: str = id_field()
    # SHA-256 of the token in the URL; the token itself is shown once and never stored.
    token_hash: str = Field(sa_column=sa.Column(sa.String(64), nullable=False, unique=True))
    task_id: str = fk_field("human_tasks.id")
    proposal_id: str = fk_field("proposals.id", index=False)
    reviewer_id: str = fk_field("actors.id", index=False)
    payload_digest: str = Field(sa_column=sa.Column(sa.String(71), nullable=False))
    state: ApprovalLinkState = enum_field(ApprovalLinkState.ACTIVE)
    version: int = version_field()
    expires_at: datetime = time_field()
    # Links sent in a notification: ``created_by_id`` is whoever added the channel, and
    # the notification is named so that a resend revokes the link sent before.
    created_by_id: str = fk_field("actors.id", index=False)
    notification_id: str | None = fk_field("notifications.id", nullable=True)
    created_at: datetime = time_field(default_now=True)
    used_at: datetime | None = time_field(nullable=True)
