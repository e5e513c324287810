"""A decision checks, in its own transaction, that its reviewer may still decide: a
process keeps a token's viewer for a moment (``SIGNOFF_AUTH_CACHE_SECONDS``), and a
viewer read before an actor was disabled, re-roled or taken off the queue decides
nothing, on every path that decides (issue 41: "access that ends everywhere at once")."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from signoff.errors import Forbidden
from signoff.models import Proposal, ProposalState, Role
from signoff.resolvers.access.actors import authenticate, disable_actor, set_actor_role
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.approval.queues import remove_queue_member
from signoff.resolvers.core.work import UnitOfWork, WorkMaker
from tests.helpers import GraphQLClient, World, build_world
from tests.resolvers.test_persons import approve

Change = Callable[[UnitOfWork, World, Viewer], Awaitable[object]]


async def disable(work: UnitOfWork, world: World, reviewer: Viewer) -> object:
    return await disable_actor(work=work, name=reviewer.actor.name)


async def make_operator(work: UnitOfWork, world: World, reviewer: Viewer) -> object:
    return await set_actor_role(work=work, name=reviewer.actor.name, role=Role.OPERATOR)


async def take_off_the_queue(work: UnitOfWork, world: World, reviewer: Viewer) -> object:
    async with world.gql.sessionmaker() as session:
        admin = await authenticate(session=session, token=world.admin)
    return await remove_queue_member(
        work=work, viewer=admin, queue_id=world.queue_id, actor_id=reviewer.id
    )


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (disable, "disabled"),
        (make_operator, "role has just changed"),
        (take_off_the_queue, "no longer a reviewer"),
    ],
    ids=["disabled", "re-roled", "off the queue"],
)
async def test_a_viewer_read_before_its_access_ended_decides_nothing(
    gql: GraphQLClient, change: Change, says: str
) -> None:
    world = await build_world(gql, reviewers=1)
    proposal_id = (await world.propose({"amount": 500, "currency": "EUR"}))["proposal"]["id"]
    async with gql.sessionmaker() as session:
        read_before = await authenticate(session=session, token=world.reviewers[0])
    async with WorkMaker(gql.sessionmaker)() as work:
        await change(work, world, read_before)
        await work.commit()

    with pytest.raises(Forbidden) as refused:
        await approve(gql, read_before, proposal_id)

    assert says in refused.value.message
    async with gql.sessionmaker() as session:
        proposal = await session.get(Proposal, proposal_id)
        assert proposal is not None and proposal.state == ProposalState.APPROVAL_REQUIRED
