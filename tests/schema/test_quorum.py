"""Four eyes and quorum: distinct reviewers, never the proposer, one rejection rejects."""

from __future__ import annotations

from tests.helpers import GraphQLClient, build_world

TASK = "query($id: ID!) { task(id: $id) { state assignee { name } response } }"


async def test_a_quorum_of_two_needs_two_distinct_reviewers(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=3, required_approvals=2)
    proposed = await world.propose()
    proposal, task_id = proposed["proposal"], proposed["task"]["id"]
    assert proposal["requiredApprovals"] == 2

    first = await world.decide(world.reviewers[0], proposal)
    assert first["proposal"] == {
        "id": proposal["id"],
        "state": "APPROVAL_REQUIRED",
        "approvalCount": 1,
    }
    # The task goes back to the queue for a reviewer who has not decided yet.
    assert (await gql(TASK, {"id": task_id}, world.admin))["task"]["state"] == "OPEN"

    second = await world.decide(world.reviewers[1], proposal)
    assert second["proposal"]["state"] == "QUEUED"
    assert second["proposal"]["approvalCount"] == 2
    task = (await gql(TASK, {"id": task_id}, world.admin))["task"]
    assert task["state"] == "COMPLETED"
    assert task["response"] == {"decision": "APPROVED", "payloadDigest": proposal["payloadDigest"]}


async def test_one_rejection_rejects_whatever_came_before(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=2, required_approvals=2)
    proposal = (await world.propose())["proposal"]
    await world.decide(world.reviewers[0], proposal)
    rejected = await world.decide(
        world.reviewers[1], proposal, decision="REJECTED", reason="Amount is wrong."
    )
    assert rejected["proposal"]["state"] == "REJECTED"
    assert rejected["approval"]["reason"] == "Amount is wrong."


async def test_bounded_auto_targets_skip_the_queue(gql: GraphQLClient) -> None:
    world = await build_world(gql, approval_mode="BOUNDED_AUTO")
    proposed = await world.propose()
    assert proposed["proposal"]["state"] == "QUEUED"
    assert proposed["task"] is None
