"""A proposal's story, oldest first, read from its audit records: proposed, amended,
each reviewer's decision, the quorum, the deadline, deliveries or executions, and (for
staff, who may read incidents) the incidents about it. Each record keeps what it was
written with; an entry names the fields a reader needs, typed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlmodel import col, or_, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.models import AuditEvent, Decision, DeliveryAttempt, Incident
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.approval.proposals import get_proposal

# A proposal's records are few (tens); a bound keeps a pathological one readable.
TIMELINE_MAX_ENTRIES = 500


class EntryKind(StrEnum):
    PROPOSED = "PROPOSED"
    AMENDED = "AMENDED"
    AMENDMENT_ACCEPTED = "AMENDMENT_ACCEPTED"
    DECISION = "DECISION"  # one reviewer's approval or rejection
    APPROVED = "APPROVED"  # the quorum was reached
    AUTO_APPROVED = "AUTO_APPROVED"  # let through by its target's approval policy
    REJECTED = "REJECTED"
    DEADLINE = "DEADLINE"  # escalated, expired or rejected at its deadline
    DELIVERY = "DELIVERY"
    APPLIED = "APPLIED"  # delivered, or executed by its agent, and applied
    EXECUTION = "EXECUTION"
    INCIDENT = "INCIDENT"
    OTHER = "OTHER"


KIND_OF_ACTION = {
    "proposal.proposed": EntryKind.PROPOSED,
    "proposal.amended": EntryKind.AMENDED,
    "proposal.amendment_accepted": EntryKind.AMENDMENT_ACCEPTED,
    "approval.approved": EntryKind.DECISION,
    "approval.rejected": EntryKind.DECISION,
    "proposal.approved": EntryKind.APPROVED,
    "proposal.auto_approved": EntryKind.AUTO_APPROVED,
    "proposal.rejected": EntryKind.REJECTED,
    "proposal.escalated": EntryKind.DEADLINE,
    "proposal.expired": EntryKind.DEADLINE,
    "proposal.deadline_rejected": EntryKind.DEADLINE,
    "proposal.applied": EntryKind.APPLIED,
    "proposal.delivery_started": EntryKind.DELIVERY,
    "proposal.accepted": EntryKind.DELIVERY,
    "proposal.retry_scheduled": EntryKind.DELIVERY,
    "proposal.delivery_failed": EntryKind.DELIVERY,
    "proposal.delivery_refused": EntryKind.DELIVERY,
    "proposal.lease_released": EntryKind.DELIVERY,
    "proposal.retried": EntryKind.DELIVERY,
    "proposal.result_reported": EntryKind.DELIVERY,
    "proposal.dead_lettered": EntryKind.DELIVERY,
    "proposal.execution_started": EntryKind.EXECUTION,
    "proposal.execution_failed": EntryKind.EXECUTION,
    "proposal.execution_unknown": EntryKind.EXECUTION,
}


@dataclass(frozen=True)
class PolicyRule:
    """The approval-policy rule that set the quorum (``rule`` None: the policy's default)."""

    rule: int | None
    name: str | None
    approvals: int
    queue_id: str | None


@dataclass(frozen=True)
class DiffOperation:
    """One RFC 6902 operation of an amendment."""

    op: str
    path: str
    value: Any = None
    from_path: str | None = None


@dataclass(frozen=True)
class Entry:
    audit_event_id: str
    at: datetime
    kind: EntryKind
    action: str
    actor_id: str | None
    log_position: int | None
    payload_digest: str | None = None
    from_digest: str | None = None
    revision: int | None = None
    decision: Decision | None = None
    reason: str | None = None
    error_code: str | None = None
    policy_rule: PolicyRule | None = None
    diff: list[DiffOperation] = field(default_factory=list)
    attempt: DeliveryAttempt | None = None
    incident_id: str | None = None


async def proposal_timeline(
    *, session: AsyncSession, viewer: Viewer, proposal_id: str
) -> list[Entry]:
    """The proposal's audit records as entries, oldest first, each delivery start with
    the attempt it made; incidents' records only for staff."""
    proposal = await get_proposal(session=session, viewer=viewer, proposal_id=proposal_id)
    about = [
        (col(AuditEvent.target_type) == "proposal") & (col(AuditEvent.target_id) == proposal.id)
    ]
    incidents: list[str] = []
    if viewer.sees_everything:
        found = await session.exec(
            select(Incident.id).where(
                Incident.entity_type == "proposal", Incident.entity_id == proposal.id
            )
        )
        incidents = list(found.all())
    if incidents:
        about.append(
            (col(AuditEvent.target_type) == "incident") & col(AuditEvent.target_id).in_(incidents)
        )
    records = (
        await session.exec(
            select(AuditEvent)
            .where(or_(*about))
            .order_by(col(AuditEvent.created_at), col(AuditEvent.id))
            .limit(TIMELINE_MAX_ENTRIES)
        )
    ).all()
    attempts = (
        await session.exec(
            select(DeliveryAttempt)
            .where(DeliveryAttempt.proposal_id == proposal.id)
            .order_by(col(DeliveryAttempt.started_at), col(DeliveryAttempt.id))
        )
    ).all()
    entries = [entry_of(record) for record in records]
    return with_attempts(entries, attempts)


def entry_of(record: AuditEvent) -> Entry:
    """One audit record as an entry, its details read by what its action writes."""
    details: dict[str, Any] = record.details or {}
    kind = KIND_OF_ACTION.get(record.action, EntryKind.OTHER)
    if record.target_type == "incident":
        kind = EntryKind.INCIDENT
    decision = None
    if kind is EntryKind.DECISION:
        decision = Decision(record.action.removeprefix("approval.").upper())
    return Entry(
        audit_event_id=record.id,
        at=record.created_at,
        kind=kind,
        action=record.action,
        actor_id=record.actor_id,
        log_position=record.position,
        payload_digest=_text(details.get("payload_digest")),
        from_digest=_text(details.get("from_digest")),
        revision=_integer(details.get("revision")),
        decision=decision,
        reason=_text(details.get("reason")),
        error_code=_text(details.get("error_code")),
        policy_rule=_policy_rule(details.get("policy_rule")),
        diff=_diff(details.get("diff")),
        incident_id=record.target_id if kind is EntryKind.INCIDENT else None,
    )


def with_attempts(entries: list[Entry], attempts: Sequence[DeliveryAttempt]) -> list[Entry]:
    """Each delivery start with the attempt it made: an attempt is recorded in the claim's
    transaction, after its start and before the next one (a claim refused before sending
    made none)."""
    starts = [i for i, e in enumerate(entries) if e.action == "proposal.delivery_started"]
    waiting = list(attempts)
    for n, i in enumerate(starts):
        begun = entries[i].at
        until = entries[starts[n + 1]].at if n + 1 < len(starts) else None
        while waiting and waiting[0].started_at < begun:
            waiting.pop(0)
        if waiting and (until is None or waiting[0].started_at < until):
            entries[i] = replace(entries[i], attempt=waiting.pop(0))
    return entries


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _policy_rule(value: Any) -> PolicyRule | None:
    if not isinstance(value, dict) or _integer(value.get("approvals")) is None:
        return None
    return PolicyRule(
        rule=_integer(value.get("rule")),
        name=_text(value.get("name")),
        approvals=value["approvals"],
        queue_id=_text(value.get("queueId")),
    )


def _diff(value: Any) -> list[DiffOperation]:
    if not isinstance(value, list):
        return []
    return [
        DiffOperation(
            op=str(op["op"]),
            path=str(op["path"]),
            value=op.get("value"),
            from_path=_text(op.get("from")),
        )
        for op in value
        if isinstance(op, dict) and "op" in op and "path" in op
    ]
