"""The change feed: one row per state change, written in the transaction that made it.

A row is inserted with ``cursor`` NULL. The sequencer (``signoff.events.feed``)
stamps cursors after commit, in commit order, and records the last one it handed
out in ``ChangeFeedState``; see ``stamp_pending`` for why that order is safe.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from signoff.models.base import id_field, json_field, time_field


class ChangeKind(StrEnum):
    QUEUE_CREATED = "queue.created"
    QUEUE_MEMBER_ADDED = "queue.member_added"
    QUEUE_MEMBER_REMOVED = "queue.member_removed"
    TARGET_REGISTERED = "target.registered"
    TARGET_RETIRED = "target.retired"
    PROPOSAL_PROPOSED = "proposal.proposed"
    PROPOSAL_APPROVAL_ADDED = "proposal.approval_added"
    PROPOSAL_APPROVED = "proposal.approved"
    PROPOSAL_REJECTED = "proposal.rejected"
    PROPOSAL_DELIVERY_STARTED = "proposal.delivery_started"
    PROPOSAL_ACCEPTED = "proposal.accepted"
    PROPOSAL_APPLIED = "proposal.applied"
    PROPOSAL_FAILED = "proposal.failed"
    PROPOSAL_REQUEUED = "proposal.requeued"
    PROPOSAL_LEASE_RELEASED = "proposal.lease_released"
    PROPOSAL_EXPIRED = "proposal.expired"
    PROPOSAL_ESCALATED = "proposal.escalated"
    PROPOSAL_COMPENSATION_REQUIRED = "proposal.compensation_required"
    PROPOSAL_AMENDED = "proposal.amended"
    PROPOSAL_AMENDMENT_ACCEPTED = "proposal.amendment_accepted"
    PROPOSAL_EXECUTION_STARTED = "proposal.execution_started"
    PROPOSAL_EXECUTION_UNKNOWN = "proposal.execution_unknown"
    TASK_CREATED = "task.created"
    TASK_CLAIMED = "task.claimed"
    TASK_RELEASED = "task.released"
    TASK_CLAIM_LAPSED = "task.claim_lapsed"
    TASK_REOPENED = "task.reopened"
    TASK_COMPLETED = "task.completed"
    TASK_EXPIRED = "task.expired"
    TASK_ESCALATED = "task.escalated"
    TASK_DUE_SOON = "task.due_soon"
    TASK_REASSIGNED = "task.reassigned"
    INCIDENT_OPENED = "incident.opened"
    INCIDENT_RECURRED = "incident.recurred"
    INCIDENT_ACKNOWLEDGED = "incident.acknowledged"
    INCIDENT_RETRIED = "incident.retried"
    INCIDENT_RESOLVED = "incident.resolved"
    TARGET_PAUSED = "target.paused"
    TARGET_RESUMED = "target.resumed"
    TARGET_CIRCUIT_OPENED = "target.circuit_opened"
    TARGET_CIRCUIT_CLOSED = "target.circuit_closed"
    TARGET_CIRCUIT_HALF_OPENED = "target.circuit_half_opened"
    TARGET_LIMITS_CHANGED = "target.limits_changed"
    DRAFT_PREPARED = "draft.prepared"
    DRAFT_UPDATED = "draft.updated"
    DRAFT_RESERVED = "draft.reserved"
    DRAFT_DISPATCHED = "draft.dispatched"
    DRAFT_OBSERVED = "draft.observed"
    DRAFT_CANCELLED = "draft.cancelled"
    ACTOR_ROLE_CHANGED = "actor.role_changed"
    ACTOR_DISABLED = "actor.disabled"
    ACTOR_ENABLED = "actor.enabled"
    ACTOR_TOKEN_REVOKED = "actor.token_revoked"


MEMBERSHIP_KINDS = frozenset({ChangeKind.QUEUE_MEMBER_ADDED, ChangeKind.QUEUE_MEMBER_REMOVED})
# Every kind after which a viewer of the actor (``entity_id``) must be read again.
ACCESS_KINDS = MEMBERSHIP_KINDS | {
    ChangeKind.ACTOR_ROLE_CHANGED,
    ChangeKind.ACTOR_DISABLED,
    ChangeKind.ACTOR_ENABLED,
    ChangeKind.ACTOR_TOKEN_REVOKED,
}


class ChangeEvent(SQLModel, table=True):
    __tablename__ = "change_events"
    __table_args__ = (
        sa.Index("ix_change_events_cursor", "cursor", unique=True),
        sa.Index("ix_change_events_published", "published_at"),
        sa.Index("ix_change_events_occurred", "occurred_at"),
        sa.Index("ix_change_events_queue", "queue_id", "cursor"),
        sa.Index("ix_change_events_proposal", "proposal_id", "cursor"),
        sa.Index("ix_change_events_session", "session_key", "cursor"),
    )

    id: str = id_field()
    # Stamped after commit, in commit order; NULL until then.
    cursor: int | None = Field(default=None, sa_column=sa.Column(sa.BigInteger, nullable=True))
    kind: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    entity_type: str = Field(sa_column=sa.Column(sa.String(32), nullable=False))
    entity_id: str = Field(sa_column=sa.Column(sa.String(36), nullable=False))
    # The entity's ``version`` after this change (proposals, tasks, incidents; NULL for
    # unversioned entities): orders one entity's events whatever the writers' clocks.
    entity_version: int | None = Field(default=None, sa_column=sa.Column(sa.Integer, nullable=True))
    # No foreign keys: the feed outlives nothing it describes, and must never block a delete.
    queue_id: str | None = Field(default=None, sa_column=sa.Column(sa.String(36), nullable=True))
    proposal_id: str | None = Field(default=None, sa_column=sa.Column(sa.String(36), nullable=True))
    actor_id: str | None = Field(default=None, sa_column=sa.Column(sa.String(36), nullable=True))
    # Drafts: ``<account id>:<session id>``, what ``draftEvents(sessionId)`` follows.
    session_key: str | None = Field(
        default=None, sa_column=sa.Column(sa.String(240), nullable=True)
    )
    snapshot: dict[str, Any] = json_field(default={})
    occurred_at: datetime = time_field(default_now=True)
    published_at: datetime | None = time_field(nullable=True)


class ChangeFeedState(SQLModel, table=True):
    """One row: the last cursor handed out, the last one retention deleted, and how many
    audit records have a position in the verifiable log."""

    __tablename__ = "change_feed_state"

    id: int = Field(default=1, primary_key=True)
    last_cursor: int = Field(default=0, sa_column=sa.Column(sa.BigInteger, nullable=False))
    pruned_through: int = Field(default=0, sa_column=sa.Column(sa.BigInteger, nullable=False))
    audit_size: int = Field(
        default=0, sa_column=sa.Column(sa.BigInteger, nullable=False, server_default="0")
    )
