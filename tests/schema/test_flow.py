"""The whole approval flow over HTTP: propose, claim, decide, audit."""

from __future__ import annotations

from tests.helpers import CLAIM, COMPLETE, GraphQLClient, build_world


async def test_agent_proposes_reviewer_claims_and_approves(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    proposed = await world.propose()
    proposal, task = proposed["proposal"], proposed["task"]
    assert proposed["replayed"] is False
    assert proposal["state"] == "APPROVAL_REQUIRED"
    assert proposal["payloadDigest"].startswith("sha256:")
    assert task["kind"] == "APPROVAL" and task["state"] == "OPEN"

    reviewer = world.reviewers[0]
    claimed = (await gql(CLAIM, {"id": task["id"]}, reviewer))["claimTask"]
    assert claimed["state"] == "CLAIMED" and claimed["assignee"]["name"] == "reviewer-0"

    decided = await world.decide(reviewer, proposal, reason="Refund matches the order.")
    assert decided["proposal"]["state"] == "QUEUED"
    assert decided["approval"]["decision"] == "APPROVED"
    assert decided["task"]["state"] == "COMPLETED"

    audit = await gql(
        """query($id: ID!) { auditEvents(targetType: "proposal", targetId: $id)
        { edges { node { action actor { name } } } } }""",
        {"id": proposal["id"]},
        world.admin,
    )
    actions = [e["node"]["action"] for e in audit["auditEvents"]["edges"]]
    assert actions == ["proposal.approved", "approval.approved", "proposal.proposed"]


async def test_completing_the_approval_task_decides_the_proposal(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    proposed = await world.propose()
    task_id = proposed["task"]["id"]
    reviewer = world.reviewers[0]
    await gql(CLAIM, {"id": task_id}, reviewer)
    done = (
        await gql(
            COMPLETE,
            {
                "input": {
                    "taskId": task_id,
                    "response": {
                        "decision": "REJECTED",
                        "payloadDigest": proposed["proposal"]["payloadDigest"],
                        "reason": "Wrong customer.",
                    },
                }
            },
            reviewer,
        )
    )["completeTask"]
    assert done["task"]["state"] == "COMPLETED"
    assert done["task"]["response"] == {
        "decision": "REJECTED",
        "payloadDigest": proposed["proposal"]["payloadDigest"],
        "reason": "Wrong customer.",
    }
    proposal = await gql(
        "query($id: ID!) { proposal(id: $id) { state approvals { decision } } }",
        {"id": proposed["proposal"]["id"]},
        world.agent,
    )
    assert proposal["proposal"] == {"state": "REJECTED", "approvals": [{"decision": "REJECTED"}]}
