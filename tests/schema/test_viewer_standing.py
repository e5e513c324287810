"""``Proposal.viewerStanding``: what the viewer decided of the current revision and the
decisions still open to them, each closed one with the code a decision would meet."""

from __future__ import annotations

from typing import Any

from tests.helpers import CLAIM, GraphQLClient, build_world
from tests.schema.test_amendments import amend

STANDING = """query($id: ID!) {
  proposal(id: $id) {
    viewerStanding {
      decision decidedAs mayApprove mayReject
      approveRefusal { code message }
      rejectRefusal { code }
    }
  }
}"""


async def standing(gql: GraphQLClient, proposal: dict[str, Any], token: str) -> dict[str, Any]:
    data = await gql(STANDING, {"id": proposal["id"]}, token)
    result: dict[str, Any] = data["proposal"]["viewerStanding"]
    return result


async def test_a_reviewer_who_approved_one_of_two_may_decide_no_more(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=2, required_approvals=2, reviewer_names="stand")
    proposal = (await world.propose())["proposal"]
    assert await standing(gql, proposal, world.reviewers[0]) == {
        "decision": None,
        "decidedAs": None,
        "mayApprove": True,
        "mayReject": True,
        "approveRefusal": None,
        "rejectRefusal": None,
    }
    await world.decide(world.reviewers[0], proposal)
    mine = await standing(gql, proposal, world.reviewers[0])
    assert (mine["decision"], mine["decidedAs"]) == ("APPROVED", "stand-0")
    assert (mine["mayApprove"], mine["mayReject"]) == (False, False)
    assert mine["approveRefusal"]["code"] == mine["rejectRefusal"]["code"] == "ALREADY_DECIDED"
    # The other reviewer still may; what the standing says is what a decision meets.
    assert (await standing(gql, proposal, world.reviewers[1]))["mayApprove"] is True
    refused = await gql.error(
        "mutation($input: DecideProposalInput!) {"
        " decideProposal(input: $input) { approval { id } } }",
        {
            "input": {
                "proposalId": proposal["id"],
                "decision": "APPROVED",
                "payloadDigest": proposal["payloadDigest"],
            }
        },
        world.reviewers[0],
    )
    assert refused.code == "ALREADY_DECIDED"


async def test_an_amendment_opens_the_new_revision_to_earlier_approvers(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql, reviewers=3, required_approvals=2, reviewer_names="stand-amend")
    proposal = (await world.propose())["proposal"]
    await world.decide(world.reviewers[0], proposal)
    await amend(world, world.reviewers[1], proposal, patch={"amount": 80})
    first = await standing(gql, proposal, world.reviewers[0])
    assert (first["decision"], first["mayApprove"]) == (None, True)
    author = await standing(gql, proposal, world.reviewers[1])
    assert (author["mayApprove"], author["mayReject"]) == (False, True)
    assert author["approveRefusal"]["code"] == "AMENDER_APPROVAL_FORBIDDEN"


async def test_a_task_held_by_another_and_a_decided_proposal_close_every_decision(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql, reviewers=2, reviewer_names="stand-held")
    made = await world.propose()
    proposal = made["proposal"]
    await gql(CLAIM, {"id": made["task"]["id"]}, world.reviewers[1])
    held = await standing(gql, proposal, world.reviewers[0])
    assert (held["mayApprove"], held["mayReject"]) == (False, False)
    assert held["approveRefusal"]["code"] == "TASK_CLAIMED_BY_OTHER"
    await world.decide(world.reviewers[1], proposal)
    done = await standing(gql, proposal, world.reviewers[0])
    assert done["decision"] is None
    assert done["approveRefusal"]["code"] == "NOT_AWAITING_APPROVAL"
    # Whoever decided nothing of it has no decision of theirs shown.
    assert (await standing(gql, proposal, world.admin))["decision"] is None
