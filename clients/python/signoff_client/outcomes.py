"""What became of a proposal, as an agent acts on it: ``Approved``, ``Rejected``,
``Amended`` (accept it to go on), ``Applied``, ``Failed`` or ``Expired``.

``implied_outcomes`` reads them off a proposal as it is now. A proposal already applied
implies it was approved first, so a client that only sees its latest state (a poll, a
resume after a long gap) still hands an agent the same sequence as one that saw every
event: ``Approved``, then ``Applied``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from signoff_client.generated.enums import Decision, ProposalState
from signoff_client.generated.fragments import ProposalFields


@dataclass(frozen=True)
class Approved:
    """Enough reviewers approved this exact payload (its digest); delivery comes next."""

    proposal_id: str
    payload: dict[str, Any]
    payload_digest: str
    approvers: list[str] = field(default_factory=list)
    kind: str = "approved"

    @property
    def key(self) -> tuple[str, int]:
        return (self.kind, 0)


@dataclass(frozen=True)
class Rejected:
    """A reviewer (or the deadline policy) rejected it; ``reason`` says why."""

    proposal_id: str
    reason: str | None
    rejected_by: str | None
    kind: str = "rejected"

    @property
    def key(self) -> tuple[str, int]:
        return (self.kind, 0)


@dataclass(frozen=True)
class Amended:
    """A reviewer changed the payload; it goes on only once the agent accepts
    ``payload_digest`` (``Proposal.accept_amendment``)."""

    proposal_id: str
    payload: dict[str, Any]
    payload_digest: str
    revision: int
    reason: str | None
    amended_by: str | None
    kind: str = "amended"

    @property
    def key(self) -> tuple[str, int]:
        return (self.kind, self.revision)


@dataclass(frozen=True)
class Applied:
    """The receiver took the delivery: ``result`` is what Signoff recorded of its answer
    (HTTP status, the digest of its body, when) and, where the target declares an output
    schema, the answer itself as ``body`` (its JSON document); for a target its agent
    executes, ``body`` is the result the agent reported and ``executor`` who ran it."""

    proposal_id: str
    result: dict[str, Any]
    kind: str = "applied"

    @property
    def key(self) -> tuple[str, int]:
        return (self.kind, 0)


@dataclass(frozen=True)
class Failed:
    """Delivery gave up (dead-lettered until an operator retries it); for a target its
    agent executes, the agent reported a failure (or never reported: ``error_code``
    ``EXECUTION_UNKNOWN``)."""

    proposal_id: str
    error_code: str | None
    attempts: int
    kind: str = "failed"

    @property
    def key(self) -> tuple[str, int]:
        return (self.kind, 0)


@dataclass(frozen=True)
class Expired:
    """Nobody decided before the deadline."""

    proposal_id: str
    expires_at: str
    kind: str = "expired"

    @property
    def key(self) -> tuple[str, int]:
        return (self.kind, 0)


Outcome = Approved | Rejected | Amended | Applied | Failed | Expired
FINAL_KINDS = frozenset({"rejected", "applied", "failed", "expired"})

P = ProposalState
DECIDED = frozenset(
    {
        P.APPROVED,
        P.QUEUED,
        P.APPLYING,
        P.EXECUTING,
        P.EXECUTION_UNKNOWN,
        P.APPLIED,
        P.FAILED,
        P.COMPENSATION_REQUIRED,
    }
)
APPLIED_STATES = frozenset({P.APPLIED, P.COMPENSATION_REQUIRED})


def implied_outcomes(proposal: ProposalFields) -> list[Outcome]:
    """The outcomes the proposal's current state implies, in the order they happened."""
    if proposal.state is P.REJECTED:
        return [rejected(proposal)]
    if proposal.state is P.CANCELLED:
        return [Expired(proposal.id, str(proposal.expires_at))]
    if proposal.state is P.APPROVAL_REQUIRED:
        return [amended(proposal)] if proposal.awaiting_proposer else []
    found: list[Outcome] = []
    if proposal.state in DECIDED:
        found.append(approved(proposal))
    if proposal.state in APPLIED_STATES:
        found.append(applied(proposal))
    elif proposal.state is P.FAILED and proposal.delivery_terminal:
        found.append(Failed(proposal.id, proposal.last_error_code, proposal.delivery_attempt_count))
    elif proposal.state is P.EXECUTION_UNKNOWN:
        # Its agent began it and never reported: it may or may not have run (an incident).
        found.append(Failed(proposal.id, proposal.last_error_code, proposal.delivery_attempt_count))
    return found


def approved(proposal: ProposalFields) -> Approved:
    approvers = [
        a.approver.name
        for a in proposal.approvals
        if a.decision is Decision.APPROVED and a.revision == proposal.revision
    ]
    return Approved(proposal.id, dict(proposal.payload), proposal.payload_digest, approvers)


def rejected(proposal: ProposalFields) -> Rejected:
    for approval in reversed(proposal.approvals):
        if approval.decision is Decision.REJECTED:
            return Rejected(proposal.id, approval.reason, approval.approver.name)
    return Rejected(proposal.id, proposal.deadline_policy.reason, None)  # the deadline's


def amended(proposal: ProposalFields) -> Amended:
    latest = proposal.revisions[-1] if proposal.revisions else None
    return Amended(
        proposal.id,
        dict(proposal.payload),
        proposal.payload_digest,
        proposal.revision,
        latest.reason if latest else None,
        latest.amended_by.name if latest and latest.amended_by else None,
    )


def applied(proposal: ProposalFields) -> Applied:
    last = proposal.attempts[-1] if proposal.attempts else None
    result: dict[str, Any] = {"appliedAt": str(proposal.applied_at)}
    if last is not None:
        result |= {
            "statusCode": last.status_code,
            "responseDigest": last.response_digest,
            "attempts": last.attempt_number,
        }
    if proposal.result is not None:
        result["body"] = proposal.result
    if proposal.executor is not None:
        result["executor"] = proposal.executor
    return Applied(proposal.id, result)
