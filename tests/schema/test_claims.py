"""Claims are leases: they renew, release, and lapse (tested with a frozen clock)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from signoff.clock import FrozenClock
from tests.helpers import CLAIM, DECIDE, GraphQLClient, build_world

TASK = "query($id: ID!) { task(id: $id) { state claimExpiresAt assignee { name } } }"
RELEASE = """mutation($id: ID!) { releaseTask(input: {taskId: $id, reason: "Lunch"})
  { state assignee { name } } }"""


async def test_a_lapsed_claim_reads_open_and_can_be_taken(
    gql: GraphQLClient, frozen_clock: FrozenClock
) -> None:
    world = await build_world(gql)
    task_id = (await world.propose())["task"]["id"]
    first, second = world.reviewers
    claimed = (await gql(CLAIM, {"id": task_id}, first))["claimTask"]
    expires = datetime.fromisoformat(claimed["claimExpiresAt"])
    assert expires == (frozen_clock.current + timedelta(minutes=15)).replace(microsecond=0)

    frozen_clock.advance(15 * 60 + 1)
    task = (await gql(TASK, {"id": task_id}, second))["task"]
    assert task == {"state": "OPEN", "claimExpiresAt": None, "assignee": None}
    open_tasks = await gql("{ tasks(state: OPEN) { edges { node { id } } } }", token=second)
    assert [e["node"]["id"] for e in open_tasks["tasks"]["edges"]] == [task_id]

    taken = (await gql(CLAIM, {"id": task_id}, second))["claimTask"]
    assert taken["state"] == "CLAIMED" and taken["assignee"]["name"] == "reviewer-1"


async def test_the_holder_renews_and_releases(
    gql: GraphQLClient, frozen_clock: FrozenClock
) -> None:
    world = await build_world(gql)
    task_id = (await world.propose())["task"]["id"]
    holder = world.reviewers[0]
    await gql(CLAIM, {"id": task_id}, holder)
    frozen_clock.advance(600)
    renewed = (await gql(CLAIM, {"id": task_id}, holder))["claimTask"]
    expires = datetime.fromisoformat(renewed["claimExpiresAt"])
    assert expires == (frozen_clock.current + timedelta(minutes=15)).replace(microsecond=0)

    released = (await gql(RELEASE, {"id": task_id}, holder))["releaseTask"]
    assert released == {"state": "OPEN", "assignee": None}


async def test_an_operator_can_release_a_stuck_claim(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    task_id = (await world.propose())["task"]["id"]
    await gql(CLAIM, {"id": task_id}, world.reviewers[0])
    released = (await gql(RELEASE, {"id": task_id}, world.admin))["releaseTask"]
    assert released["state"] == "OPEN"


async def test_a_proposal_past_its_deadline_cannot_be_decided(
    gql: GraphQLClient, frozen_clock: FrozenClock
) -> None:
    world = await build_world(gql)
    proposal = (await world.propose(expiresInSeconds=60))["proposal"]
    frozen_clock.advance(61)
    error = await gql.error(
        DECIDE,
        {
            "input": {
                "proposalId": proposal["id"],
                "decision": "APPROVED",
                "payloadDigest": proposal["payloadDigest"],
            }
        },
        world.reviewers[0],
    )
    assert error.code == "NOT_AWAITING_APPROVAL"
    assert "deadline" in error.errors[0]["message"]


async def test_claim_expires_at_reads_in_whole_seconds_like_expires_at(
    gql: GraphQLClient, frozen_clock: FrozenClock
) -> None:
    frozen_clock.current = datetime(2030, 5, 6, 7, 8, 9, 654321, tzinfo=UTC)
    world = await build_world(gql)
    task_id = (await world.propose())["task"]["id"]
    claimed = (await gql(CLAIM, {"id": task_id}, world.reviewers[0]))["claimTask"]
    assert claimed["claimExpiresAt"] == "2030-05-06T07:23:09+00:00"
