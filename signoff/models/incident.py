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


class Incident(SQLModel, table=True):
    """One problem, however often it recurs: keyed by ``fingerprint``, counted, re-opened."""

    __tablename__ = "incidents"
    __table_args__ = (sa.Index("ix_incidents_state_seen", "state", "last_seen_at", "id"),)
    __mapper_args__ = VERSIONED

    id: str = id_field()
    fingerprint: str = Field(sa_column=sa.Column(sa.String(255), nullable=False, unique=True))
    kind: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    severity: str = Field(sa_column=sa.Column(sa.String(16), nullable=False))
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
    details: dict[str, Any] = json_field(default={})
    created_at: datetime = time_field(default_now=True)
