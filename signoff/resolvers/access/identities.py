"""People and machine clients from the OpenID provider as Signoff actors.

An actor is found by its issuer and subject, and made on first sign-in. The directory is
the source of truth: at each sign-in, each API token and each session refresh, the role
and the queue memberships follow the groups the provider names (a change is audited and
written to the change feed like one made by an operator). The email address the provider
says it verified is kept, as a hash, with the identity: it is how a Slack user without an
explicit link is matched (``signoff.resolvers.reach.slack_users``).
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select, update
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.errors import ActorDisabled, NoMappedGroup
from signoff.models import Actor, ChangeKind, OidcIdentity, Queue, QueueMembership, Role
from signoff.models.actor import email_hash, oidc_person
from signoff.oidc_settings import ClaimMapping
from signoff.resolvers.access.actors import NAME_MAX_CHARS
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.approval.queues import membership_changed
from signoff.resolvers.core.actor_lifecycle import ACTOR_ROLE, CHANGE_ROLE
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork, WorkMaker


@dataclass(frozen=True)
class Claimed:
    """Who the provider says someone is, and what the mapping gives them."""

    issuer: str
    subject: str
    name: str
    role: Role
    queues: frozenset[str]
    # Whether the claims speak of an email at all (an access token often carries none: then
    # what an earlier sign-in stored stands), and the address's hash if it is verified.
    email_said: bool = False
    email_hash: str | None = None


def claimed(issuer: str, claims: Mapping[str, Any], mapping: ClaimMapping) -> Claimed:
    """Read a validated token's claims through the mapping; ``NO_MAPPED_GROUP`` when none
    of the groups it names is mapped."""
    name = mapping.display_name(claims)[:NAME_MAX_CHARS]
    grant = mapping.grant(claims)
    if grant is None:
        raise NoMappedGroup(
            f"The identity provider's groups for {name} give no role in Signoff; ask for a "
            "group the claim mapping names."
        )
    # Only reviewers are members of queues (signoff.resolvers.approval.queues).
    queues = grant.queues if grant.role == Role.REVIEWER else frozenset()
    said, hashed = _verified_email(claims)
    return Claimed(
        issuer=issuer,
        subject=str(claims["sub"]),
        name=name,
        role=grant.role,
        queues=queues,
        email_said=said,
        email_hash=hashed,
    )


def _verified_email(claims: Mapping[str, Any]) -> tuple[bool, str | None]:
    """Whether the claims name an email, and its hash only if ``email_verified`` is true
    (an address anyone may type into their profile would let them decide as another)."""
    address = claims.get("email")
    if not isinstance(address, str) or not address.strip():
        return False, None
    verified = claims.get("email_verified")
    # Some providers (Amazon Cognito) send the claim as a string.
    if verified is True or verified == "true":
        return True, email_hash(address)
    return True, None


@dataclass(frozen=True)
class _Current:
    identity: OidcIdentity
    actor: Actor
    queue_ids: frozenset[str]


async def sign_in(*, work: WorkMaker, who: Claimed) -> tuple[Viewer, OidcIdentity]:
    """The viewer the provider's claims stand for, with its identity row: read, and when
    the directory changed (or it is new), brought in line in one transaction."""
    async with work.sessionmaker() as session:
        current = await _current(session, who)
        wanted = await _queue_ids(session, who.queues)
    if current is not None and _in_line(current, who, wanted):
        return _viewer(current), current.identity
    try:
        current = await _bring_in_line_in(work, who)
    except IntegrityError:
        # Two first sign-ins at once: the other one made the actor; this one, once more,
        # finds it and brings it in line.
        current = await _bring_in_line_in(work, who)
    return _viewer(current), current.identity


async def _bring_in_line_in(work: WorkMaker, who: Claimed) -> _Current:
    async with work() as unit:
        current = await _bring_in_line(unit, who)
        await unit.commit()
    return current


def _in_line(current: _Current, who: Claimed, wanted: frozenset[str]) -> bool:
    return (
        current.actor.role == who.role
        and current.queue_ids == wanted
        and (not who.email_said or current.identity.email_hash == who.email_hash)
    )


def _viewer(current: _Current) -> Viewer:
    actor = current.actor
    if actor.disabled_at is not None:
        raise ActorDisabled(
            f"{actor.name} is disabled; an operator can enable it with "
            f"`signoff actor enable --name {shlex.quote(actor.name)}`."
        )
    return Viewer(actor=actor, queue_ids=current.queue_ids)


async def _current(session: AsyncSession, who: Claimed) -> _Current | None:
    found = (
        await session.exec(
            select(OidcIdentity, Actor)
            .join(Actor, col(Actor.id) == col(OidcIdentity.actor_id))
            .where(OidcIdentity.issuer == who.issuer, OidcIdentity.subject == who.subject)
        )
    ).first()
    if found is None:
        return None
    identity, actor = found
    queue_ids = (
        await session.exec(
            select(QueueMembership.queue_id).where(QueueMembership.actor_id == actor.id)
        )
    ).all()
    session.expunge(identity)
    session.expunge(actor)
    return _Current(identity=identity, actor=actor, queue_ids=frozenset(queue_ids))


async def _queue_ids(session: AsyncSession, slugs: frozenset[str]) -> frozenset[str]:
    """The ids of the mapped queues that exist (a queue may be created after the mapping)."""
    if not slugs:
        return frozenset()
    rows = await session.exec(select(Queue.id).where(col(Queue.slug).in_(sorted(slugs))))
    return frozenset(rows.all())


async def _bring_in_line(work: UnitOfWork, who: Claimed) -> _Current:
    session = work.session
    current = await _current(session, who)
    if current is None:
        # Its person is who the provider says it is; a token actor an administrator
        # linked to this issuer and subject (``signoff actor link``) is the same person.
        person = oidc_person(who.issuer, who.subject)
        actor = Actor(name=await _free_name(session, who), role=who.role, person=person)
        session.add(actor)
        await session.flush()
        identity = OidcIdentity(
            actor_id=actor.id, issuer=who.issuer, subject=who.subject, email_hash=who.email_hash
        )
        session.add(identity)
        await session.flush()
        record(work, _signed_in(actor, who))
        current = _Current(identity=identity, actor=actor, queue_ids=frozenset())
    await _keep_email(work, current.identity, who)
    actor = current.actor
    if actor.role != who.role:
        moved = await ACTOR_ROLE.move(
            work,
            CHANGE_ROLE,
            actor.id,
            actor_id=None,
            guard=col(Actor.role) == actor.role,
            values={"role": who.role.value},
            details={"before": actor.role, "after": who.role.value, "by": "directory"},
        )
        actor = moved or await ACTOR_ROLE.reread(work, actor.id)
    wanted = await _queue_ids(session, who.queues)
    for queue_id in sorted(wanted - current.queue_ids):
        session.add(QueueMembership(queue_id=queue_id, actor_id=actor.id))
        record(work, membership_changed(None, queue_id, actor, ChangeKind.QUEUE_MEMBER_ADDED))
    for queue_id in sorted(current.queue_ids - wanted):
        membership = await session.get(QueueMembership, (queue_id, actor.id))
        if membership is not None:
            await session.delete(membership)
            record(work, membership_changed(None, queue_id, actor, ChangeKind.QUEUE_MEMBER_REMOVED))
    await session.flush()
    return _Current(identity=current.identity, actor=actor, queue_ids=wanted)


async def _keep_email(work: UnitOfWork, identity: OidcIdentity, who: Claimed) -> None:
    """Store the verified email the claims name (or forget it, when they name one the
    provider did not verify); claims silent about email leave it as it was."""
    if not who.email_said or identity.email_hash == who.email_hash:
        return
    await work.session.exec(
        update(OidcIdentity)
        .where(col(OidcIdentity.id) == identity.id)
        .values(email_hash=who.email_hash)
    )
    identity.email_hash = who.email_hash


async def _free_name(session: AsyncSession, who: Claimed) -> str:
    """The display name, or with a short mark of the subject when another actor has it."""
    taken = (await session.exec(select(Actor.id).where(Actor.name == who.name))).first()
    if taken is None:
        return who.name
    mark = hashlib.sha256(f"{who.issuer} {who.subject}".encode()).hexdigest()[:8]
    return f"{who.name[: NAME_MAX_CHARS - 11]} ({mark})"


def _signed_in(actor: Actor, who: Claimed) -> Happening:
    return Happening(
        entity_type="actor",
        entity_id=actor.id,
        actor_id=None,
        action="actor.signed_in_first",
        details={"issuer": who.issuer, "role": who.role.value},
    )


@dataclass(frozen=True)
class MappingRead:
    """The claim mapping as an admin reads it, with the queues it names that exist."""

    mapping: ClaimMapping
    existing_queues: frozenset[str]


async def read_claim_mapping(
    *, session: AsyncSession, viewer: Viewer, mapping: ClaimMapping | None
) -> MappingRead | None:
    """Admins: the sign-in claim mapping this process started with (read-only: it is a file,
    read when the process starts); ``None`` when sign-in with a provider is not set up."""
    require_role(viewer, Role.ADMIN)
    if mapping is None:
        return None
    named = {slug for grant in mapping.grants for slug in grant.queues}
    found = (await session.exec(select(Queue.slug).where(col(Queue.slug).in_(named)))).all()
    return MappingRead(mapping=mapping, existing_queues=frozenset(found))
