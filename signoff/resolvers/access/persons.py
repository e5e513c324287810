"""Persons: actors linked as one person (docs/design.md section 10), who then have one
vote in a quorum and are one self for four eyes (``signoff.resolvers.approval.four_eyes``).

An actor made by sign-in is the person its issuer and subject name. An administrator links
a token actor to that person (``signoff actor link``) by the issuer and subject, or by
naming another actor, so that someone holding an old reviewer token and a sign-in is
counted once.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from sqlmodel import col, select, update
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.errors import NotFound, ValidationFailed
from signoff.models import Actor, ApiToken, OidcIdentity, Role
from signoff.models.actor import oidc_person, person_of
from signoff.resolvers.approval.four_eyes import recount
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork

# Roles a person holds (an agent or an integration is a program).
HUMAN_ROLES = (Role.REVIEWER, Role.OPERATOR, Role.ADMIN)


@dataclass(frozen=True)
class Linked:
    """The actor linked, the person key it now shares, every actor of that person (names),
    and the proposals awaiting approval whose count of approvals went down."""

    actor: Actor
    person: str
    actors: list[str]
    recounted: list[str]


async def link_actor(
    *,
    work: UnitOfWork,
    name: str,
    to: str | None = None,
    issuer: str | None = None,
    subject: str | None = None,
) -> Linked:
    """Make the actor named the same person as the actor named ``to``, or as whoever the
    identity provider ``issuer`` knows as ``subject``; approvals still awaiting their
    quorum count that person once from now on."""
    if (to is not None and (issuer or subject)) or (to is None and not (issuer and subject)):
        raise ValidationFailed("Give either --to, or both --issuer and --subject.", field="to")
    session = work.session
    actor = await _named(session, name)
    if to is not None:
        other = await _named(session, to)
        if other.id == actor.id:
            raise ValidationFailed("An actor is already itself; name another.", field="to")
        person = person_of(other.id, other.person)
        if other.person is None:
            await _set_person(work, other, person)
    else:
        assert issuer is not None and subject is not None
        person = oidc_person(issuer.strip(), subject.strip())
    await _set_person(work, actor, person)
    names = (await session.exec(select(Actor.name).where(Actor.person == person))).all()
    members = (await session.exec(select(Actor.id).where(Actor.person == person))).all()
    recounted = await recount(work, members)
    await work.commit()
    return Linked(actor=actor, person=person, actors=sorted(names), recounted=recounted)


async def unlink_actor(*, work: UnitOfWork, name: str) -> Actor:
    """The actor named stands for itself alone again (decisions it made stay as made)."""
    actor = await _named(work.session, name)
    if actor.person is not None:
        await _set_person(work, actor, None)
    await work.commit()
    return actor


async def _set_person(work: UnitOfWork, actor: Actor, person: str | None) -> None:
    await work.session.exec(update(Actor).where(col(Actor.id) == actor.id).values(person=person))
    record(
        work,
        Happening(
            entity_type="actor",
            entity_id=actor.id,
            actor_id=None,
            action="actor.linked" if person is not None else "actor.unlinked",
            details={"before": actor.person, "after": person},
        ),
    )
    actor.person = person


async def unlinked_token_people(session: AsyncSession) -> list[str]:
    """Names of enabled actors of a person's role, with a live token, made without the
    identity provider and linked to no one: with sign-in on, each may be a second vote of
    someone who also signs in."""
    stmt = (
        select(Actor.name)
        .join(ApiToken, col(ApiToken.actor_id) == col(Actor.id))
        .outerjoin(OidcIdentity, col(OidcIdentity.actor_id) == col(Actor.id))
        .where(
            col(Actor.role).in_([role.value for role in HUMAN_ROLES]),
            col(Actor.person).is_(None),
            col(Actor.disabled_at).is_(None),
            col(ApiToken.revoked_at).is_(None),
            col(OidcIdentity.id).is_(None),
        )
        .distinct()
    )
    return sorted((await session.exec(stmt)).all())


async def _named(session: AsyncSession, name: str) -> Actor:
    actor = (await session.exec(select(Actor).where(Actor.name == name.strip()))).first()
    if actor is None:
        raise NotFound(f"No actor is named {shlex.quote(name.strip())}.")
    return actor
