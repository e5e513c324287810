"""Actors and API tokens: creating, revoking, re-roling, disabling and enabling them (the
CLI; admins create, list and revoke tokens in GraphQL too); authenticating requests.

A change to what an actor may do (its role, a revocation, disabling or enabling it) is
audited and written to the change feed in its transaction (``ACCESS_KINDS``): live
subscriptions read the actor's viewer again there, in feed order, before any later event
reaches them.
"""

from __future__ import annotations

import hashlib
import secrets
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.constants import TOKEN_PREFIX
from signoff.database import SessionMaker
from signoff.errors import (
    ActorDisabled,
    NotFound,
    RoleConflict,
    Unauthenticated,
    ValidationFailed,
)
from signoff.models import Actor, ApiToken, ChangeKind, Queue, QueueMembership, Role
from signoff.resolvers.access.eligibility import end_handed_access
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.approval.queues import membership_changed
from signoff.resolvers.core.actor_lifecycle import (
    ACTOR_ACCESS,
    ACTOR_ROLE,
    API_TOKEN,
    CHANGE_ROLE,
    DISABLE,
    ENABLE,
    REVOKE_TOKEN,
    announce_revoked,
)
from signoff.resolvers.core.pagination import Equals, Order, Page, Where, paginate
from signoff.resolvers.core.rows import require_row
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork

NAME_MAX_CHARS = 200
# By name: an operator looking for someone's id reads the list as a directory.
ACTOR_ORDER = (Order(col(Actor.name)), Order(col(Actor.id)))


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class NewToken:
    actor: Actor
    token: str
    api_token: ApiToken


async def create_token(
    *,
    work: UnitOfWork,
    name: str,
    role: Role | None = None,
    queue_slugs: Sequence[str] = (),
    viewer: Viewer | None = None,
) -> NewToken:
    """Issue a token for the actor named, made with ``role`` if new; add queue memberships.

    An existing actor keeps its role: ``role``, if given, must be the one it has, so a
    name reused by mistake cannot re-role an actor whose tokens are in use elsewhere.
    ``set_actor_role`` changes a role on purpose. ``viewer``: an admin asking through the
    API (audited as theirs); ``None``: the command line, which has the database's rights.
    """
    by = _admin_id(viewer)
    name = name.strip()
    if not 1 <= len(name) <= NAME_MAX_CHARS:
        raise ValidationFailed(f"name must be 1 to {NAME_MAX_CHARS} characters.", field="name")
    session = work.session
    queues = await _queues_by_slug(session, queue_slugs)
    actor = (await session.exec(select(Actor).where(Actor.name == name))).first()
    if actor is None:
        actor = await _new_actor(session, name, role)
    elif role is not None and actor.role != role:
        raise RoleConflict(
            f"{name} is {role_phrase(Role(actor.role))}, not {role_phrase(role)}; nothing was "
            "changed. To change the role, run "
            f"`signoff actor set-role --name {shlex.quote(name)} --role {role.value}`.",
            field="role",
        )
    await _add_memberships(work, actor, queues, by)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken(actor_id=actor.id, token_hash=hash_token(token))
    session.add(row)
    record(
        work,
        _about(
            actor,
            "actor.token_created",
            by,
            role=Role(actor.role).value,
            queues=sorted(q.slug for q in queues),
        ),
    )
    await work.commit()
    return NewToken(actor=actor, token=token, api_token=row)


def role_phrase(role: Role) -> str:
    """``a reviewer``, ``an operator``: a role as a sentence names it."""
    return f"{'an' if role.value[0] in 'aeiou' else 'a'} {role.value}"


async def _new_actor(session: AsyncSession, name: str, role: Role | None) -> Actor:
    if role is None:
        raise ValidationFailed(f"{name} is a new actor: give it a role with --role.", field="role")
    actor = Actor(name=name, role=role)
    session.add(actor)
    await session.flush()
    return actor


async def _queues_by_slug(session: AsyncSession, slugs: Sequence[str]) -> list[Queue]:
    if not slugs:
        return []
    found = list((await session.exec(select(Queue).where(col(Queue.slug).in_(slugs)))).all())
    missing = sorted(set(slugs) - {q.slug for q in found})
    if missing:
        raise NotFound(f"No queue with slug {', '.join(missing)}.", slugs=missing)
    return found


async def _add_memberships(
    work: UnitOfWork, actor: Actor, queues: list[Queue], by: str | None
) -> None:
    existing = set(
        (
            await work.session.exec(
                select(QueueMembership.queue_id).where(QueueMembership.actor_id == actor.id)
            )
        ).all()
    )
    for queue in queues:
        if queue.id not in existing:
            work.session.add(QueueMembership(queue_id=queue.id, actor_id=actor.id))
            record(work, membership_changed(by, queue.id, actor, ChangeKind.QUEUE_MEMBER_ADDED))


def _about(actor: Actor, action: str, by: str | None, **details: object) -> Happening:
    """An audited change to an actor, by an admin or from the command line (``by`` None)."""
    return Happening(
        entity_type="actor", entity_id=actor.id, actor_id=by, action=action, details=details
    )


def _admin_id(viewer: Viewer | None) -> str | None:
    """Who acts on tokens: an admin through the API, or the command line (``None``)."""
    if viewer is None:
        return None
    require_role(viewer, Role.ADMIN)
    return viewer.id


@dataclass(frozen=True)
class RevokedTokens:
    """The actor whose tokens were revoked, and the ids of the tokens this call revoked."""

    actor: Actor
    token_ids: list[str]


async def revoke_token(*, work: UnitOfWork, token: str) -> RevokedTokens:
    """Revoke one token, found by its value; it stops authenticating at once."""
    session = work.session
    found = (
        await session.exec(select(ApiToken).where(ApiToken.token_hash == hash_token(token.strip())))
    ).first()
    if found is None:
        raise NotFound("No token matches; nothing was revoked.")
    actor = await _token_actor(session, found.actor_id)
    return await _revoke(work, actor, col(ApiToken.id) == found.id)


async def revoke_actor_tokens(*, work: UnitOfWork, name: str) -> RevokedTokens:
    """Revoke every token of the actor named (the actor and its role stay)."""
    actor = await _actor_named(work.session, name)
    return await _revoke(work, actor, col(ApiToken.actor_id) == actor.id)


async def revoke_token_by_id(*, work: UnitOfWork, viewer: Viewer, token_id: str) -> ApiToken:
    """Admins: revoke one token by its id (the API never sees a token's value again); a
    revoked token is answered as it is."""
    by = _admin_id(viewer)
    found = await require_row(work.session, ApiToken, token_id, "No such token.", field="tokenId")
    actor = await _token_actor(work.session, found.actor_id)
    await _revoke(work, actor, col(ApiToken.id) == found.id, by)
    return await require_row(work.session, ApiToken, token_id, "No such token.", refresh=True)


async def list_tokens(
    *, session: AsyncSession, viewer: Viewer, actor_id: str | None = None, revoked: bool = False
) -> list[ApiToken]:
    """Admins: API tokens, newest first, without their values (only hashes are stored);
    live ones only unless ``revoked``."""
    require_role(viewer, Role.ADMIN)
    stmt = select(ApiToken).order_by(col(ApiToken.created_at).desc(), col(ApiToken.id))
    if actor_id is not None:
        stmt = stmt.where(col(ApiToken.actor_id) == actor_id)
    if not revoked:
        stmt = stmt.where(col(ApiToken.revoked_at).is_(None))
    return list((await session.exec(stmt)).all())


async def _token_actor(session: AsyncSession, actor_id: str) -> Actor:
    actor = await session.get(Actor, actor_id)
    assert actor is not None  # tokens reference their actor
    return actor


async def _revoke(
    work: UnitOfWork, actor: Actor, which: ColumnElement[bool], by: str | None = None
) -> RevokedTokens:
    """One compare-and-set: of two revocations at once, each token is revoked and audited
    by one of them."""
    revoked = await API_TOKEN.move_where(work, REVOKE_TOKEN, which, actor_id=by)
    token_ids = sorted(token.id for token in revoked)
    if token_ids:
        await announce_revoked(work, actor, token_ids, by)
        await end_handed_access(work, actor, "tokens_revoked")
    await work.commit()
    return RevokedTokens(actor=actor, token_ids=token_ids)


@dataclass(frozen=True)
class RoleChange:
    actor: Actor
    before: Role


async def set_actor_role(*, work: UnitOfWork, name: str, role: Role) -> RoleChange:
    """Give the actor named another role; its tokens act with the new role from now on.

    A compare-and-set on the role it read: a concurrent change to the same role finds it
    done and writes nothing; to another role, it is refused (``ROLE_CONFLICT``)."""
    actor = await _actor_named(work.session, name)
    before = Role(actor.role)
    if before == role:
        return RoleChange(actor=actor, before=before)
    moved = await ACTOR_ROLE.move(
        work,
        CHANGE_ROLE,
        actor.id,
        actor_id=None,
        guard=col(Actor.role) == before.value,
        values={"role": role.value},
        details={"before": before.value, "after": role.value},
    )
    if moved is None:
        current = await ACTOR_ROLE.reread(work, actor.id)
        if Role(current.role) == role:
            return RoleChange(actor=current, before=role)
        raise RoleConflict(
            f"{current.name} became {role_phrase(Role(current.role))} just now; nothing was "
            "changed.",
            field="role",
        )
    await work.commit()
    return RoleChange(actor=moved, before=before)


@dataclass(frozen=True)
class Switched:
    """The actor named, and whether this call disabled (or enabled) it: ``False`` when it
    was so already and nothing was written."""

    actor: Actor
    changed: bool


async def disable_actor(*, work: UnitOfWork, name: str) -> Switched:
    """Refuse every token of the actor named until it is enabled again (the tokens are
    kept); the event this writes tells its live subscriptions to read it again."""
    return await _switch(work, name, disable=True)


async def enable_actor(*, work: UnitOfWork, name: str) -> Switched:
    """Let the tokens of the actor named authenticate again (a revoked one stays revoked)."""
    return await _switch(work, name, disable=False)


async def _switch(work: UnitOfWork, name: str, *, disable: bool) -> Switched:
    """One compare-and-set: of two callers at once, one changes the actor and writes its
    audit row and event; the other finds it done and writes nothing."""
    actor = await _actor_named(work.session, name)
    switched = await ACTOR_ACCESS.move(
        work, DISABLE if disable else ENABLE, actor.id, actor_id=None
    )
    if switched is None:
        return Switched(actor=await ACTOR_ACCESS.reread(work, actor.id), changed=False)
    if disable:
        await end_handed_access(work, switched, "actor_disabled")
    await work.commit()
    return Switched(actor=switched, changed=True)


async def list_actors(
    *,
    session: AsyncSession,
    viewer: Viewer,
    role: Role | None = None,
    name: str | None = None,
    first: int | None = None,
    after: str | None = None,
) -> Page[Actor]:
    """Actors by name, for operators who need one's id (a reviewer to hand a task or a
    link to, a person to prepare a draft for)."""
    require_role(viewer, Role.OPERATOR)
    where: list[Where] = []
    if role is not None:
        where.append(Equals(col(Actor.role), role.value))
    if name is not None:
        where.append(Equals(col(Actor.name), name.strip()))
    return await paginate(session, Actor, where, ACTOR_ORDER, first=first, after=after)


async def has_actors(*, session: AsyncSession) -> bool:
    """Whether anyone has been given access yet: a fresh installation has no one."""
    return (await session.exec(select(Actor.id).limit(1))).first() is not None


async def _actor_named(session: AsyncSession, name: str) -> Actor:
    actor = (await session.exec(select(Actor).where(Actor.name == name.strip()))).first()
    if actor is None:
        raise NotFound(f"No actor is named {name.strip()}.")
    return actor


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
    if actor.disabled_at is not None:
        raise ActorDisabled(
            f"{actor.name} is disabled; an operator can enable it with "
            f"`signoff actor enable --name {shlex.quote(actor.name)}`."
        )
    # Detached, so that a rollback later in the request cannot expire who is asking.
    session.expunge(actor)
    return Viewer(actor=actor, queue_ids=frozenset(q for _, q in rows if q is not None))


async def authenticate_in(sessionmaker: SessionMaker, token: str | None) -> Viewer:
    """``authenticate`` in a read session of its own, closed before it returns: a caller's
    own transaction (on SQLite, a snapshot from before its mutation) is never reused."""
    async with sessionmaker() as session:
        return await authenticate(session=session, token=token)
