"""Approval policies: JSON Schema rules over the payload decide the approvals needed."""

from __future__ import annotations

from typing import Any

import pytest
from sqlmodel import col, select

from signoff.models import AuditEvent
from tests.helpers import CREATE_QUEUE, REGISTER_TARGET, GraphQLClient, World, build_world
from tests.schema.test_amendments import amend

SENIOR = "finance-senior"


def refund_policy() -> dict[str, Any]:
    return {
        "rules": [
            {
                "name": "small",
                "when": {"properties": {"amount": {"maximum": 100}}},
                "approvals": 0,
            },
            {
                "name": "large",
                "when": {"properties": {"amount": {"minimum": 10000}}},
                "approvals": 2,
                "queue": SENIOR,
            },
        ],
        "default": {"approvals": 1},
    }


async def policy_world(gql: GraphQLClient) -> tuple[World, str]:
    admin = await gql.token("admin", name="admin")
    senior = (await gql(CREATE_QUEUE, {"input": {"slug": SENIOR, "name": "Senior"}}, admin))[
        "createQueue"
    ]["id"]
    world = await build_world(gql, approvalPolicy=refund_policy())
    return world, senior


PROPOSAL = """
query($id: ID!) {
  proposal(id: $id) { state requiredApprovals policyRule queue { id } task { id } }
}
"""

SIMULATE = """
query($target: ID!, $payload: JSON!) {
  simulatePolicy(targetId: $target, payload: $payload) {
    hasPolicy rule ruleName approvals autoApproved queue { id }
    evaluations { index name matched errors }
    payloadErrors
  }
}
"""


@pytest.mark.parametrize(
    ("amount", "state", "approvals", "rule"),
    [
        (1, "QUEUED", 0, 0),
        (100, "QUEUED", 0, 0),  # maximum is inclusive
        (101, "APPROVAL_REQUIRED", 1, None),
        (9999, "APPROVAL_REQUIRED", 1, None),
        (10000, "APPROVAL_REQUIRED", 2, 1),  # minimum is inclusive
    ],
)
async def test_the_first_matching_rule_decides_at_its_boundaries(
    gql: GraphQLClient, amount: int, state: str, approvals: int, rule: int | None
) -> None:
    world, senior = await policy_world(gql)
    proposed = await world.propose({"amount": amount, "currency": "EUR"})
    proposal = (await gql(PROPOSAL, {"id": proposed["proposal"]["id"]}, world.admin))["proposal"]
    assert proposal["state"] == state
    assert proposal["requiredApprovals"] == approvals
    assert proposal["policyRule"]["rule"] == rule
    assert proposal["policyRule"]["approvals"] == approvals
    queues = {0: None, 1: {"id": senior}, None: {"id": world.queue_id}}
    assert proposal["queue"] == queues[rule]
    assert (proposal["task"] is None) == (approvals == 0)


async def test_an_auto_approval_is_attributed_to_the_policy(gql: GraphQLClient) -> None:
    world, _ = await policy_world(gql)
    proposal = (await world.propose({"amount": 50, "currency": "EUR"}))["proposal"]
    async with gql.sessionmaker() as session:
        events = (
            await session.exec(
                select(AuditEvent)
                .where(AuditEvent.target_id == proposal["id"])
                .order_by(col(AuditEvent.id))
            )
        ).all()
    proposed, auto = events
    assert proposed.action == "proposal.proposed"
    assert proposed.details["policy_rule"]["name"] == "small"
    assert auto.action == "proposal.auto_approved" and auto.actor_id is None
    assert auto.details["policy_rule"] == {
        "rule": 0,
        "name": "small",
        "approvals": 0,
        "queueId": None,
    }


async def test_a_large_amount_needs_two_senior_approvals(gql: GraphQLClient) -> None:
    world, _ = await policy_world(gql)
    seniors = [await gql.token("reviewer", name=f"senior-{i}", queues=[SENIOR]) for i in range(2)]
    proposal = (await world.propose({"amount": 20000, "currency": "EUR"}))["proposal"]
    # A reviewer of the target's own queue does not review the senior queue's work.
    refused = await gql.error(
        "mutation($i: DecideProposalInput!) { decideProposal(input: $i) { replayed } }",
        {
            "i": {
                "proposalId": proposal["id"],
                "decision": "APPROVED",
                "payloadDigest": proposal["payloadDigest"],
            }
        },
        world.reviewers[0],
    )
    assert refused.code == "FORBIDDEN"
    first = await world.decide(seniors[0], proposal)
    assert first["proposal"]["state"] == "APPROVAL_REQUIRED"
    second = await world.decide(seniors[1], proposal)
    assert second["proposal"]["state"] == "QUEUED"


async def test_simulate_policy_shows_which_rule_and_why(gql: GraphQLClient) -> None:
    world, senior = await policy_world(gql)
    payload = {"amount": 12000, "currency": "EUR"}
    simulated = (
        await gql(SIMULATE, {"target": world.target_id, "payload": payload}, world.reviewers[0])
    )["simulatePolicy"]
    assert simulated["hasPolicy"] is True
    assert simulated["rule"] == 1 and simulated["ruleName"] == "large"
    assert simulated["approvals"] == 2 and simulated["autoApproved"] is False
    assert simulated["queue"] == {"id": senior}
    small, large = simulated["evaluations"]
    assert small["matched"] is False and small["errors"][0]["pointer"] == "/amount"
    assert "100" in small["errors"][0]["message"]
    assert large == {"index": 1, "name": "large", "matched": True, "errors": []}
    assert simulated["payloadErrors"] == []

    default = (
        await gql(SIMULATE, {"target": world.target_id, "payload": {"amount": 500}}, world.agent)
    )["simulatePolicy"]
    assert default["rule"] is None and default["approvals"] == 1
    assert [e["matched"] for e in default["evaluations"]] == [False, False]
    assert default["payloadErrors"][0]["pointer"] == ""  # currency is required


async def test_simulating_without_a_policy_uses_the_targets_quorum(gql: GraphQLClient) -> None:
    world = await build_world(gql, required_approvals=2)
    simulated = (
        await gql(SIMULATE, {"target": world.target_id, "payload": {"amount": 1}}, world.admin)
    )["simulatePolicy"]
    assert simulated["hasPolicy"] is False and simulated["approvals"] == 2
    assert simulated["evaluations"] == [] and simulated["queue"] == {"id": world.queue_id}


@pytest.mark.parametrize(
    ("policy", "pointer"),
    [
        ([], ""),
        ({"rules": []}, "/rules"),
        ({"rules": [{"when": {"type": 12}, "approvals": 1}]}, "/rules/0/when"),
        ({"rules": [{"when": {}, "approvals": 6}]}, "/rules/0/approvals"),
        ({"rules": [{"when": {}, "approvals": -1}]}, "/rules/0/approvals"),
        ({"rules": [{"when": {}, "approvals": True}]}, "/rules/0/approvals"),
        ({"rules": [{"when": {}, "approvals": 1, "queue": "nope"}]}, "/rules/0/queue"),
        ({"rules": [{"when": {}, "approvals": 1, "extra": 1}]}, "/rules/0"),
        (
            {"rules": [{"when": {}, "approvals": 1}], "default": {"approvals": 9}},
            "/default/approvals",
        ),
    ],
)
async def test_invalid_policies_are_refused_at_registration(
    gql: GraphQLClient, policy: Any, pointer: str
) -> None:
    with pytest.raises(AssertionError) as refused:
        await build_world(gql, approvalPolicy=policy)
    error = refused.value.args[0][0]
    assert error["extensions"]["code"] == "POLICY_INVALID", error
    assert error["extensions"]["pointer"] == pointer


async def test_people_need_a_queue(gql: GraphQLClient) -> None:
    admin = await gql.token("admin", name="admin")
    refused = await gql.error(
        REGISTER_TARGET,
        {
            "input": {
                "name": "no-queue",
                "url": "http://127.0.0.1:9/hook",
                "inputSchema": {"type": "object"},
                "approvalMode": "BOUNDED_AUTO",
                "approvalPolicy": {"rules": [{"when": {}, "approvals": 1}]},
            }
        },
        admin,
    )
    assert refused.code == "POLICY_INVALID"
    assert refused.errors[0]["extensions"]["pointer"] == "/rules/0"


async def test_an_amendment_is_judged_by_the_policy_again(gql: GraphQLClient) -> None:
    world, senior = await policy_world(gql)
    proposed = await world.propose({"amount": 500, "currency": "EUR"})
    proposal = proposed["proposal"]
    raised = await amend(world, world.reviewers[0], proposal, patch={"amount": 20000})
    state = (await gql(PROPOSAL, {"id": proposal["id"]}, world.admin))["proposal"]
    assert state["requiredApprovals"] == 2 and state["policyRule"]["rule"] == 1
    assert state["queue"] == {"id": senior} and state["task"] == {"id": proposed["task"]["id"]}
    # Amended down into the auto-approval rule, it still needs a person's approval.
    lowered = await amend(
        world,
        await gql.token("reviewer", name="senior-0", queues=[SENIOR]),
        raised["proposal"],
        patch={"amount": 50},
    )
    assert lowered["proposal"]["state"] == "APPROVAL_REQUIRED"
    state = (await gql(PROPOSAL, {"id": proposal["id"]}, world.admin))["proposal"]
    assert state["requiredApprovals"] == 1 and state["policyRule"]["rule"] == 0
