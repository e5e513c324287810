"""Actors and API tokens: creating them (CLI) and authenticating requests."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.constants import TOKEN_PREFIX
from signoff.errors import NotFound, Unauthenticated, ValidationFailed
from signoff.models import Actor, ApiToken, ChangeKind, Queue, QueueMembership, Role
from signoff.resolvers.access import Viewer
from signoff.resolvers.queues import membership_changed
from signoff.resolvers.transitions import Happening, record
from signoff.resolvers.work import UnitOfWork

NAME_MAX_CHARS = 200


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class NewToken:
    actor: Actor
    token: str


async def create_token(
    *, work: UnitOfWork, name: str, role: Role, queue_slugs: Sequence[str] = ()
) -> NewToken:
    """Create (or reuse by name) an actor with ``role`` and queue memberships; issue a token."""
    name = name.strip()
    if not 1 <= len(name) <= NAME_MAX_CHARS:
        raise ValidationFailed(f"name must be 1 to {NAME_MAX_CHARS} characters.", field="name")
    session = work.session
    queues = await _queues_by_slug(session, queue_slugs)
    actor = (await session.exec(select(Actor).where(Actor.name == name))).first()
    if actor is None:
        actor = Actor(name=name, role=role)
        session.add(actor)
        await session.flush()
    elif actor.role != role:
        record(
            work,
            Happening(
                entity_type="actor",
                entity_id=actor.id,
                actor_id=None,
                action="actor.role_changed",
                details={"before": actor.role, "after": role},
            ),
        )
        actor.role = role
    await _add_memberships(work, actor, queues)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    session.add(ApiToken(actor_id=actor.id, token_hash=hash_token(token)))
    record(
        work,
        Happening(
            entity_type="actor",
            entity_id=actor.id,
            actor_id=None,
            action="actor.token_created",
            details={"role": role.value, "queues": sorted(q.slug for q in queues)},
        ),
    )
    await work.commit()
    return NewToken(actor=actor, token=token)


async def _queues_by_slug(session: AsyncSession, slugs: Sequence[str]) -> list[Queue]:
    if not slugs:
        return []
    found = list((await session.exec(select(Queue).where(col(Queue.slug).in_(slugs)))).all())
    missing = sorted(set(slugs) - {q.slug for q in found})
    if missing:
        raise NotFound(f"No queue with slug {', '.join(missing)}.", slugs=missing)
    return found


async def _add_memberships(work: UnitOfWork, actor: Actor, queues: list[Queue]) -> None:
    session = work.session
    existing = set(
        (
            await session.exec(
                select(QueueMembership.queue_id).where(QueueMembership.actor_id == actor.id)
            )
        ).all()
    )
    for queue in queues:
        if queue.id not in existing:
            session.add(QueueMembership(queue_id=queue.id, actor_id=actor.id))
            record(work, membership_changed(None, queue.id, actor, ChangeKind.QUEUE_MEMBER_ADDED))


async def authenticate(*, session: AsyncSession, token: str | None) -> Viewer:
    """The viewer a bearer token belongs to, with its queues, in one query."""
    if not token:
        raise Unauthenticated()
    rows = (
        await session.exec(
            select(Actor, QueueMembership.queue_id)
            .join(ApiToken, col(ApiToken.actor_id) == col(Actor.id))
            .outerjoin(QueueMembership, col(QueueMembership.actor_id) == col(Actor.id))
            .where(ApiToken.token_hash == hash_token(token), col(ApiToken.revoked_at).is_(None))
        )
    ).all()
    if not rows:
        raise Unauthenticated("The API token is not valid.")
    actor = rows[0][0]
    # Detached, so that a rollback later in the request cannot expire who is asking.
    session.expunge(actor)
    return Viewer(actor=actor, queue_ids=frozenset(q for _, q in rows if q is not None))
