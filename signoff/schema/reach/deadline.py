"""Deadline policies in GraphQL: a target's policy, a proposal's copy, and their inputs."""

from __future__ import annotations

import strawberry

import signoff.schema.enums  # noqa: F401  (registers the enums)
from signoff import models
from signoff.resolvers.reach.deadlines import DeadlineOverride
from signoff.schema.approval.queue import Queue, load_queue


@strawberry.type(description="One step of an escalation chain.")
class EscalationStep:
    queue_id: strawberry.ID
    deadline_seconds: int = strawberry.field(
        description="The new approval deadline, counted from the escalation."
    )

    @strawberry.field
    async def queue(self, info: strawberry.Info) -> Queue | None:
        return await load_queue(info, str(self.queue_id))


@strawberry.type(description="What happens when approval is not reached by expiresAt.")
class DeadlinePolicy:
    action: models.DeadlineAction
    reason: str | None = strawberry.field(description="The reason a REJECT policy gives.")
    escalation: list[EscalationStep] = strawberry.field(
        description="The queues an ESCALATE policy hands the proposal to, in order; past "
        "the last one it expires."
    )

    @classmethod
    def of(cls, row: models.Target | models.Proposal) -> DeadlinePolicy:
        """The policy of a target, or the copy a proposal carries (row or record)."""
        return cls(
            action=models.DeadlineAction(row.deadline_action),
            reason=row.deadline_reason,
            escalation=[
                EscalationStep(
                    queue_id=strawberry.ID(step["queueId"]),
                    deadline_seconds=int(step["deadlineSeconds"]),
                )
                for step in row.escalation_chain
            ],
        )


@strawberry.input
class EscalationStepInput:
    queue_id: strawberry.ID
    deadline_seconds: int = strawberry.field(description="60 s to 31 days.")


@strawberry.input(description="A target's deadline policy (default: EXPIRE).")
class DeadlinePolicyInput:
    action: models.DeadlineAction
    reason: str | None = strawberry.field(
        default=None, description="Required for REJECT: the reason given (3-2000 characters)."
    )
    escalation: list[EscalationStepInput] | None = strawberry.field(
        default=None, description="Required for ESCALATE: 1-3 steps."
    )

    def steps(self) -> list[tuple[str, int]]:
        return [(str(step.queue_id), step.deadline_seconds) for step in self.escalation or []]


@strawberry.input(description="One proposal's deadline policy, within its target's bounds.")
class DeadlineOverrideInput:
    action: models.DeadlineAction
    reason: str | None = strawberry.field(
        default=None, description="For REJECT; the target's reason when left out."
    )
    escalation_steps: int | None = strawberry.field(
        default=None,
        description="For ESCALATE: how far along the target's chain (default: all of it).",
    )

    def to_override(self) -> DeadlineOverride:
        return DeadlineOverride(self.action, self.reason, self.escalation_steps)
