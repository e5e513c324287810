"""Proposal revisions: what each amendment changed, by whom and why."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from signoff.models.base import fk_field, id_field, json_field, time_field


class ProposalRevision(SQLModel, table=True):
    """One revision of a proposal's payload. Revision 1 (as proposed) is written when the
    first amendment is, so a proposal never amended has no rows."""

    __tablename__ = "proposal_revisions"
    __table_args__ = (
        sa.UniqueConstraint("proposal_id", "revision", name="uq_proposal_revisions_revision"),
    )

    id: str = id_field()
    proposal_id: str = fk_field("proposals.id", index=False)
    revision: int
    payload: dict[str, Any] = json_field(default={})
    payload_digest: str = Field(sa_column=sa.Column(sa.String(71), nullable=False))
    # RFC 6902 operations from the previous revision's payload to this one ([] for 1).
    diff: list[dict[str, Any]] = json_field(default=[])
    amended_by_id: str | None = fk_field("actors.id", nullable=True, index=False)
    reason: str | None = Field(default=None, sa_column=sa.Column(sa.Text, nullable=True))
    created_at: datetime = time_field(default_now=True)
