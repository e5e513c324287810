"""Approvals: one reviewer's decision on one proposal."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from signoff.models.actor import PERSON_MAX_CHARS
from signoff.models.base import enum_field, fk_field, id_field, time_field


class Decision(StrEnum):
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"


class Approval(SQLModel, table=True):
    __tablename__ = "approvals"
    # Each reviewer decides each revision of a proposal at most once, enforced by the
    # database; an amendment voids the decisions of earlier revisions.
    __table_args__ = (
        sa.UniqueConstraint(
            "proposal_id", "revision", "approver_id", name="uq_approvals_reviewer_revision"
        ),
        # And each person once, whichever of their linked actors decides.
        sa.Index("uq_approvals_person_revision", "proposal_id", "revision", "person", unique=True),
    )

    id: str = id_field()
    proposal_id: str = fk_field("proposals.id")
    approver_id: str = fk_field("actors.id", index=False)
    # The approver's person key when deciding (``signoff.models.actor.person_of``).
    person: str = Field(sa_column=sa.Column(sa.String(PERSON_MAX_CHARS), nullable=False))
    decision: Decision = enum_field()
    payload_digest: str = Field(sa_column=sa.Column(sa.String(71), nullable=False))
    revision: int = Field(
        default=1, sa_column=sa.Column(sa.Integer, nullable=False, server_default="1")
    )
    reason: str | None = Field(default=None, sa_column=sa.Column(sa.Text, nullable=True))
    created_at: datetime = time_field(default_now=True)
