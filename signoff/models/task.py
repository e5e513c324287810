"""Human tasks: units of human work waiting in a queue."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from signoff.models.base import (
    VERSIONED,
    by_value,
    enum_field,
    fk_field,
    id_field,
    json_field,
    time_field,
    version_field,
)


class TaskState(StrEnum):
    OPEN = "OPEN"
    CLAIMED = "CLAIMED"
    COMPLETED = "COMPLETED"
    EXPIRED = "EXPIRED"
    CANCELLED = "CANCELLED"


_TASK_STATES = by_value(TaskState)

APPROVAL_KIND = "APPROVAL"

# Completing an approval task decides its proposal: the response names the digest the
# reviewer saw, as ``decideProposal`` does (docs/design.md section 4.4).
APPROVAL_RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {"enum": ["APPROVED", "REJECTED"]},
        "payloadDigest": {"type": "string", "minLength": 1, "maxLength": 100},
        "reason": {"type": "string", "minLength": 3, "maxLength": 2000},
    },
    "required": ["decision", "payloadDigest"],
    "additionalProperties": False,
}


class HumanTask(SQLModel, table=True):
    __tablename__ = "human_tasks"
    __table_args__ = (
        # The queue order: priority first, then due time, then age.
        sa.Index("ix_tasks_queue_order", "queue_id", "state", "priority", "due_at", "created_at"),
        sa.Index("ix_tasks_order", "priority", "due_at", "created_at", "id"),
        sa.Index("ix_tasks_next_reminder", "next_reminder_at"),
    )
    __mapper_args__ = VERSIONED

    id: str = id_field()
    queue_id: str = fk_field("queues.id", index=False)
    kind: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    state: TaskState = enum_field(TaskState.OPEN)
    # Bumped by every update; change events carry it, so readers can order states.
    version: int = version_field()
    title: str = Field(sa_column=sa.Column(sa.String(500), nullable=False))
    context: dict[str, Any] = json_field(default={})
    response_schema: dict[str, Any] = json_field(default={})
    response: dict[str, Any] | None = json_field(nullable=True)
    priority: int = 0
    due_at: datetime = time_field()
    assignee_id: str | None = fk_field("actors.id", nullable=True, index=False)
    claim_expires_at: datetime | None = time_field(nullable=True)
    proposal_id: str | None = Field(
        default=None,
        sa_column=sa.Column(
            sa.String(36), sa.ForeignKey("proposals.id"), nullable=True, unique=True
        ),
    )
    created_by_id: str = fk_field("actors.id", index=False)
    completed_by_id: str | None = fk_field("actors.id", nullable=True, index=False)
    completed_at: datetime | None = time_field(nullable=True)
    # Reminders (docs/design.md section 5.4): when the time to ``due_at`` began (creation,
    # or the last escalation; ``None``: ``created_at``), how many of the queue's reminders
    # were sent since, and when the next one is due (``None``: none left).
    due_from: datetime | None = time_field(nullable=True)
    reminders_sent: int = Field(
        default=0, sa_column=sa.Column(sa.Integer, nullable=False, server_default="0")
    )
    next_reminder_at: datetime | None = time_field(nullable=True)
    created_at: datetime = time_field(default_now=True)
    updated_at: datetime = time_field(default_now=True)


def workable_by(
    actor_id: str | sa.ColumnElement[Any], now: datetime | sa.ColumnElement[Any]
) -> Any:
    """SQL: the task is open, held by ``actor_id``, or held by someone whose lease lapsed."""
    columns = HumanTask.__table__.c  # type: ignore[attr-defined]
    return sa.or_(
        columns.state == TaskState.OPEN.value,
        sa.and_(
            columns.state == TaskState.CLAIMED.value,
            sa.or_(columns.assignee_id == actor_id, columns.claim_expires_at <= now),
        ),
    )


def claim_lapsed(task: HumanTask, now: datetime) -> bool:
    return (
        task.state == TaskState.CLAIMED
        and task.claim_expires_at is not None
        and task.claim_expires_at <= now
    )


def effective_state(task: HumanTask, now: datetime) -> TaskState:
    """A claim whose lease has lapsed leaves the task open, whether or not a sweep ran yet."""
    return TaskState.OPEN if claim_lapsed(task, now) else _TASK_STATES[task.state]
