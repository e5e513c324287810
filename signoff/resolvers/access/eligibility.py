"""May this actor decide on this queue now: the one rule behind every path that lets
someone decide through what they hold, or gives them work (links, claims, reassignment,
delegation, notification links; docs/design.md section 5.5). A reviewer, enabled, a
member of the queue, with a way in left (a live API token, or an identity at the OpenID
provider). Admins are never members: they decide directly, never hold work. When an
actor loses its way in, ``end_handed_access`` takes back its links and claims at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.errors import ActorDisabled, AssigneeNotEligible, Forbidden
from signoff.models import (
    Actor,
    ApiToken,
    ApprovalLink,
    HumanTask,
    OidcIdentity,
    Proposal,
    QueueMembership,
    Role,
)
from signoff.models.records import RecordSelect, one_of, record_columns, select_records, table_of
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.core import lifecycles
from signoff.resolvers.core.lifecycles import APPROVAL_LINK, TASK
from signoff.resolvers.core.work import UnitOfWork


async def why_not_eligible(session: AsyncSession, actor: Actor, queue_id: str | None) -> str | None:
    """Why ``actor`` may not decide on ``queue_id`` now (a phrase after its name), or
    ``None`` when it may. ``queue_id=None``: on any queue it is a member of (a delegate is
    named for every queue; membership is checked when a task is handed to it)."""
    if actor.role != Role.REVIEWER.value:
        return f"has the role {actor.role}; only reviewers decide on a queue's work"
    if actor.disabled_at is not None:
        return "is disabled"
    if queue_id is not None and await session.get(QueueMembership, (queue_id, actor.id)) is None:
        return "is not a member of this queue"
    if not await has_a_way_in(session, actor.id):
        return "has no way in left (every token revoked)"
    return None


async def has_a_way_in(session: AsyncSession, actor_id: str) -> bool:
    """Whether the actor can still authenticate: a live API token, or an identity at the
    OpenID provider."""
    token = select(ApiToken.id).where(
        col(ApiToken.actor_id) == actor_id, col(ApiToken.revoked_at).is_(None)
    )
    if (await session.exec(token.limit(1))).first() is not None:
        return True
    identity = select(OidcIdentity.id).where(col(OidcIdentity.actor_id) == actor_id)
    return (await session.exec(identity.limit(1))).first() is not None


async def current_actor(session: AsyncSession, actor_id: str) -> Actor | None:
    """The actor as committed now, not as this session first read it."""
    return await session.get(Actor, actor_id, populate_existing=True)


async def require_eligible(
    session: AsyncSession,
    actor_id: str,
    queue_id: str | None,
    *,
    field: str | None = None,
    via: str = "",
) -> Actor:
    """The actor, when it may decide on ``queue_id`` now; ``ASSIGNEE_NOT_ELIGIBLE``
    otherwise (``via`` names how it was reached, such as a delegation)."""
    actor = await current_actor(session, actor_id)
    if actor is None:
        raise AssigneeNotEligible("No such actor.", field=field)
    why = await why_not_eligible(session, actor, queue_id)
    if why is not None:
        raise AssigneeNotEligible(f"{actor.name}{via} {why}.", field=field)
    return actor


@dataclass(frozen=True)
class ActorStanding:
    """An actor as committed now (``None``: no such actor) and whether it is a member of
    the queue asked about."""

    actor: Actor | None
    member: bool


async def standings(
    session: AsyncSession, actor_ids: Iterable[str], queue_id: str | None
) -> dict[str, ActorStanding]:
    """Each actor as committed now, not as this session first read it, with whether it is
    a member of ``queue_id``: one statement for what a decision checks of its decider and
    of the proposal's proposer. Records: the decision only reads them."""
    wanted = sorted(set(actor_ids))
    rows = await select_records(
        session, Actor, "standings", _standings_select, {"ids": wanted, "queue_id": queue_id}
    )
    return standings_of(rows, wanted)


def standings_of(rows: Iterable[Any], actor_ids: Iterable[str]) -> dict[str, ActorStanding]:
    """``standings`` of ``actor_ids`` from the rows a standings select found."""
    found = {row.id: ActorStanding(row, bool(getattr(row, "member"))) for row in rows}  # noqa: B009
    return {actor_id: found.get(actor_id, ActorStanding(None, False)) for actor_id in actor_ids}


def _standings_select(dialect: str) -> sa.Select[Any]:
    # A NULL queue matches no membership: the actor is a member of none.
    member = sa.exists().where(
        col(QueueMembership.queue_id) == sa.bindparam("queue_id", type_=sa.String),
        col(QueueMembership.actor_id) == col(Actor.id),
    )
    return sa.select(*record_columns(Actor), member.label("member")).where(
        one_of(table_of(Actor).c.id, "ids", dialect)
    )


def decision_standings(viewer_id: str, proposal_id: str) -> RecordSelect:
    """``standings`` of a decider (``viewer_id``) and of the proposer of ``proposal_id``,
    with membership of its queue, taking both from the proposal inside the statement: a
    read that need not wait for the proposal's, so the two go in one round trip."""
    return RecordSelect(
        Actor,
        "decision-standings",
        _decision_standings_select,
        {"viewer_id": viewer_id, "proposal_id": proposal_id},
    )


def _decision_standings_select(dialect: str) -> sa.Select[Any]:
    proposals, actors = table_of(Proposal), table_of(Actor)
    proposal_id = sa.bindparam("proposal_id", type_=proposals.c.id.type)
    of_proposal = sa.select(proposals.c.proposed_by_id, proposals.c.queue_id).where(
        proposals.c.id == proposal_id
    )
    proposer = of_proposal.with_only_columns(proposals.c.proposed_by_id).scalar_subquery()
    queue_id = of_proposal.with_only_columns(proposals.c.queue_id).scalar_subquery()
    # No such proposal: a NULL queue, of which nobody is a member.
    member = sa.exists().where(
        col(QueueMembership.queue_id) == queue_id,
        col(QueueMembership.actor_id) == actors.c.id,
    )
    viewer = actors.c.id == sa.bindparam("viewer_id", type_=actors.c.id.type)
    return sa.select(*record_columns(Actor), member.label("member")).where(
        sa.or_(viewer, actors.c.id == proposer)
    )


def check_deciding_now(viewer: Viewer, queue_id: str | None, standing: ActorStanding) -> None:
    """The viewer may still decide on ``queue_id`` as its actor is committed now, not only
    as its viewer was read (a process keeps a token's viewer for a moment): enabled, with
    the same role, and for a reviewer, still a member. Every decision checks it on its
    ``standing`` read in its own transaction (``standings``), whatever the path; links
    check ``is_eligible`` besides."""
    actor = standing.actor
    if actor is None or actor.disabled_at is not None:
        raise ActorDisabled()
    if actor.role != viewer.role.value:
        raise Forbidden("Your role has just changed: sign in again to decide.")
    if actor.role == Role.REVIEWER.value and (queue_id is None or not standing.member):
        raise Forbidden("You are no longer a reviewer of this queue.")


async def is_eligible(session: AsyncSession, actor_id: str, queue_id: str | None) -> bool:
    actor = await current_actor(session, actor_id)
    return actor is not None and await why_not_eligible(session, actor, queue_id) is None


async def end_handed_access(work: UnitOfWork, actor: Actor, reason: str) -> None:
    """In the transaction that took the actor's way in away: revoke its approval links
    and release its claims, unless it still may decide (another live token). A link's
    revocation is a compare-and-set on its state, so a decision through it at the same
    moment either came first or finds it revoked."""
    if actor.disabled_at is None and await has_a_way_in(work.session, actor.id):
        return
    await APPROVAL_LINK.move_where(
        work,
        lifecycles.REVOKE_LINK,
        col(ApprovalLink.reviewer_id) == actor.id,
        actor_id=None,
        details={"reason": reason},
    )
    await TASK.move_where(
        work,
        lifecycles.RELEASE,
        col(HumanTask.assignee_id) == actor.id,
        actor_id=None,
        values={"assignee_id": None, "claim_expires_at": None},
        details={"holder": actor.id, "reason": reason},
    )
