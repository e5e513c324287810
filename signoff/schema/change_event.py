"""The ``ChangeEvent`` type: one entry of the change feed, as subscribers receive it."""

from __future__ import annotations

from datetime import datetime
from typing import cast

import strawberry
from strawberry.scalars import JSON

from signoff.events import Change
from signoff.internals import raw_info
from signoff.models import HumanTask as TaskRow
from signoff.models import Proposal as ProposalRow
from signoff.resolvers.feed.subscriptions import encode_cursor
from signoff.schema.access.actor import Actor, load_actor
from signoff.schema.approval.proposal import Proposal, prime_relations, warm_proposal_fully
from signoff.schema.approval.queue import Queue, load_queue
from signoff.schema.approval.task import HumanTask
from signoff.schema.context import context_of
from signoff.schema.drafts.draft import Draft
from signoff.schema.lookahead import selected


@strawberry.type(description="A change to a queue, proposal, task, incident or draft.")
class ChangeEvent:
    cursor: str = strawberry.field(
        description="Opaque; pass it as `after` to resume right after this event."
    )
    kind: str = strawberry.field(description="For example proposal.approved, task.claimed.")
    entity_type: str
    entity_id: strawberry.ID
    entity_version: int | None = strawberry.field(
        description="The entity's version after this change: of two events of one proposal, "
        "task or incident, the higher version is the newer state. Null for queues, targets "
        "and actors, and for events recorded before versions existed."
    )
    queue_id: strawberry.ID | None
    proposal_id: strawberry.ID | None
    occurred_at: datetime
    snapshot: JSON = strawberry.field(description="A few fields of the entity as it changed.")
    change: strawberry.Private[Change]

    @strawberry.field(description="Who made the change; null for the system.")
    async def actor(self, info: strawberry.Info) -> Actor | None:
        return await load_actor(info, self.change.actor_id)

    @strawberry.field
    async def queue(self, info: strawberry.Info) -> Queue | None:
        return await load_queue(info, self.change.queue_id)

    @strawberry.field(description="The proposal this event is about, as it is now.")
    async def proposal(self, info: strawberry.Info) -> Proposal | None:
        loaders = context_of(info).feed_loaders
        if self.change.proposal_id is None or loaders is None:
            return None
        row = self.change.written.get("proposal") or await loaders.proposal.load(
            (self.change.proposal_id, self.change.cursor)
        )
        if row is None or not _shown(info, row):
            return None
        # The events of one write carry one record: its frames complete it once.
        shared = context_of(info).shared_values
        done = None if shared is None else shared.take(row, raw_info(info))
        if done is not None:
            return cast(Proposal, done)  # answered as it is (``PlainFieldExecutor``)
        relations = self.change.written.get("relations")
        if relations is not None:
            prime_relations(info, row, relations)
        # A frame is executed for one event: its proposal's relations in one read (none
        # where its writer handed them over).
        await warm_proposal_fully(info, row, selected(info, depth=2))
        return Proposal.from_model(row)

    @strawberry.field(description="The task this event is about, as it is now.")
    async def task(self, info: strawberry.Info) -> HumanTask | None:
        loaders = context_of(info).feed_loaders
        if self.change.entity_type != "task" or loaders is None:
            return None
        row = self.change.written.get("task") or await loaders.task.load(
            (self.change.entity_id, self.change.cursor)
        )
        return None if row is None or not _shown(info, row) else HumanTask.from_model(row)

    @strawberry.field(
        description=(
            "The draft this event is about, as it is now (draftEvents only; its session "
            "key is the subscriber's own)."
        )
    )
    async def draft(self, info: strawberry.Info) -> Draft | None:
        loaders = context_of(info).feed_loaders
        if self.change.entity_type != "draft" or loaders is None:
            return None
        row = self.change.written.get("draft") or await loaders.draft.load(
            (self.change.entity_id, self.change.cursor)
        )
        return None if row is None else Draft.from_model(row)

    @classmethod
    def from_change(cls, change: Change) -> ChangeEvent:
        return cls(
            cursor=encode_cursor(change.cursor),
            kind=change.kind,
            entity_type=change.entity_type,
            entity_id=strawberry.ID(change.entity_id),
            entity_version=change.entity_version,
            queue_id=None if change.queue_id is None else strawberry.ID(change.queue_id),
            proposal_id=None if change.proposal_id is None else strawberry.ID(change.proposal_id),
            occurred_at=change.occurred_at,
            snapshot=cast(JSON, change.snapshot),
            change=change,
        )


def _shown(info: strawberry.Info, row: ProposalRow | TaskRow) -> bool:
    """Whether a frame may carry ``row`` as it is now: not once it has moved (escalated)
    to a queue the group's subscribers do not review."""
    visibility = context_of(info).feed_visibility
    return visibility is None or visibility.sees_object_in(row.queue_id)
