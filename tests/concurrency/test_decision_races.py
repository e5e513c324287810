"""Decisions bound to what was seen, under real concurrency (PostgreSQL): a completion of
the approval task naming the old digest racing an amendment never both succeeds and
counts, and two actors of one person approving at once count once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from signoff.models import Proposal
from signoff.resolvers.access.persons import link_actor
from signoff.resolvers.core.work import UnitOfWork
from tests.concurrency.test_amend_races import counted_approvals, decision
from tests.conftest import requires_postgres
from tests.helpers import COMPLETE, DECIDE, GraphQLClient, build_world
from tests.schema.test_amendments import AMEND, amendment


def code_of(body: dict[str, Any]) -> str:
    return str(body["errors"][0]["extensions"]["code"]) if body.get("errors") else "ok"


@requires_postgres
@pytest.mark.parametrize("completion_first", [True, False])
async def test_a_completion_naming_the_old_digest_racing_an_amendment_never_both(
    gql: GraphQLClient, completion_first: bool
) -> None:
    world = await build_world(gql, reviewers=2, required_approvals=1)
    for _ in range(4):
        proposed = await world.propose()
        proposal, task_id = proposed["proposal"], proposed["task"]["id"]
        completion = {
            "input": {
                "taskId": task_id,
                "response": {"decision": "APPROVED", "payloadDigest": proposal["payloadDigest"]},
            }
        }
        calls = [
            gql.raw(COMPLETE, completion, world.reviewers[0]),
            gql.raw(AMEND, amendment(proposal, patch={"amount": 5}), world.reviewers[1]),
        ]
        completed, amended = await asyncio.gather(*(calls if completion_first else calls[::-1]))
        if not completion_first:
            completed, amended = amended, completed
        codes = (code_of(completed), code_of(amended))
        stored, counted = await counted_approvals(gql, proposal["id"])
        if codes[1] == "ok":
            # The amendment won: nothing approved the new digest, nothing was queued.
            assert codes[0] == "PAYLOAD_DIGEST_MISMATCH", codes
            assert stored.revision == 2 and stored.state == "APPROVAL_REQUIRED"
            assert counted == set() and stored.approval_count == 0
        else:
            # The approval won: what was approved is what is queued, unamended.
            assert codes == ("ok", "NOT_AWAITING_APPROVAL"), codes
            assert stored.revision == 1 and stored.state == "QUEUED" and len(counted) == 1


@requires_postgres
async def test_two_actors_of_one_person_approving_at_once_count_once(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=3, required_approvals=2, reviewer_names="same")
    async with gql.sessionmaker() as session:
        await link_actor(work=UnitOfWork(session), name="same-1", to="same-0")
    for _ in range(6):
        proposal = (await world.propose())["proposal"]
        bodies = await asyncio.gather(
            *(gql.raw(DECIDE, decision(proposal), token) for token in world.reviewers[:2])
        )
        codes = tuple(sorted(code_of(body) for body in bodies))
        assert codes == ("ALREADY_DECIDED", "ok"), codes
        async with gql.sessionmaker() as session:
            stored = await session.get(Proposal, proposal["id"])
            assert stored is not None
        assert stored.state == "APPROVAL_REQUIRED" and stored.approval_count == 1
        decided = await world.decide(world.reviewers[2], proposal)
        assert decided["proposal"]["state"] == "QUEUED"
