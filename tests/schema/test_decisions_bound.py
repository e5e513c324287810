"""Decisions bound to what was seen (issue 41, docs/security.md): every path that approves
names the digest its reviewer saw, and the author of a revision does not approve it alone."""

from __future__ import annotations

from typing import Any

from sqlmodel import select

from signoff.models import Approval, HumanTask
from tests.helpers import CLAIM, COMPLETE, DECIDE, GraphQLClient, World, build_world
from tests.schema.test_amendments import amend, read
from tests.schema.test_approval_links import CREATE_LINK, actor_id, form, post

DECIDE_MANY = """
mutation($input: DecideProposalsInput!) {
  decideProposals(input: $input) { results { proposalId code } }
}
"""
TARGET = "query($id: ID!) { target(id: $id) { amenderMayApprove } }"


def completion(task_id: str, digest: str | None, decision: str = "APPROVED") -> dict[str, Any]:
    response: dict[str, Any] = {"decision": decision}
    if digest is not None:
        response["payloadDigest"] = digest
    return {"input": {"taskId": task_id, "response": response}}


async def amended_by_b(world: World, amount: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A proposal of 50000 as its reviewers first read it, then amended by reviewer B."""
    proposed = await world.propose({"amount": 50000, "currency": "EUR"})
    seen = proposed["proposal"]
    changed = await amend(world, world.reviewers[1], seen, patch={"amount": amount})
    return proposed, changed["proposal"]


async def test_complete_task_refuses_a_digest_the_reviewer_did_not_see(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql, reviewers=3, required_approvals=2)
    proposed, now = await amended_by_b(world, 90000)
    await world.decide(world.reviewers[2], now)
    a, task_id = world.reviewers[0], proposed["task"]["id"]
    await gql(CLAIM, {"id": task_id}, a)

    refused = await gql.error(
        COMPLETE, completion(task_id, proposed["proposal"]["payloadDigest"]), a
    )

    assert refused.code == "PAYLOAD_DIGEST_MISMATCH"
    assert refused.extensions["expected"] == now["payloadDigest"]
    after = await read(world, now["id"])
    assert after["state"] == "APPROVAL_REQUIRED" and after["approvalCount"] == 1


async def test_complete_task_must_name_a_digest(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=1)
    proposed = await world.propose()
    refused = await gql.error(
        COMPLETE, completion(proposed["task"]["id"], None), world.reviewers[0]
    )
    assert refused.code == "RESPONSE_INVALID"
    assert "payloadDigest" in str(refused.extensions["errors"])
    assert (await read(world, proposed["proposal"]["id"]))["state"] == "APPROVAL_REQUIRED"


async def test_complete_task_naming_the_current_digest_decides_it(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=1)
    proposed = await world.propose()
    digest = proposed["proposal"]["payloadDigest"]
    done = (await gql(COMPLETE, completion(proposed["task"]["id"], digest), world.reviewers[0]))[
        "completeTask"
    ]
    assert done["task"]["response"] == {"decision": "APPROVED", "payloadDigest": digest}
    async with gql.sessionmaker() as session:
        task = await session.get(HumanTask, proposed["task"]["id"])
        assert task is not None and "payloadDigest" in task.response_schema["required"]
        [approval] = (await session.exec(select(Approval))).all()
    assert approval.payload_digest == digest
    assert (await read(world, proposed["proposal"]["id"]))["state"] == "QUEUED"


async def test_a_link_page_for_an_amended_proposal_shows_nothing_to_approve(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql, reviewers=2)
    proposed = await world.propose({"amount": 500, "currency": "EUR"})
    created = (
        await gql(
            CREATE_LINK,
            {
                "input": {
                    "taskId": proposed["task"]["id"],
                    "reviewerId": await actor_id(gql, world.reviewers[0]),
                }
            },
            world.admin,
        )
    )["createApprovalLink"]
    await amend(world, world.reviewers[1], proposed["proposal"], patch={"amount": 999999})

    page = await gql.http.get(created["path"])
    assert page.status_code == 409 and "CHANGED" in page.text
    assert "999999" not in page.text
    decided = await post(gql, created["path"], form(created["link"]["payloadDigest"]))
    assert decided.status_code == 409 and "PAYLOAD_DIGEST_MISMATCH" in decided.text
    assert (await read(world, proposed["proposal"]["id"]))["approvalCount"] == 0


async def test_an_amender_may_not_approve_what_they_wrote(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=2, required_approvals=1)
    proposed = await world.propose({"amount": 500, "currency": "EUR"})
    b = world.reviewers[1]
    now = (await amend(world, b, proposed["proposal"], patch={"amount": 999999}))["proposal"]
    decision = {
        "proposalId": now["id"],
        "decision": "APPROVED",
        "payloadDigest": now["payloadDigest"],
    }

    refused = await gql.error(DECIDE, {"input": decision}, b)
    assert refused.code == "AMENDER_APPROVAL_FORBIDDEN"
    by_task = await gql.error(COMPLETE, completion(proposed["task"]["id"], now["payloadDigest"]), b)
    assert by_task.code == "AMENDER_APPROVAL_FORBIDDEN"
    assert (await gql.error(CLAIM, {"id": proposed["task"]["id"]}, b)).code == (
        "AMENDER_APPROVAL_FORBIDDEN"
    )
    items = [{"proposalId": now["id"], "payloadDigest": now["payloadDigest"]}]
    bulk = await gql(
        DECIDE_MANY,
        {"input": {"items": items, "decision": "APPROVED", "idempotencyKey": "b-approves"}},
        b,
    )
    assert bulk["decideProposals"]["results"][0]["code"] == "AMENDER_APPROVAL_FORBIDDEN"
    assert (await read(world, now["id"]))["state"] == "APPROVAL_REQUIRED"

    # Another person approves the content B wrote; that is what runs.
    assert (await world.decide(world.reviewers[0], now))["proposal"]["state"] == "QUEUED"


async def test_a_target_may_let_amenders_approve(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=2, required_approvals=1, amenderMayApprove=True)
    assert (await gql(TARGET, {"id": world.target_id}, world.admin))["target"] == {
        "amenderMayApprove": True
    }
    proposed = await world.propose()
    b = world.reviewers[1]
    now = (await amend(world, b, proposed["proposal"], patch={"amount": 7}))["proposal"]
    assert (await world.decide(b, now))["proposal"]["state"] == "QUEUED"
