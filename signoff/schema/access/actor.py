"""The ``Actor`` type: who proposed, decided or holds something."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry

import signoff.schema.enums  # noqa: F401  (registers the enums)
from signoff import models
from signoff.schema.node import Node

if TYPE_CHECKING:
    from signoff.schema.approval.queue import Queue


@strawberry.type(description="A person, agent or integration.")
class Actor(Node):
    id: strawberry.ID
    name: str
    role: models.Role
    created_at: datetime

    @classmethod
    def from_model(cls, actor: models.Actor) -> Actor:
        return cls(
            id=strawberry.ID(actor.id),
            name=actor.name,
            role=models.Role(actor.role),
            created_at=actor.created_at,
        )


@strawberry.type(description="The authenticated actor and the queues it reviews.")
class Viewer:
    actor: Actor
    queue_ids: list[strawberry.ID]

    @strawberry.field
    async def queues(
        self, info: strawberry.Info
    ) -> list[Annotated[Queue, strawberry.lazy("signoff.schema.approval.queue")]]:
        from signoff.schema.approval.queue import Queue

        loaded = await info.context.loaders.queue.load_many(self.queue_ids)
        return [Queue.from_model(q) for q in loaded if q is not None]


async def load_actor(info: strawberry.Info, actor_id: str | None) -> Actor | None:
    if actor_id is None:
        return None
    actor = await info.context.loaders.actor.load(actor_id)
    return None if actor is None else Actor.from_model(actor)
