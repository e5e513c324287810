"""The ``Queue`` type and its inputs."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry

from signoff import models
from signoff.resolvers.approval.queues import list_queue_members
from signoff.resolvers.reach.channels import list_notification_channels
from signoff.schema.context import context_of, viewer_dependent
from signoff.schema.node import Node

if TYPE_CHECKING:
    from signoff.schema.access.actor import Actor
    from signoff.schema.reach.notification import NotificationChannel


@strawberry.type(description="Where human tasks wait for reviewers.")
class Queue(Node):
    id: strawberry.ID
    slug: str
    name: str
    claim_ttl_seconds: int
    default_due_seconds: int
    reminder_percents: list[int] = strawberry.field(
        description="When task.due_soon is sent: percentages of a task's time to its due time."
    )
    created_at: datetime

    @strawberry.field(
        description="Operators and admins: the queue's reviewers, by name.",
        metadata=viewer_dependent(),
    )
    async def members(
        self, info: strawberry.Info
    ) -> list[Annotated[Actor, strawberry.lazy("signoff.schema.access.actor")]]:
        from signoff.schema.access.actor import Actor

        ctx = context_of(info)
        viewer = await ctx.viewer()
        async with ctx.read() as session:
            rows = await list_queue_members(session=session, viewer=viewer, queue_id=self.id)
        return [Actor.from_model(row) for row in rows]

    @strawberry.field(
        description="Operators and admins: where the queue's notifications go, oldest first; "
        "removed channels too if `removed`.",
        metadata=viewer_dependent(),
    )
    async def notification_channels(
        self, info: strawberry.Info, removed: bool = False
    ) -> list[Annotated[NotificationChannel, strawberry.lazy("signoff.schema.reach.notification")]]:
        from signoff.schema.reach.notification import NotificationChannel

        ctx = context_of(info)
        viewer = await ctx.viewer()
        async with ctx.read() as session:
            rows = await list_notification_channels(
                session=session, viewer=viewer, queue_id=self.id, removed=removed
            )
        return [NotificationChannel.from_model(row) for row in rows]

    @classmethod
    def from_model(cls, queue: models.Queue) -> Queue:
        return cls(
            id=strawberry.ID(queue.id),
            slug=queue.slug,
            name=queue.name,
            claim_ttl_seconds=queue.claim_ttl_seconds,
            default_due_seconds=queue.default_due_seconds,
            reminder_percents=list(queue.reminder_percents),
            created_at=queue.created_at,
        )


@strawberry.input
class CreateQueueInput:
    slug: str
    name: str
    claim_ttl_seconds: int | None = strawberry.field(
        default=None, description="How long a claim lasts (30 s to 1 day; default 15 min)."
    )
    default_due_seconds: int | None = strawberry.field(
        default=None, description="Due time of new tasks (60 s to 31 days; default 24 h)."
    )
    idempotency_key: str | None = strawberry.field(
        default=None,
        description="Retrying with the same key answers the first result and creates nothing.",
    )
    reminder_percents: list[int] | None = strawberry.field(
        default=None,
        description="Send task.due_soon at these percentages of a task's time to its due "
        "time (1-99, at most 5; default none).",
    )


@strawberry.input
class QueueMemberInput:
    queue_id: strawberry.ID
    actor_id: strawberry.ID


async def load_queue(info: strawberry.Info, queue_id: str | None) -> Queue | None:
    if queue_id is None:
        return None
    queue = await info.context.loaders.queue.load(queue_id)
    return None if queue is None else Queue.from_model(queue)


@strawberry.type(description="How a queue is keeping up.")
class QueueStats:
    open_items: int = strawberry.field(description="Tasks waiting: open or claimed.")
    oldest_age_seconds: int | None = strawberry.field(
        description="How long the longest-waiting task has waited; null when none waits."
    )
    past_sla: int = strawberry.field(description="Waiting tasks past their due time.")
    median_decision_seconds: float | None = strawberry.field(
        description="Median time from task to decision over the window; null if none."
    )
    decided_in_window: int
    window_seconds: int
