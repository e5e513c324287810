"""A proposal's timeline: its audit records as typed entries (``resolvers.approval.timeline``)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from strawberry.scalars import JSON

from signoff import models
from signoff.resolvers.approval import timeline
from signoff.resolvers.incidents import response as incident_response
from signoff.schema.access.actor import Actor, load_actor
from signoff.schema.approval.queue import Queue
from signoff.schema.call import call
from signoff.schema.delivery.delivery import DeliveryAttempt

if TYPE_CHECKING:
    from signoff.schema.delivery.incident import Incident

LazyIncident = Annotated["Incident", strawberry.lazy("signoff.schema.delivery.incident")]

strawberry.enum(
    timeline.EntryKind,
    name="TimelineEntryKind",
    description="PROPOSED, AMENDED, AMENDMENT_ACCEPTED; DECISION: one reviewer's approval or "
    "rejection; APPROVED: the quorum was reached; AUTO_APPROVED: let through by the target's "
    "approval policy; REJECTED; DEADLINE: escalated, expired or rejected at the deadline; "
    "DELIVERY, EXECUTION; APPLIED: delivered or executed, and applied; INCIDENT (operators "
    "and admins); OTHER.",
)


@strawberry.type(description="The approval-policy rule that set how many approvals it needs.")
class PolicyRuleApplied:
    rule: int | None = strawberry.field(description="The rule's index; null: the default.")
    name: str | None
    approvals: int
    queue_id: strawberry.ID | None

    @strawberry.field(description="The queue the approvals were asked in.")
    async def queue(self, info: strawberry.Info) -> Queue | None:
        if self.queue_id is None:
            return None
        row = await info.context.loaders.queue.load(str(self.queue_id))
        return None if row is None else Queue.from_model(row)

    @classmethod
    def of(cls, rule: timeline.PolicyRule) -> PolicyRuleApplied:
        return cls(
            rule=rule.rule,
            name=rule.name,
            approvals=rule.approvals,
            queue_id=None if rule.queue_id is None else strawberry.ID(rule.queue_id),
        )


@strawberry.type(description="One RFC 6902 operation of an amendment.")
class PatchOperation:
    op: str
    path: str
    value: JSON | None
    from_path: str | None = strawberry.field(name="from")


@strawberry.type(description="One thing that happened to a proposal, from its audit record.")
class TimelineEntry:
    audit_event_id: strawberry.ID = strawberry.field(
        description="The audit record it was read from (auditInclusionProof proves it)."
    )
    at: datetime
    kind: timeline.EntryKind
    action: str = strawberry.field(description="The audit action, e.g. proposal.applied.")
    log_position: int | None = strawberry.field(
        description="Its record's position in the signed audit log; null until stamped."
    )
    payload_digest: str | None = strawberry.field(
        description="The digest proposed, amended to, decided or approved."
    )
    from_digest: str | None = strawberry.field(description="AMENDED: the digest it replaced.")
    revision: int | None
    decision: models.Decision | None = strawberry.field(description="DECISION entries.")
    reason: str | None
    error_code: str | None
    policy_rule: PolicyRuleApplied | None = strawberry.field(
        description="PROPOSED, AMENDED, AUTO_APPROVED: the policy rule that set the quorum "
        "(null: no policy; the target's requiredApprovals)."
    )
    diff: list[PatchOperation] = strawberry.field(
        description="AMENDED: RFC 6902 operations from the previous revision."
    )
    attempt: DeliveryAttempt | None = strawberry.field(
        description="A delivery start: the attempt it made and what came back."
    )
    actor_id: strawberry.Private[str | None]
    incident_id: strawberry.Private[str | None]

    @strawberry.field(description="Who did it; null for Signoff itself (deliveries, deadlines).")
    async def actor(self, info: strawberry.Info) -> Actor | None:
        return await load_actor(info, self.actor_id)

    @strawberry.field(
        description="INCIDENT entries: the incident.", graphql_type=LazyIncident | None
    )
    async def incident(self, info: strawberry.Info) -> Incident | None:
        from signoff.schema.delivery.incident import Incident

        if self.incident_id is None:
            return None
        row = await call(info, incident_response.get_incident, incident_id=self.incident_id)
        return Incident.from_model(row)

    @classmethod
    def of(cls, entry: timeline.Entry) -> TimelineEntry:
        return cls(
            audit_event_id=strawberry.ID(entry.audit_event_id),
            at=entry.at,
            kind=entry.kind,
            action=entry.action,
            log_position=entry.log_position,
            payload_digest=entry.payload_digest,
            from_digest=entry.from_digest,
            revision=entry.revision,
            decision=entry.decision,
            reason=entry.reason,
            error_code=entry.error_code,
            policy_rule=None
            if entry.policy_rule is None
            else PolicyRuleApplied.of(entry.policy_rule),
            diff=[
                PatchOperation(op=op.op, path=op.path, value=JSON(op.value), from_path=op.from_path)
                for op in entry.diff
            ],
            attempt=None if entry.attempt is None else DeliveryAttempt.from_model(entry.attempt),
            actor_id=entry.actor_id,
            incident_id=entry.incident_id,
        )
