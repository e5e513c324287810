"""Queues: creating them and reading the ones a viewer may see."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.constants import QUEUE_CLAIM_TTL_DEFAULT_SECONDS, QUEUE_DUE_DEFAULT_SECONDS
from signoff.errors import AlreadyExists, NotFound, ValidationFailed
from signoff.models import Actor, ChangeKind, Queue, QueueMembership, Role
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.core import idempotency
from signoff.resolvers.core.rows import require_row
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.reach.reminders import checked_percents
from signoff.validation import require_range, require_text

SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


async def create_queue(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    slug: str,
    name: str,
    claim_ttl_seconds: int | None = None,
    default_due_seconds: int | None = None,
    idempotency_key: str | None = None,
    reminder_percents: Sequence[int] | None = None,
) -> Queue:
    """Create a queue (operators and admins); a retry under the same key creates nothing."""
    require_role(viewer, Role.OPERATOR)
    request: dict[str, Any] = {
        "slug": slug,
        "name": name,
        "claim_ttl_seconds": claim_ttl_seconds,
        "default_due_seconds": default_due_seconds,
        "reminder_percents": None if reminder_percents is None else list(reminder_percents),
    }
    queue, _ = await idempotency.once(
        work,
        viewer,
        idempotency.Keyed.of("createQueue", idempotency_key, request),
        lambda: _create_queue(work, viewer, **request),
        idempotency.Kept.row("queue_id", lambda queue: queue.id, _stored_queue),
    )
    return queue


async def _create_queue(
    work: UnitOfWork,
    viewer: Viewer,
    *,
    slug: str,
    name: str,
    claim_ttl_seconds: int | None,
    default_due_seconds: int | None,
    reminder_percents: Sequence[int] | None,
) -> Queue:
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
        reminder_percents=checked_percents(reminder_percents),
    )
    await work.add_unique(
        queue, AlreadyExists(f"A queue with slug {slug!r} already exists.", field="slug")
    )
    record(
        work,
        Happening(
            entity_type="queue",
            entity_id=queue.id,
            actor_id=viewer.id,
            action="queue.created",
            kind=ChangeKind.QUEUE_CREATED,
            details={"slug": slug, "reminder_percents": queue.reminder_percents},
            queue_id=queue.id,
            snapshot={"slug": slug},
        ),
    )
    return queue


async def _stored_queue(work: UnitOfWork, queue_id: str) -> Queue:
    return await require_row(work.session, Queue, queue_id, "No such queue.")


async def get_queue(*, session: AsyncSession, viewer: Viewer, queue_id: str) -> Queue:
    """A queue the viewer may read; a reviewer's question about another queue is answered
    as one about a queue that does not exist (``NOT_FOUND``), so ids tell nothing."""
    queue = await session.get(Queue, queue_id)
    if queue is None or (viewer.role is Role.REVIEWER and queue.id not in viewer.queue_ids):
        raise NotFound("No such queue.")
    return queue


async def list_queues(*, session: AsyncSession, viewer: Viewer) -> list[Queue]:
    """Reviewers see their own queues; everyone else sees all of them."""
    require_role(viewer, Role.AGENT, Role.REVIEWER, Role.OPERATOR)
    stmt = select(Queue).order_by(col(Queue.slug))
    if viewer.role is Role.REVIEWER:
        stmt = stmt.where(col(Queue.id).in_(viewer.queue_ids))
    return list((await session.exec(stmt)).all())


async def list_queue_members(
    *, session: AsyncSession, viewer: Viewer, queue_id: str
) -> list[Actor]:
    """Operators and admins: the reviewers of a queue, by name."""
    require_role(viewer, Role.OPERATOR)
    await require_row(session, Queue, queue_id, "No such queue.", field="queueId")
    stmt = (
        select(Actor)
        .join(QueueMembership, col(QueueMembership.actor_id) == col(Actor.id))
        .where(col(QueueMembership.queue_id) == queue_id)
        .order_by(col(Actor.name), col(Actor.id))
    )
    return list((await session.exec(stmt)).all())


async def add_queue_member(
    *, work: UnitOfWork, viewer: Viewer, queue_id: str, actor_id: str
) -> Queue:
    """Make a reviewer a member of a queue (operators and admins); idempotent."""
    session = work.session
    queue, actor = await _queue_and_reviewer(session, viewer, queue_id, actor_id)
    if await session.get(QueueMembership, (queue.id, actor.id)) is None:
        session.add(QueueMembership(queue_id=queue.id, actor_id=actor.id))
        record(work, membership_changed(viewer.id, queue.id, actor, ChangeKind.QUEUE_MEMBER_ADDED))
        await work.commit()
    return queue


async def remove_queue_member(
    *, work: UnitOfWork, viewer: Viewer, queue_id: str, actor_id: str
) -> Queue:
    """Take a reviewer off a queue; its live subscriptions stop receiving the queue at once."""
    session = work.session
    queue, actor = await _queue_and_reviewer(session, viewer, queue_id, actor_id)
    membership = await session.get(QueueMembership, (queue.id, actor.id))
    if membership is not None:
        await session.delete(membership)
        record(
            work, membership_changed(viewer.id, queue.id, actor, ChangeKind.QUEUE_MEMBER_REMOVED)
        )
        await work.commit()
    return queue


def membership_changed(by: str | None, queue_id: str, actor: Actor, kind: ChangeKind) -> Happening:
    """A membership change: audited, and in the feed, where subscriptions re-check access."""
    return Happening(
        entity_type="actor",
        entity_id=actor.id,
        actor_id=by,
        action=kind.value,
        kind=kind,
        details={"queue_id": queue_id, "member_id": actor.id},
        queue_id=queue_id,
        snapshot={"role": actor.role},
    )


async def _queue_and_reviewer(
    session: AsyncSession, viewer: Viewer, queue_id: str, actor_id: str
) -> tuple[Queue, Actor]:
    require_role(viewer, Role.OPERATOR)
    queue = await require_row(session, Queue, queue_id, "No such queue.", field="queueId")
    actor = await require_row(session, Actor, actor_id, "No such actor.", field="actorId")
    if actor.role != Role.REVIEWER:
        raise ValidationFailed("Only reviewers are members of queues.", field="actorId")
    return queue, actor
