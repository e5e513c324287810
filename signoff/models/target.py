"""Targets: the external endpoints approved actions are delivered to."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from signoff.constants import (
    TARGET_MAX_ATTEMPTS_DEFAULT,
    TARGET_MAX_CONCURRENCY_DEFAULT,
    TARGET_TIMEOUT_DEFAULT_SECONDS,
)
from signoff.models.base import enum_field, fk_field, id_field, json_field, time_field
from signoff.models.deadline import (
    DeadlineAction,
    deadline_action_field,
    deadline_reason_field,
    escalation_chain_field,
)


class ApprovalMode(StrEnum):
    HUMAN = "HUMAN"
    BOUNDED_AUTO = "BOUNDED_AUTO"


class CircuitState(StrEnum):
    """The target's circuit breaker (docs/design.md section 4.16)."""

    CLOSED = "CLOSED"  # deliveries flow
    OPEN = "OPEN"  # deliveries wait, without spending attempts, until the next probe
    HALF_OPEN = "HALF_OPEN"  # one probe is in flight; its outcome closes or reopens


class TargetService(StrEnum):
    """Whether the target takes new proposals; stored as ``retired_at`` (section 3)."""

    ACTIVE = "ACTIVE"
    RETIRED = "RETIRED"  # no new proposals; what was proposed still delivers


class TargetHold(StrEnum):
    """Whether the target's deliveries may start; stored as ``paused_at`` (section 6.5)."""

    FLOWING = "FLOWING"
    PAUSED = "PAUSED"  # its proposals stay QUEUED until it resumes


class Target(SQLModel, table=True):
    __tablename__ = "targets"

    id: str = id_field()
    name: str = Field(sa_column=sa.Column(sa.String(200), nullable=False, unique=True))
    # ``None``: the agent executes its approved proposals itself (docs/design.md section
    # 4.21); Signoff delivers nothing.
    url: str | None = Field(default=None, sa_column=sa.Column(sa.String(2048), nullable=True))
    method: str = "POST"
    input_schema: dict[str, Any] = json_field(default={})
    output_schema: dict[str, Any] | None = json_field(nullable=True)
    approval_mode: ApprovalMode = enum_field(ApprovalMode.HUMAN)
    required_approvals: int = 1
    queue_id: str | None = fk_field("queues.id", nullable=True)
    max_attempts: int = TARGET_MAX_ATTEMPTS_DEFAULT
    timeout_seconds: int = TARGET_TIMEOUT_DEFAULT_SECONDS
    signing_secret: str = Field(sa_column=sa.Column(sa.String(128), nullable=False))
    created_by_id: str = fk_field("actors.id", index=False)
    created_at: datetime = time_field(default_now=True)
    retired_at: datetime | None = time_field(nullable=True)
    # A paused target holds its proposals QUEUED: no attempt is made until it resumes.
    paused_at: datetime | None = time_field(nullable=True)
    # Limits (docs/design.md section 4.15): deliveries in flight at once, and per second
    # (``None``: no rate limit). ``rate_available_at`` is the limiter's state.
    max_concurrency: int = Field(
        default=TARGET_MAX_CONCURRENCY_DEFAULT,
        sa_column=sa.Column(
            sa.Integer, nullable=False, server_default=str(TARGET_MAX_CONCURRENCY_DEFAULT)
        ),
    )
    rate_per_second: float | None = Field(default=None, sa_column=sa.Column(sa.Float))
    rate_available_at: datetime | None = time_field(nullable=True)
    # The circuit breaker (docs/design.md section 4.16).
    circuit_state: CircuitState = enum_field(CircuitState.CLOSED)
    consecutive_failures: int = 0
    last_error: str | None = Field(default=None, sa_column=sa.Column(sa.String(200)))
    last_error_at: datetime | None = time_field(nullable=True)
    circuit_opened_at: datetime | None = time_field(nullable=True)
    circuit_probe_at: datetime | None = time_field(nullable=True)
    # The deadline policy (docs/design.md section 4.20), copied onto each proposal.
    deadline_action: DeadlineAction = deadline_action_field()
    deadline_reason: str | None = deadline_reason_field()
    escalation_chain: list[dict[str, Any]] = escalation_chain_field()

    # Amendments (docs/design.md section 4.17): whether reviewers may amend a proposal, and
    # whether its agent must accept an amendment before the proposal is queued.
    amendable: bool = Field(
        default=True, sa_column=sa.Column(sa.Boolean, nullable=False, server_default=sa.true())
    )
    amendments_need_proposer: bool = Field(
        default=False,
        sa_column=sa.Column(sa.Boolean, nullable=False, server_default=sa.false()),
    )
    # Whether the author of a revision may approve it (four eyes, section 4.4): by default
    # an amender is that revision's proposer, and another person must approve it.
    amender_may_approve: bool = Field(
        default=False,
        sa_column=sa.Column(sa.Boolean, nullable=False, server_default=sa.false()),
    )
    # A numeric top-level payload field that bulk previews add up (section 4.18).
    summary_field: str | None = Field(default=None, sa_column=sa.Column(sa.String(200)))
    # Approval policy (section 4.19): ``{"rules": [...], "default": {...}}``, or none.
    approval_policy: dict[str, Any] | None = json_field(nullable=True)

    @property
    def is_active(self) -> bool:
        return self.retired_at is None

    @property
    def agent_executes(self) -> bool:
        """The agent runs approved actions itself: nothing is delivered."""
        return self.url is None
