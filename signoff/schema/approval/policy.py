"""The answer of ``simulatePolicy``: which rule a payload would match, and why."""

from __future__ import annotations

import strawberry
from strawberry.scalars import JSON

from signoff.resolvers.approval import policies as approval_policies
from signoff.schema.approval.queue import Queue, load_queue
from signoff.schema.delivery.target import Target


@strawberry.type(description="One rule tried against the payload.")
class RuleEvaluation:
    index: int
    name: str | None
    matched: bool
    errors: JSON = strawberry.field(
        description="Why it did not match: [{pointer, message}] from its JSON Schema."
    )


@strawberry.type
class PolicySimulation:
    target: Target
    has_policy: bool
    rule: int | None = strawberry.field(
        description="The index of the rule that would match; null: the default (or no policy)."
    )
    rule_name: str | None
    approvals: int = strawberry.field(description="Approvals the proposal would need.")
    auto_approved: bool = strawberry.field(
        description="It would be let through without a person, attributed to the policy."
    )
    evaluations: list[RuleEvaluation] = strawberry.field(
        description="The rules tried, in order, up to the one that matched."
    )
    payload_errors: JSON = strawberry.field(
        description="How the payload breaks the target's input schema ([]: it meets it)."
    )
    queue_id: strawberry.Private[str | None]

    @strawberry.field(description="The queue the approvals would be asked in.")
    async def queue(self, info: strawberry.Info) -> Queue | None:
        return await load_queue(info, self.queue_id)

    @classmethod
    def from_simulation(cls, simulated: approval_policies.Simulation) -> PolicySimulation:
        decided = simulated.decided
        return cls(
            target=Target.from_model(simulated.target),
            has_policy=simulated.has_policy,
            rule=decided.rule,
            rule_name=decided.name,
            approvals=decided.approvals,
            auto_approved=decided.approvals == 0,
            evaluations=[
                RuleEvaluation(index=e.index, name=e.name, matched=e.matched, errors=JSON(e.errors))
                for e in simulated.tried
            ],
            payload_errors=JSON(simulated.payload_errors),
            queue_id=decided.queue_id,
        )
