"""An approval link's POST racing its reviewer's loss of access (PostgreSQL): the POST that
read its reviewer as able to decide, then lost the race to the revocation, decides
nothing; the link's compare-and-set on its state is what decides the race. (On SQLite
writers are serialised.)"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from sqlmodel import func, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.errors import ApprovalLinkUnusable
from signoff.models import Approval, ApprovalLink, Decision
from signoff.resolvers.access import eligibility
from signoff.resolvers.access.actors import disable_actor, revoke_actor_tokens
from signoff.resolvers.core.work import WorkMaker
from signoff.resolvers.reach import links
from tests.conftest import requires_postgres
from tests.helpers import GraphQLClient, build_world
from tests.schema.test_approval_links import linked, proposal_state

TakeAccess = Callable[..., Awaitable[object]]


@requires_postgres
@pytest.mark.parametrize("take", [disable_actor, revoke_actor_tokens], ids=["disable", "revoke"])
async def test_a_link_post_that_loses_to_the_revocation_decides_nothing(
    gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch, take: TakeAccess
) -> None:
    world = await build_world(gql)
    proposed, created = await linked(gql, world)
    token = created["path"].removeprefix("/links/")
    make = WorkMaker(gql.sessionmaker)
    eligible_read, revoked = asyncio.Event(), asyncio.Event()

    async def eligible_then_wait(session: AsyncSession, actor_id: str, queue_id: str) -> bool:
        answer = await eligibility.is_eligible(session, actor_id, queue_id)
        eligible_read.set()
        await revoked.wait()  # the revocation commits between this read and the spend
        return answer

    monkeypatch.setattr(links, "is_eligible", eligible_then_wait)

    async def post() -> object:
        async with make() as work:
            return await links.decide_by_link(
                work=work,
                token=token,
                payload_digest=created["link"]["payloadDigest"],
                decision=Decision.APPROVED,
            )

    async def revoke() -> None:
        await eligible_read.wait()
        async with make() as work:
            await take(work=work, name="reviewer-0")
        revoked.set()

    posted, _ = await asyncio.gather(post(), revoke(), return_exceptions=True)
    assert isinstance(posted, ApprovalLinkUnusable), posted
    assert posted.details["reason"] == "REVOKED"
    async with gql.sessionmaker() as session:
        approvals = (await session.exec(select(func.count()).select_from(Approval))).one()
        link = await session.get(ApprovalLink, created["link"]["id"])
    assert approvals == 0 and link is not None and link.state == "REVOKED"
    assert await proposal_state(gql, proposed["proposal"]["id"]) == "APPROVAL_REQUIRED"
