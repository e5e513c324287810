"""Reassignment and delegation in GraphQL: inputs, the delegation and the payloads."""

from __future__ import annotations

from datetime import datetime

import strawberry

from signoff import models
from signoff.schema.access.actor import Actor, load_actor
from signoff.schema.approval.task import HumanTask
from signoff.schema.node import Node


@strawberry.input
class ReassignTaskInput:
    task_id: strawberry.ID
    assignee_id: strawberry.ID = strawberry.field(
        description="A reviewer of the task's queue; while they are away, their delegate."
    )
    reason: str | None = None


@strawberry.type
class ReassignTaskPayload:
    task: HumanTask
    offered_to_id: strawberry.Private[str]
    delegated: bool = strawberry.field(
        description="The one it was offered to is away: their delegate holds it."
    )

    @strawberry.field
    async def offered_to(self, info: strawberry.Info) -> Actor:
        actor = await load_actor(info, self.offered_to_id)
        assert actor is not None
        return actor


@strawberry.input
class SetDelegateInput:
    delegate_id: strawberry.ID
    ends_at: datetime
    starts_at: datetime | None = strawberry.field(default=None, description="Default: now.")


@strawberry.type(description="Who takes the tasks offered to a reviewer while they are away.")
class Delegation(Node):
    id: strawberry.ID
    starts_at: datetime
    ends_at: datetime
    delegate_id: strawberry.Private[str]
    actor_id: strawberry.Private[str]

    @strawberry.field
    async def delegate(self, info: strawberry.Info) -> Actor:
        actor = await load_actor(info, self.delegate_id)
        assert actor is not None
        return actor

    @strawberry.field(description="The reviewer who is away.")
    async def actor(self, info: strawberry.Info) -> Actor:
        actor = await load_actor(info, self.actor_id)
        assert actor is not None
        return actor

    @classmethod
    def from_model(cls, delegation: models.Delegation) -> Delegation:
        return cls(
            id=strawberry.ID(delegation.id),
            starts_at=delegation.starts_at,
            ends_at=delegation.ends_at,
            delegate_id=delegation.delegate_id,
            actor_id=delegation.actor_id,
        )
