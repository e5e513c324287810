"""Proposals: one proposed side-effecting action, and its life cycle."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from signoff.constants import DIGEST_SCHEMA_VERSION
from signoff.digest import sha256_digest
from signoff.models.base import (
    VERSIONED,
    enum_field,
    fk_field,
    id_field,
    json_field,
    time_field,
    version_field,
)
from signoff.models.deadline import (
    DeadlineAction,
    deadline_action_field,
    deadline_reason_field,
    escalation_chain_field,
)


class ProposalState(StrEnum):
    APPROVAL_REQUIRED = "APPROVAL_REQUIRED"
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"
    QUEUED = "QUEUED"
    APPLYING = "APPLYING"
    APPLIED = "APPLIED"
    FAILED = "FAILED"
    # A target the agent executes (docs/design.md section 4.21): the agent holds the one
    # execution right; a lease that lapsed without a report leaves the outcome unknown.
    EXECUTING = "EXECUTING"
    EXECUTION_UNKNOWN = "EXECUTION_UNKNOWN"
    CANCELLED = "CANCELLED"
    COMPENSATION_REQUIRED = "COMPENSATION_REQUIRED"


class Proposal(SQLModel, table=True):
    __tablename__ = "proposals"
    __table_args__ = (
        sa.UniqueConstraint("proposed_by_id", "operation_key", name="uq_proposals_operation"),
        sa.Index("ix_proposals_queue_created", "queue_id", "created_at", "id"),
        sa.Index("ix_proposals_state_created", "state", "created_at", "id"),
        sa.Index("ix_proposals_created", "created_at", "id"),
        sa.Index("ix_proposals_due", "state", "next_attempt_at"),
        sa.Index("ix_proposals_lease", "state", "lease_expires_at"),
        # History reads decided proposals most recently decided first; the last day's
        # statistics read them by when they were decided and applied.
        sa.Index("ix_proposals_decided", "decided_at", "id"),
        sa.Index("ix_proposals_applied", "applied_at"),
    )
    __mapper_args__ = VERSIONED

    id: str = id_field()
    target_id: str = fk_field("targets.id")
    queue_id: str | None = fk_field("queues.id", nullable=True, index=False)
    proposed_by_id: str = fk_field("actors.id", index=False)
    action_code: str = Field(sa_column=sa.Column(sa.String(200), nullable=False))
    subject: dict[str, Any] = json_field(default={})
    payload: dict[str, Any] = json_field(default={})
    preconditions: dict[str, Any] = json_field(default={})
    payload_digest: str = Field(sa_column=sa.Column(sa.String(71), nullable=False))
    # Digest of what the proposer sent (not of the generated id and expiry), so a
    # replay of the same operation key can be told from a changed one.
    request_digest: str = Field(sa_column=sa.Column(sa.String(71), nullable=False))
    operation_key: str = Field(sa_column=sa.Column(sa.String(200), nullable=False))
    state: ProposalState = enum_field(ProposalState.APPROVAL_REQUIRED)
    # Bumped by every update; change events carry it, so readers can order states.
    version: int = version_field()
    required_approvals: int = 1
    approval_count: int = 0
    # Amendments (docs/design.md section 4.17): each one makes a new revision and digest;
    # approvals of an earlier revision are void.
    revision: int = Field(
        default=1, sa_column=sa.Column(sa.Integer, nullable=False, server_default="1")
    )
    # The target asks its agent to accept an amendment before the proposal may be queued.
    awaiting_proposer: bool = Field(
        default=False,
        sa_column=sa.Column(sa.Boolean, nullable=False, server_default=sa.false()),
    )
    # The approval-policy rule that set ``required_approvals`` (section 4.19), if any.
    policy_rule: dict[str, Any] | None = json_field(nullable=True)
    expires_at: datetime = time_field()
    # The deadline policy it was proposed under (docs/design.md section 4.20): its
    # target's, or the proposer's override within the target's bounds.
    deadline_action: DeadlineAction = deadline_action_field()
    deadline_reason: str | None = deadline_reason_field()
    escalation_chain: list[dict[str, Any]] = escalation_chain_field()
    # How many escalation steps it has taken (the index of the next one in the chain).
    escalation_level: int = Field(
        default=0, sa_column=sa.Column(sa.Integer, nullable=False, server_default="0")
    )
    # When it stopped waiting for approval: decided by its reviewers, rejected or expired at
    # its deadline, or let through by its target's mode or policy as it was proposed.
    decided_at: datetime | None = time_field(nullable=True)
    # Delivery bookkeeping: the database, not Redis, holds the retry state.
    delivery_attempt_count: int = 0
    # The fencing number of the delivery lease: one more at every claim and never reset
    # (``retryProposal`` resets the attempt count), so a worker from an earlier cycle
    # can never match the lease of a later one.
    delivery_lease: int = Field(
        default=0, sa_column=sa.Column(sa.Integer, nullable=False, server_default="0")
    )
    delivery_terminal: bool = False
    next_attempt_at: datetime | None = time_field(nullable=True)
    lease_expires_at: datetime | None = time_field(nullable=True)
    last_error_code: str | None = Field(
        default=None, sa_column=sa.Column(sa.String(64), nullable=True)
    )
    accepted_at: datetime | None = time_field(nullable=True)
    applied_at: datetime | None = time_field(nullable=True)
    # What the receiver answered, for a target with an output schema: the JSON document
    # of the attempt that applied it (docs/design.md section 4.8), as ``kept_result``
    # stores it. Null otherwise.
    result: dict[str, Any] | None = json_field(nullable=True)
    compensates_proposal_id: str | None = fk_field("proposals.id", nullable=True, index=False)
    # Its target had no url when it was proposed: approval leaves it APPROVED, and the
    # agent that proposed it executes it once (docs/design.md section 4.21).
    agent_executes: bool = Field(
        default=False,
        sa_column=sa.Column(sa.Boolean, nullable=False, server_default=sa.false()),
    )
    # Who took the execution right, the label it gave (a host and process), and when.
    executed_by_id: str | None = fk_field("actors.id", nullable=True, index=False)
    executor: str | None = Field(default=None, sa_column=sa.Column(sa.String(200)))
    execution_started_at: datetime | None = time_field(nullable=True)
    created_at: datetime = time_field(default_now=True)
    updated_at: datetime = time_field(default_now=True)


def kept_result(document: Any) -> dict[str, Any]:
    """A receiver's answer as ``Proposal.result`` stores it: inside an object. SQLite gives
    a column declared JSON numeric affinity, so a bare number would be stored as a number
    (a large one rounded) and not read back as JSON text."""
    return {"body": document}


def result_document(proposal: Proposal) -> Any:
    """The receiver's answer ``Proposal.result`` keeps, or ``None``."""
    return None if proposal.result is None else proposal.result["body"]


def format_expiry(expires_at: datetime) -> str:
    """The expiry as it enters the digest: whole seconds, UTC, ``Z``."""
    return expires_at.strftime("%Y-%m-%dT%H:%M:%SZ")


def payload_digest_of(
    proposal: Proposal,
    *,
    payload: dict[str, Any] | None = None,
    revision: int | None = None,
    expires_at: datetime | None = None,
) -> str:
    """The digest a reviewer approves: everything that will be sent, and when it lapses;
    with ``payload`` and ``revision``, the digest an amendment to them would give, with
    ``expires_at`` the digest it will have once its deadline moves there.

    An amended proposal's digest also names its revision, so no two revisions share a
    digest, even when an amendment restores an earlier payload."""
    revision = proposal.revision if revision is None else revision
    return sha256_digest(
        {
            **({} if revision == 1 else {"revision": revision}),
            "schema_version": DIGEST_SCHEMA_VERSION,
            "proposal_id": proposal.id,
            "action_code": proposal.action_code,
            "subject": proposal.subject,
            "payload": proposal.payload if payload is None else payload,
            "preconditions": proposal.preconditions,
            "target_id": proposal.target_id,
            "expires_at": format_expiry(expires_at or proposal.expires_at),
        }
    )
