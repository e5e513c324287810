"""Drafts: what an agent prepared for a person to edit, reserve and dispatch exactly once."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from signoff.models.base import (
    VERSIONED,
    enum_field,
    id_field,
    json_field,
    time_field,
    version_field,
)


class DraftStatus(StrEnum):
    DRAFT = "DRAFT"  # being edited
    RESERVED = "RESERVED"  # reviewed values fixed; one operation key handed out
    OBSERVED = "OBSERVED"  # the executor reported it submitted
    PARTIAL = "PARTIAL"  # submitted in part: more receipts may follow
    OUTCOME_UNKNOWN = "OUTCOME_UNKNOWN"  # sent, outcome not known (yet)
    CANCELLED = "CANCELLED"  # by the person, superseded, or not submitted


class OwnerKind(StrEnum):
    FORM = "FORM"  # an executable form submission; editable
    APPROVAL = "APPROVAL"  # an approval request; its one ``request`` object is immutable
    REFERENCE = "REFERENCE"  # points at an object owned elsewhere; read-only


class DraftSource(StrEnum):
    AGENT = "AGENT"
    USER = "USER"


class DraftOutcome(StrEnum):
    SUBMITTED = "SUBMITTED"
    PARTIAL = "PARTIAL"
    UNKNOWN = "UNKNOWN"
    NOT_SUBMITTED = "NOT_SUBMITTED"  # refused before anything was sent: the owner is free


class CancelReason(StrEnum):
    USER = "USER"
    SUPERSEDED = "SUPERSEDED"
    NOT_SUBMITTED = "NOT_SUBMITTED"


class Draft(SQLModel, table=True):
    __tablename__ = "drafts"
    __table_args__ = (
        sa.Index("ix_drafts_session", "account_id", "session_id", "created_at", "id"),
        sa.Index("ix_drafts_expiry", "expires_at", "id"),
        sa.Index("ix_drafts_owner", "owner_key"),
    )
    __mapper_args__ = VERSIONED

    id: str = id_field()
    account_id: str = Field(sa_column=sa.Column(sa.String(36), nullable=False))
    session_id: str = Field(sa_column=sa.Column(sa.String(200), nullable=False))
    prepared_by_id: str = Field(sa_column=sa.Column(sa.String(36), nullable=False))
    owner: dict[str, Any] = json_field(default={})
    owner_kind: OwnerKind = enum_field()
    # sha256 of the canonical owner: what "one live draft per owner" is keyed on.
    owner_key: str = Field(sa_column=sa.Column(sa.String(71), nullable=False))
    status: DraftStatus = enum_field(DraftStatus.DRAFT)
    version: int = version_field()
    revision: int = 1  # what a client's expectedRevision compares with
    # NULL once retention dropped them; the tombstone columns below are kept.
    values: dict[str, Any] | None = json_field(nullable=True)
    values_digest: str | None = Field(
        default=None, sa_column=sa.Column(sa.String(71), nullable=True)
    )
    updated_by_user: list[str] = json_field(default=[])
    expires_at: datetime = time_field()
    cancel_reason: CancelReason | None = Field(
        default=None, sa_column=sa.Column(sa.String(32), nullable=True)
    )
    # The reservation: one operation key, for the reviewed values.
    operation_key: str | None = Field(
        default=None, sa_column=sa.Column(sa.String(64), nullable=True, unique=True)
    )
    reserved_digest: str | None = Field(
        default=None, sa_column=sa.Column(sa.String(71), nullable=True)
    )
    reserved_at: datetime | None = time_field(nullable=True)
    # The dispatch tombstone: the check passed once (the operation reached the executor).
    dispatched_at: datetime | None = time_field(nullable=True)
    observed_at: datetime | None = time_field(nullable=True)
    receipt: Any = json_field(nullable=True)
    owner_execution_ref: str | None = Field(
        default=None, sa_column=sa.Column(sa.String(200), nullable=True)
    )
    values_dropped_at: datetime | None = time_field(nullable=True)
    created_at: datetime = time_field(default_now=True)
    updated_at: datetime = time_field(default_now=True)


class DraftOwner(SQLModel, table=True):
    """One row per owner: which draft holds it, and when the ordinary form was submitted for
    it. Every decision about an owner locks this row first, so they are made one at a time."""

    __tablename__ = "draft_owners"

    owner_key: str = Field(sa_column=sa.Column(sa.String(71), primary_key=True))
    draft_id: str | None = Field(default=None, sa_column=sa.Column(sa.String(36), nullable=True))
    manual_submitted_at: datetime | None = time_field(nullable=True)
    updated_at: datetime = time_field(default_now=True)
