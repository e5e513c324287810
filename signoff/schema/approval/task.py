"""The ``HumanTask`` type and the task inputs and payloads."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from strawberry.scalars import JSON

import signoff.schema.enums  # noqa: F401  (registers the enums)
from signoff import clock, models
from signoff.models.task import effective_state
from signoff.schema.access.actor import Actor, load_actor
from signoff.schema.approval.queue import Queue, load_queue
from signoff.schema.context import context_of, viewer_dependent
from signoff.schema.node import Node

if TYPE_CHECKING:
    from signoff.schema.approval.proposal import Proposal


# A task's JSON is decoded when a selection asks for it (``signoff.models.records``):
# a page of proposals with their tasks shows the tasks' state, rarely their context.
def _context(root: HumanTask) -> JSON:
    return JSON(root.model.context)


def _response_schema(root: HumanTask) -> JSON:
    return JSON(root.model.response_schema)


def _response(root: HumanTask) -> JSON | None:
    return JSON(root.model.response)  # JSON(None) is None


@strawberry.type(description="A unit of human work in a queue.")
class HumanTask(Node):
    id: strawberry.ID
    kind: str
    title: str
    context: JSON = strawberry.field(resolver=_context)
    response_schema: JSON = strawberry.field(resolver=_response_schema)
    response: JSON | None = strawberry.field(resolver=_response)
    priority: int
    due_at: datetime
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None
    model: strawberry.Private[models.HumanTask]

    @strawberry.field(description="A claim whose lease has lapsed reads as OPEN.")
    def state(self) -> models.TaskState:
        return effective_state(self.model, clock.now())

    @strawberry.field
    def claim_expires_at(self) -> datetime | None:
        return None if self.state() != models.TaskState.CLAIMED else self.model.claim_expires_at

    @strawberry.field
    async def assignee(self, info: strawberry.Info) -> Actor | None:
        if self.state() != models.TaskState.CLAIMED:
            return None
        return await load_actor(info, self.model.assignee_id)

    @strawberry.field(
        description="Whether you hold this task's claim.", metadata=viewer_dependent()
    )
    async def claimed_by_me(self, info: strawberry.Info) -> bool:
        viewer = await context_of(info).viewer()
        return self.state() == models.TaskState.CLAIMED and self.model.assignee_id == viewer.id

    @strawberry.field
    async def completed_by(self, info: strawberry.Info) -> Actor | None:
        return await load_actor(info, self.model.completed_by_id)

    @strawberry.field
    async def queue(self, info: strawberry.Info) -> Queue:
        queue = await load_queue(info, self.model.queue_id)
        assert queue is not None
        return queue

    @strawberry.field
    async def proposal(
        self, info: strawberry.Info
    ) -> Annotated[Proposal, strawberry.lazy("signoff.schema.approval.proposal")] | None:
        from signoff.schema.approval.proposal import Proposal

        if self.model.proposal_id is None:
            return None
        proposal = await info.context.loaders.proposal.load(self.model.proposal_id)
        return None if proposal is None else Proposal.from_model(proposal)

    @classmethod
    def from_model(cls, t: models.HumanTask) -> HumanTask:
        return cls(
            id=strawberry.ID(t.id),
            kind=t.kind,
            title=t.title,
            priority=t.priority,
            due_at=t.due_at,
            created_at=t.created_at,
            updated_at=t.updated_at,
            completed_at=t.completed_at,
            model=t,
        )


@strawberry.input
class CreateTaskInput:
    queue_id: strawberry.ID
    kind: str
    title: str
    context: JSON | None = None
    response_schema: JSON | None = strawberry.field(
        default=None, description="JSON Schema the response must meet (default: any object)."
    )
    priority: int | None = strawberry.field(
        default=None, description="Higher comes first (-1000 to 1000, default 0)."
    )
    due_in_seconds: int | None = None
    idempotency_key: str | None = strawberry.field(
        default=None,
        description="Retrying with the same key answers the first result and creates nothing.",
    )


@strawberry.input
class ClaimTaskInput:
    task_id: strawberry.ID


@strawberry.input
class ReleaseTaskInput:
    task_id: strawberry.ID
    reason: str | None = None


@strawberry.input
class CompleteTaskInput:
    task_id: strawberry.ID
    response: JSON
    idempotency_key: str | None = None


@strawberry.type
class CompleteTaskPayload:
    task: HumanTask
    replayed: bool
