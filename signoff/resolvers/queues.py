"""Queues: creating them and reading the ones a viewer may see."""

from __future__ import annotations

import re

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.constants import QUEUE_CLAIM_TTL_DEFAULT_SECONDS, QUEUE_DUE_DEFAULT_SECONDS
from signoff.database import commit, rollback
from signoff.errors import AlreadyExists, Forbidden, NotFound, ValidationFailed
from signoff.models import Actor, ChangeKind, Queue, QueueMembership, Role
from signoff.resolvers import audit
from signoff.resolvers.access import Viewer, require_role
from signoff.resolvers.changes import record_change
from signoff.validation import require_range, require_text

SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


async def create_queue(
    *,
    session: AsyncSession,
    viewer: Viewer,
    slug: str,
    name: str,
    claim_ttl_seconds: int | None = None,
    default_due_seconds: int | None = None,
) -> Queue:
    """Create a queue (operators and admins)."""
    require_role(viewer, Role.OPERATOR)
    if not SLUG.match(slug):
        raise ValidationFailed(
            "slug must be lowercase letters, digits and hyphens, at most 63 characters.",
            field="slug",
        )
    queue = Queue(
        slug=slug,
        name=require_text(name, "name", 1, 200),
        claim_ttl_seconds=require_range(
            claim_ttl_seconds, "claimTtlSeconds", 30, 86_400, QUEUE_CLAIM_TTL_DEFAULT_SECONDS
        ),
        default_due_seconds=require_range(
            default_due_seconds, "defaultDueSeconds", 60, 31 * 86_400, QUEUE_DUE_DEFAULT_SECONDS
        ),
    )
    session.add(queue)
    audit.record(
        session,
        actor_id=viewer.id,
        action="queue.created",
        target_type="queue",
        target_id=queue.id,
        slug=slug,
    )
    record_change(
        session,
        kind=ChangeKind.QUEUE_CREATED,
        entity_type="queue",
        entity_id=queue.id,
        queue_id=queue.id,
        actor_id=viewer.id,
        snapshot={"slug": slug},
    )
    try:
        await session.flush()
    except IntegrityError:
        await rollback(session)
        raise AlreadyExists(f"A queue with slug {slug!r} already exists.", field="slug") from None
    await commit(session)
    return queue


async def get_queue(*, session: AsyncSession, viewer: Viewer, queue_id: str) -> Queue:
    queue = await session.get(Queue, queue_id)
    if queue is None:
        raise NotFound("No such queue.")
    if viewer.role is Role.REVIEWER and queue.id not in viewer.queue_ids:
        raise Forbidden("You are not a reviewer of this queue.")
    return queue


async def list_queues(*, session: AsyncSession, viewer: Viewer) -> list[Queue]:
    """Reviewers see their own queues; everyone else sees all of them."""
    require_role(viewer, Role.AGENT, Role.REVIEWER, Role.OPERATOR)
    stmt = select(Queue).order_by(col(Queue.slug))
    if viewer.role is Role.REVIEWER:
        stmt = stmt.where(col(Queue.id).in_(viewer.queue_ids))
    return list((await session.exec(stmt)).all())


async def add_queue_member(
    *, session: AsyncSession, viewer: Viewer, queue_id: str, actor_id: str
) -> Queue:
    """Make a reviewer a member of a queue (operators and admins); idempotent."""
    queue, actor = await _queue_and_reviewer(session, viewer, queue_id, actor_id)
    if await session.get(QueueMembership, (queue.id, actor.id)) is None:
        session.add(QueueMembership(queue_id=queue.id, actor_id=actor.id))
        _record_membership(session, viewer, queue, actor, ChangeKind.QUEUE_MEMBER_ADDED)
        await commit(session)
    return queue


async def remove_queue_member(
    *, session: AsyncSession, viewer: Viewer, queue_id: str, actor_id: str
) -> Queue:
    """Take a reviewer off a queue; its live subscriptions stop receiving the queue at once."""
    queue, actor = await _queue_and_reviewer(session, viewer, queue_id, actor_id)
    membership = await session.get(QueueMembership, (queue.id, actor.id))
    if membership is not None:
        await session.delete(membership)
        _record_membership(session, viewer, queue, actor, ChangeKind.QUEUE_MEMBER_REMOVED)
        await commit(session)
    return queue


def _record_membership(
    session: AsyncSession, viewer: Viewer, queue: Queue, actor: Actor, kind: ChangeKind
) -> None:
    """Audit a membership change and put it in the feed, where subscriptions re-check access."""
    audit.record(
        session,
        actor_id=viewer.id,
        action=kind.value,
        target_type="queue",
        target_id=queue.id,
        member_id=actor.id,
    )
    record_change(
        session,
        kind=kind,
        entity_type="actor",
        entity_id=actor.id,
        queue_id=queue.id,
        actor_id=viewer.id,
        snapshot={"role": actor.role},
    )


async def _queue_and_reviewer(
    session: AsyncSession, viewer: Viewer, queue_id: str, actor_id: str
) -> tuple[Queue, Actor]:
    require_role(viewer, Role.OPERATOR)
    queue = await session.get(Queue, queue_id)
    if queue is None:
        raise NotFound("No such queue.", field="queueId")
    actor = await session.get(Actor, actor_id)
    if actor is None:
        raise NotFound("No such actor.", field="actorId")
    if actor.role != Role.REVIEWER:
        raise ValidationFailed("Only reviewers are members of queues.", field="actorId")
    return queue, actor
