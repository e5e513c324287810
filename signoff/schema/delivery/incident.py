"""Incidents in GraphQL: the ``Incident``, ``DeadLetter`` and ``RepairAction`` types, and the
inputs and payloads of the mutations that work an incident."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from strawberry.scalars import JSON

import signoff.schema.enums  # noqa: F401  (registers the enums)
from signoff import models
from signoff.resolvers.incidents import response as incident_response
from signoff.schema.access.audit import AuditEvent
from signoff.schema.context import context_of
from signoff.schema.delivery.target import Target
from signoff.schema.node import Node

if TYPE_CHECKING:
    from signoff.schema.approval.proposal import Proposal

LazyProposal = Annotated["Proposal", strawberry.lazy("signoff.schema.approval.proposal")]


@strawberry.type(description="One occurrence of delivery giving up; it counts towards an incident.")
class DeadLetter(Node):
    id: strawberry.ID
    incident_id: strawberry.ID
    job_type: str
    job_id: str
    proposal_id: strawberry.ID | None
    error_code: str
    attempt_count: int
    state: models.DeadLetterState
    created_at: datetime

    @classmethod
    def from_model(cls, d: models.DeadLetter) -> DeadLetter:
        return cls(
            id=strawberry.ID(d.id),
            incident_id=strawberry.ID(d.incident_id),
            job_type=d.job_type,
            job_id=d.job_id,
            proposal_id=None if d.proposal_id is None else strawberry.ID(d.proposal_id),
            error_code=d.error_code,
            attempt_count=d.attempt_count,
            state=models.DeadLetterState(d.state),
            created_at=d.created_at,
        )


@strawberry.type(description="A repair made by an operator or a reconciliation run.")
class RepairAction(Node):
    id: strawberry.ID
    action_type: str
    entity_type: str
    entity_id: strawberry.ID
    before: JSON
    after: JSON
    incident_id: strawberry.ID | None
    reconciliation_run_id: strawberry.ID | None
    created_at: datetime

    @classmethod
    def from_model(cls, r: models.RepairAction) -> RepairAction:
        return cls(
            id=strawberry.ID(r.id),
            action_type=r.action_type,
            entity_type=r.entity_type,
            entity_id=strawberry.ID(r.entity_id),
            before=JSON(r.before),
            after=JSON(r.after),
            incident_id=None if r.incident_id is None else strawberry.ID(r.incident_id),
            reconciliation_run_id=(
                None if r.reconciliation_run_id is None else strawberry.ID(r.reconciliation_run_id)
            ),
            created_at=r.created_at,
        )


@strawberry.type(description="A problem, however often it recurs. Operators and admins.")
class Incident(Node):
    id: strawberry.ID
    key: str = strawberry.field(description="What deduplicates it: one incident per key.")
    severity: models.Severity
    category: str
    state: models.IncidentState
    title: str
    summary: str | None
    entity_type: str | None
    entity_id: str | None
    occurrence_count: int = strawberry.field(description="Each recurrence counts and re-opens.")
    last_error_code: str | None
    first_seen_at: datetime
    last_seen_at: datetime
    acknowledged_at: datetime | None
    resolved_at: datetime | None
    resolution_code: str | None
    resolution_summary: str | None
    model: strawberry.Private[models.Incident]

    # Lists of incidents load these for all their rows at once (DataLoaders); ids are
    # UUIDv7, so reversing their order puts the newest first.
    @strawberry.field(description="Newest first.")
    async def dead_letters(self, info: strawberry.Info) -> list[DeadLetter]:
        rows = await context_of(info).loaders.dead_letters_by_incident.load(str(self.id))
        return [DeadLetter.from_model(row) for row in reversed(rows)]

    @strawberry.field(description="Newest first.")
    async def repair_actions(self, info: strawberry.Info) -> list[RepairAction]:
        rows = await context_of(info).loaders.repairs_by_incident.load(str(self.id))
        return [RepairAction.from_model(row) for row in reversed(rows)]

    @strawberry.field(description="The proposal whose delivery failed, if it is about one.")
    async def proposal(self, info: strawberry.Info) -> LazyProposal | None:
        from signoff.schema.approval.proposal import Proposal

        if self.model.entity_type != "proposal":
            return None
        row = await context_of(info).loaders.proposal.load(self.model.entity_id)
        return None if row is None else Proposal.from_model(row)

    @strawberry.field(
        description=(
            "The target it concerns: the target it is about, or the target of the proposal "
            "it is about; null when it is about neither."
        )
    )
    async def target(self, info: strawberry.Info) -> Target | None:
        loaders = context_of(info).loaders
        target_id = self.model.entity_id if self.model.entity_type == "target" else None
        if self.model.entity_type == "proposal":
            proposal = await loaders.proposal.load(self.model.entity_id)
            target_id = None if proposal is None else proposal.target_id
        row = None if target_id is None else await loaders.target.load(target_id)
        return None if row is None else Target.from_model(row)

    @strawberry.field(description="What happened to it and to what it is about, oldest first.")
    async def audit_trail(self, info: strawberry.Info) -> list[AuditEvent]:
        async with context_of(info).read() as session:
            rows = await incident_response.audit_trail_of(session, self.model)
        return [AuditEvent.from_model(row) for row in rows]

    @classmethod
    def from_model(cls, i: models.Incident) -> Incident:
        return cls(
            id=strawberry.ID(i.id),
            key=i.fingerprint.removeprefix("opened:"),
            severity=models.Severity(i.severity),
            category=i.kind,
            state=models.IncidentState(i.state),
            title=i.title,
            summary=i.summary,
            entity_type=i.entity_type or None,
            entity_id=i.entity_id or None,
            occurrence_count=i.occurrence_count,
            last_error_code=i.last_error_code,
            first_seen_at=i.first_seen_at,
            last_seen_at=i.last_seen_at,
            acknowledged_at=i.acknowledged_at,
            resolved_at=i.resolved_at,
            resolution_code=i.resolution_code,
            resolution_summary=i.resolution_summary,
            model=i,
        )


@strawberry.input
class AcknowledgeIncidentInput:
    incident_id: strawberry.ID
    idempotency_key: str | None = None


@strawberry.input
class ResolveIncidentInput:
    incident_id: strawberry.ID
    code: str = strawberry.field(description="^[a-z][a-z0-9_]{1,63}$, e.g. receiver_fixed.")
    summary: str = strawberry.field(description="What was done, 3 to 2,000 characters.")
    idempotency_key: str | None = None


@strawberry.input
class RetryIncidentInput:
    incident_id: strawberry.ID
    idempotency_key: str | None = None


@strawberry.input
class OpenIncidentInput:
    key: str = strawberry.field(description="Deduplicates: one incident per key.")
    severity: models.Severity
    category: str = strawberry.field(description="^[a-z][a-z0-9_]{1,63}$")
    title: str
    summary: str | None = None
    entity_type: str | None = None
    entity_id: str | None = None


@strawberry.type
class IncidentPayload:
    incident: Incident
    replayed: bool


@strawberry.type
class RetryIncidentPayload:
    incident: Incident
    repair_action: RepairAction
    replayed: bool


@strawberry.type
class OpenIncidentPayload:
    incident: Incident
    deduplicated: bool = strawberry.field(
        description="An unresolved incident with this key existed; it is returned unchanged."
    )
