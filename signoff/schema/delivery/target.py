"""The ``Target`` type and its inputs. The signing secret is never a field of ``Target``."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.scalars import JSON

import signoff.schema.enums  # noqa: F401  (registers the enums)
from signoff import models
from signoff.constants import (
    TARGET_MAX_CONCURRENCY_DEFAULT,
    TARGET_MAX_CONCURRENCY_MAX,
    TARGET_RATE_MAX_PER_SECOND,
    TARGET_RATE_MIN_PER_SECOND,
)
from signoff.models.base import by_value
from signoff.resolvers.access.rules import sees_target_url
from signoff.schema.approval.queue import Queue, load_queue
from signoff.schema.context import context_of, viewer_dependent
from signoff.schema.node import Node
from signoff.schema.reach.deadline import DeadlinePolicy, DeadlinePolicyInput

# A page converts its proposals' targets: their modes found by value, not by the enum's call.
_MODES = by_value(models.ApprovalMode)


# A target's schemas and policies are read from the row when a selection asks for them:
# a record decodes its JSON on first read (``signoff.models.records``), and a page of
# proposals shows their targets' names.
def _input_schema(root: Target) -> JSON:
    return JSON(root.model.input_schema)


def _output_schema(root: Target) -> JSON | None:
    return JSON(root.model.output_schema)  # JSON(None) is None


def _approval_policy(root: Target) -> JSON | None:
    return JSON(root.model.approval_policy)


def _deadline_policy(root: Target) -> DeadlinePolicy:
    return DeadlinePolicy.of(root.model)


@strawberry.type(description="An external endpoint approved actions are delivered to.")
class Target(Node):
    id: strawberry.ID
    name: str
    method: str
    input_schema: JSON = strawberry.field(resolver=_input_schema)
    output_schema: JSON | None = strawberry.field(resolver=_output_schema)
    approval_mode: models.ApprovalMode
    required_approvals: int
    max_attempts: int
    timeout_seconds: int
    retired_at: datetime | None
    paused_at: datetime | None = strawberry.field(
        description="Set while the target is paused: its proposals wait QUEUED, unsent."
    )
    max_concurrency: int = strawberry.field(
        description="At most this many deliveries to the target are in flight at once."
    )
    rate_per_second: float | None = strawberry.field(
        description="At most this many deliveries start per second; null: no rate limit."
    )
    circuit_state: models.CircuitState = strawberry.field(
        description="CLOSED: deliveries flow. OPEN: they wait until the next probe. "
        "HALF_OPEN: one probe is in flight."
    )
    consecutive_failures: int = strawberry.field(
        description="Failed attempts since the last success."
    )
    last_error: str | None = strawberry.field(
        description="The last failed attempt's error, for example RECEIVER_ERROR (HTTP 503)."
    )
    last_error_at: datetime | None
    circuit_opened_at: datetime | None = strawberry.field(
        description="When the circuit last opened; null while it is CLOSED."
    )
    next_probe_at: datetime | None = strawberry.field(
        description="When an OPEN circuit next lets one delivery through to probe."
    )
    amendable: bool = strawberry.field(
        description="Reviewers may amend its proposals (false: AMENDMENT_NOT_ALLOWED)."
    )
    amendments_need_proposer: bool = strawberry.field(
        description="An amended proposal waits for its agent's acceptAmendment."
    )
    amender_may_approve: bool = strawberry.field(
        description="The author of an amended revision may approve it (false: "
        "AMENDER_APPROVAL_FORBIDDEN; another person must)."
    )
    summary_field: str | None = strawberry.field(
        description="A numeric payload field bulkDecisionPreview adds up."
    )
    approval_policy: JSON | None = strawberry.field(
        resolver=_approval_policy,
        description="Rules (JSON Schema over the payload) deciding the approvals a proposal "
        "needs; the first match wins. Queues are shown resolved (queueId).",
    )
    created_at: datetime
    deadline_policy: DeadlinePolicy = strawberry.field(
        resolver=_deadline_policy,
        description="What its proposals become when nobody approves them in time.",
    )
    model: strawberry.Private[models.Target]

    @strawberry.field(
        description="Where approved actions are delivered; shown to operators and admins "
        "only (null for everyone else, and for every viewer on a target whose agents "
        "execute: agentExecutes).",
        metadata=viewer_dependent(),
    )
    async def url(self, info: strawberry.Info) -> str | None:
        viewer = await context_of(info).viewer()
        return self.model.url if sees_target_url(viewer.role) else None

    @strawberry.field
    def active(self) -> bool:
        return self.retired_at is None

    @strawberry.field(
        description="No url: its agents execute approved proposals once themselves "
        "(beginExecution, reportExecution)."
    )
    def agent_executes(self) -> bool:
        return self.model.url is None

    @strawberry.field
    async def queue(self, info: strawberry.Info) -> Queue | None:
        return await load_queue(info, self.model.queue_id)

    @classmethod
    def from_model(cls, target: models.Target) -> Target:
        return cls(
            id=strawberry.ID(target.id),
            name=target.name,
            method=target.method,
            approval_mode=_MODES[target.approval_mode],
            required_approvals=target.required_approvals,
            max_attempts=target.max_attempts,
            timeout_seconds=target.timeout_seconds,
            retired_at=target.retired_at,
            paused_at=target.paused_at,
            max_concurrency=target.max_concurrency,
            rate_per_second=target.rate_per_second,
            circuit_state=models.CircuitState(target.circuit_state),
            consecutive_failures=target.consecutive_failures,
            last_error=target.last_error,
            last_error_at=target.last_error_at,
            circuit_opened_at=target.circuit_opened_at,
            next_probe_at=target.circuit_probe_at,
            amendable=target.amendable,
            amendments_need_proposer=target.amendments_need_proposer,
            amender_may_approve=target.amender_may_approve,
            summary_field=target.summary_field,
            created_at=target.created_at,
            model=target,
        )


@strawberry.input
class RegisterTargetInput:
    name: str
    url: str | None = strawberry.field(
        default=None,
        description="Where approved actions are delivered. Leave it out for a target whose "
        "agents execute approved actions themselves, once each (beginExecution).",
    )
    input_schema: JSON = strawberry.field(description="JSON Schema every payload must meet.")
    approval_mode: models.ApprovalMode = models.ApprovalMode.HUMAN
    queue_id: strawberry.ID | None = strawberry.field(
        default=None, description="The queue approvals go to (required for HUMAN)."
    )
    method: str | None = None
    output_schema: JSON | None = None
    required_approvals: int | None = strawberry.field(
        default=None, description="Distinct reviewers who must approve (1-5, default 1)."
    )
    max_attempts: int | None = None
    timeout_seconds: int | None = None
    max_concurrency: int | None = strawberry.field(
        default=None,
        description=f"Deliveries in flight at once (1-{TARGET_MAX_CONCURRENCY_MAX}, "
        f"default {TARGET_MAX_CONCURRENCY_DEFAULT}).",
    )
    rate_per_second: float | None = strawberry.field(
        default=None,
        description=f"Deliveries started per second ({TARGET_RATE_MIN_PER_SECOND:g}-"
        f"{TARGET_RATE_MAX_PER_SECOND:g}); leave it out for no limit.",
    )
    idempotency_key: str | None = strawberry.field(
        default=None,
        description="Retrying with the same key answers the first result and creates nothing.",
    )
    amendable: bool = strawberry.field(
        default=True, description="Reviewers may amend its proposals (default true)."
    )
    amendments_need_proposer: bool = strawberry.field(
        default=False,
        description="An amendment must be accepted by the proposing agent before delivery.",
    )
    amender_may_approve: bool = strawberry.field(
        default=False,
        description="The reviewer who amended a proposal may approve that revision too "
        "(default false: another person must approve it).",
    )
    summary_field: str | None = strawberry.field(
        default=None,
        description="A numeric top-level payload field bulkDecisionPreview adds up (e.g. amount).",
    )
    approval_policy: JSON | None = strawberry.field(
        default=None,
        description='{"rules": [{"when": <JSON Schema>, "approvals": 0-5, "queue"?: slug, '
        '"name"?: text}], "default"?: {"approvals": n, "queue"?: slug}}; POLICY_INVALID '
        "if malformed.",
    )
    deadline_policy: DeadlinePolicyInput | None = None


@strawberry.type
class RegisterTargetPayload:
    target: Target
    signing_secret: str = strawberry.field(
        description="The webhook signing secret. Shown here once and never again."
    )


@strawberry.input
class RetireTargetInput:
    target_id: strawberry.ID


@strawberry.input
class PauseTargetInput:
    target_id: strawberry.ID
    reason: str = strawberry.field(description="Why deliveries are held (3-2000 characters).")
    idempotency_key: str | None = None


@strawberry.input
class ResumeTargetInput:
    target_id: strawberry.ID
    idempotency_key: str | None = None


@strawberry.input
class SetTargetLimitsInput:
    target_id: strawberry.ID
    max_concurrency: int | None = strawberry.field(
        default=None,
        description=f"Deliveries in flight at once (1-{TARGET_MAX_CONCURRENCY_MAX}); "
        "left out: unchanged.",
    )
    rate_per_second: float | None = strawberry.field(
        default=None,
        description=f"Deliveries started per second ({TARGET_RATE_MIN_PER_SECOND:g}-"
        f"{TARGET_RATE_MAX_PER_SECOND:g}); left out: unchanged.",
    )
    clear_rate: bool = strawberry.field(
        default=False, description="Remove the rate limit (not together with ratePerSecond)."
    )
    idempotency_key: str | None = None


@strawberry.input
class CloseTargetCircuitInput:
    target_id: strawberry.ID
    reason: str = strawberry.field(
        description="What was fixed, for the audit trail (3-2000 characters)."
    )
    idempotency_key: str | None = None


@strawberry.type
class TargetChangePayload:
    target: Target
    replayed: bool


@strawberry.type
class PauseTargetPayload:
    target: Target
    replayed: bool


async def load_target(info: strawberry.Info, target_id: str) -> Target:
    target = await info.context.loaders.target.load(target_id)
    assert target is not None  # proposals reference existing targets
    return Target.from_model(target)
