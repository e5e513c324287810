"""Delivery in GraphQL: the ``DeliveryAttempt`` type, result reports, retries and compensation."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from strawberry.scalars import JSON

from signoff import models
from signoff.delivery import webhook_id
from signoff.resolvers.delivery.executions import ExecutionOutcome
from signoff.resolvers.delivery.results import ResultStatus
from signoff.schema.node import Node

if TYPE_CHECKING:
    from signoff.schema.approval.proposal import Proposal

LazyProposal = Annotated["Proposal", strawberry.lazy("signoff.schema.approval.proposal")]

# strawberry.enum registers the enum class itself, so the model enums annotate the fields.
strawberry.enum(models.ResponseClass, name="ResponseClass")
strawberry.enum(ResultStatus, name="ResultStatus")
strawberry.enum(ExecutionOutcome, name="ExecutionOutcome")


@strawberry.type(
    description="One HTTP attempt to deliver a proposal. Digests, never bodies. Recorded "
    "when it is claimed, before it is sent: responseClass UNKNOWN (and no finishedAt) while "
    "it is in flight, and for good if its worker died before recording what came back (it "
    "may have reached the receiver)."
)
class DeliveryAttempt(Node):
    id: strawberry.ID
    attempt_number: int
    response_class: models.ResponseClass
    status_code: int | None
    error_code: str | None
    request_digest: str = strawberry.field(description="sha256 of the exact request body sent.")
    response_digest: str | None = strawberry.field(
        description="sha256 of the response body as read (at most 64 KiB)."
    )
    webhook_id: str = strawberry.field(
        description="The webhook-id header the request carried (the same on every attempt "
        "at a proposal: receivers deduplicate on it)."
    )
    duration_ms: int | None
    started_at: datetime
    finished_at: datetime | None

    @classmethod
    def from_model(cls, a: models.DeliveryAttempt) -> DeliveryAttempt:
        return cls(
            id=strawberry.ID(a.id),
            attempt_number=a.attempt_number,
            response_class=models.ResponseClass(a.response_class),
            status_code=a.status_code,
            error_code=a.error_code,
            request_digest=a.request_digest,
            response_digest=a.response_digest,
            webhook_id=webhook_id(a.proposal_id),
            duration_ms=a.duration_ms,
            started_at=a.started_at,
            finished_at=a.finished_at,
        )


@strawberry.input
class ReportActionResultInput:
    proposal_id: strawberry.ID
    operation_key: str
    payload_digest: str
    status: ResultStatus
    terminal: bool = strawberry.field(
        default=False, description="For FAILED: true ends delivery; false retries it."
    )
    retry_after_seconds: int | None = None
    error_code: str | None = None
    provider_request_id: str | None = None


@strawberry.type
class ReportActionResultPayload:
    proposal: LazyProposal
    replayed: bool


@strawberry.input
class BeginExecutionInput:
    proposal_id: strawberry.ID
    payload_digest: str = strawberry.field(description="The digest the reviewers approved.")
    lease_seconds: int | None = strawberry.field(
        default=None,
        description="How long the right is held without a report (5 s-1 day, default 300 s); "
        "after that the outcome is EXECUTION_UNKNOWN, an incident, never a retry.",
    )
    executor: str | None = strawberry.field(
        default=None, description="Who runs it, as refusals to others name it (host, process)."
    )


@strawberry.type
class BeginExecutionPayload:
    proposal: LazyProposal
    lease: int = strawberry.field(description="Report the outcome with this lease.")


@strawberry.input
class ReportExecutionInput:
    proposal_id: strawberry.ID
    lease: int = strawberry.field(description="The lease beginExecution gave.")
    outcome: ExecutionOutcome
    result: JSON | None = strawberry.field(
        default=None,
        description="APPLIED: what the action returned; it must meet the target's "
        "outputSchema when it has one.",
    )
    error_code: str | None = strawberry.field(
        default=None, description="FAILED: why (default EXECUTION_FAILED)."
    )


@strawberry.type
class ReportExecutionPayload:
    proposal: LazyProposal
    replayed: bool


@strawberry.input
class RetryProposalInput:
    proposal_id: strawberry.ID
    payload_digest: str
    idempotency_key: str | None = None


@strawberry.type
class RetryProposalPayload:
    proposal: LazyProposal
    replayed: bool


@strawberry.input
class ProposeCompensationInput:
    proposal_id: strawberry.ID = strawberry.field(description="The applied action to undo.")
    target_id: strawberry.ID
    action_code: str
    payload: JSON
    idempotency_key: str
    subject: JSON | None = None
    preconditions: JSON | None = None
