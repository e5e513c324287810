"""Dead letters and the incidents they open: work that exhausted its retries."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from signoff.models.base import (
    VERSIONED,
    enum_field,
    fk_field,
    id_field,
    json_field,
    time_field,
    version_field,
)


class IncidentState(StrEnum):
    OPEN = "OPEN"
    ACKNOWLEDGED = "ACKNOWLEDGED"
    RESOLVED = "RESOLVED"


class Severity(StrEnum):
    """Most urgent first; lists order by ``SEVERITY_RANK``."""

    CRITICAL = "CRITICAL"
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


SEVERITY_RANK = {severity: rank for rank, severity in enumerate(Severity)}


class DeadLetterState(StrEnum):
    OPEN = "OPEN"  # waiting for an operator
    ACKNOWLEDGED = "ACKNOWLEDGED"  # an operator took it up (retried, or looking at it)
    RESOLVED = "RESOLVED"  # its incident was resolved


class Incident(SQLModel, table=True):
    """One problem, however often it recurs: keyed by ``fingerprint``, counted, re-opened."""

    __tablename__ = "incidents"
    __table_args__ = (
        sa.Index("ix_incidents_state_seen", "state", "last_seen_at", "id"),
        sa.Index("ix_incidents_rank_seen", "severity_rank", "last_seen_at", "id"),
    )
    __mapper_args__ = VERSIONED

    id: str = id_field()
    fingerprint: str = Field(sa_column=sa.Column(sa.String(255), nullable=False, unique=True))
    kind: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    severity: str = Field(sa_column=sa.Column(sa.String(16), nullable=False))
    # ``SEVERITY_RANK[severity]``, written with it: lists order most severe first.
    severity_rank: int = Field(
        default=1, sa_column=sa.Column(sa.Integer, nullable=False, server_default="1")
    )
    state: IncidentState = enum_field(IncidentState.OPEN)
    # Bumped by every update (the upsert sets it itself); change events carry it.
    version: int = version_field()
    title: str = Field(sa_column=sa.Column(sa.String(500), nullable=False))
    entity_type: str = Field(sa_column=sa.Column(sa.String(50), nullable=False))
    entity_id: str = Field(sa_column=sa.Column(sa.String(36), nullable=False))
    occurrence_count: int = 1
    last_error_code: str | None = Field(
        default=None, sa_column=sa.Column(sa.String(64), nullable=True)
    )
    first_seen_at: datetime = time_field()
    last_seen_at: datetime = time_field()
    acknowledged_at: datetime | None = time_field(nullable=True)
    resolved_at: datetime | None = time_field(nullable=True)
    # What a person or an integration said about it (``openIncident``, ``resolveIncident``).
    summary: str | None = Field(default=None, sa_column=sa.Column(sa.Text, nullable=True))
    # Actor ids, kept without foreign keys: SQLite cannot add one to an existing table
    # without copying it, and the audit log is the record of who did what.
    opened_by_id: str | None = Field(default=None, sa_column=sa.Column(sa.String(36)))
    acknowledged_by_id: str | None = Field(default=None, sa_column=sa.Column(sa.String(36)))
    resolved_by_id: str | None = Field(default=None, sa_column=sa.Column(sa.String(36)))
    resolution_code: str | None = Field(
        default=None, sa_column=sa.Column(sa.String(64), nullable=True)
    )
    resolution_summary: str | None = Field(
        default=None, sa_column=sa.Column(sa.Text, nullable=True)
    )


class DeadLetter(SQLModel, table=True):
    """One occurrence of a job giving up: which job, why, and the incident it counts towards."""

    __tablename__ = "dead_letters"

    id: str = id_field()
    incident_id: str = fk_field("incidents.id")
    job_type: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    job_id: str = Field(sa_column=sa.Column(sa.String(36), nullable=False))
    proposal_id: str | None = fk_field("proposals.id", nullable=True)
    error_code: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    attempt_count: int
    state: DeadLetterState = enum_field(DeadLetterState.OPEN)
    details: dict[str, Any] = json_field(default={})
    created_at: datetime = time_field(default_now=True)


class RepairAction(SQLModel, table=True):
    """One repair, by an operator (``retryIncident``) or a reconciliation run: what it
    changed, from what to what. ``operation_key`` is unique: a repair is made once."""

    __tablename__ = "repair_actions"
    __table_args__ = (
        sa.Index("ix_repair_actions_incident", "incident_id", "created_at"),
        sa.Index("ix_repair_actions_run", "reconciliation_run_id", "created_at"),
    )

    id: str = id_field()
    incident_id: str | None = fk_field("incidents.id", nullable=True, index=False)
    reconciliation_run_id: str | None = fk_field(
        "reconciliation_runs.id", nullable=True, index=False
    )
    action_type: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    entity_type: str = Field(sa_column=sa.Column(sa.String(50), nullable=False))
    entity_id: str = Field(sa_column=sa.Column(sa.String(36), nullable=False))
    operation_key: str = Field(sa_column=sa.Column(sa.String(255), nullable=False, unique=True))
    before: dict[str, Any] = json_field(default={})
    after: dict[str, Any] = json_field(default={})
    actor_id: str | None = fk_field("actors.id", nullable=True, index=False)
    created_at: datetime = time_field(default_now=True)


class ReconciliationState(StrEnum):
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    PARTIAL = "PARTIAL"  # some repairs failed, some were made
    FAILED = "FAILED"


class ReconciliationRun(SQLModel, table=True):
    """One pass of the periodic reconciliation: what it looked at and what it repaired."""

    __tablename__ = "reconciliation_runs"
    __table_args__ = (sa.Index("ix_reconciliation_runs_started", "started_at", "id"),)

    id: str = id_field()
    state: ReconciliationState = enum_field(ReconciliationState.RUNNING)
    scanned_count: int = 0
    repaired_count: int = 0
    error_code: str | None = Field(default=None, sa_column=sa.Column(sa.String(64), nullable=True))
    started_at: datetime = time_field(default_now=True)
    finished_at: datetime | None = time_field(nullable=True)
