"""A proposal's timeline: its audit records as typed entries, oldest first: proposed under
a policy rule, amended with its diff, each reviewer's decision with its digest, the
quorum, and an execution by its agent."""

from __future__ import annotations

from typing import Any

from signoff import clock
from signoff.models import Role
from tests.helpers import GraphQLClient, World, build_world

TIMELINE = """
query($id: ID!) { proposal(id: $id) { timeline {
  auditEventId kind action at revision payloadDigest fromDigest decision reason errorCode
  actor { name }
  policyRule { rule name approvals queue { slug } }
  diff { op path value from }
} } }
"""

AMEND = """
mutation($input: AmendProposalInput!) {
  amendProposal(input: $input) { proposal { id payloadDigest } }
}
"""

BEGIN = """
mutation($input: BeginExecutionInput!) { beginExecution(input: $input) { lease } }
"""

REPORT = """
mutation($input: ReportExecutionInput!) { reportExecution(input: $input) { proposal { state } } }
"""

POLICY = {
    "rules": [
        {
            "name": "large refunds",
            "when": {"properties": {"amount": {"minimum": 1000}}, "required": ["amount"]},
            "approvals": 2,
        }
    ],
    "default": {"approvals": 1},
}


async def timeline(gql: GraphQLClient, token: str, proposal_id: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = (await gql(TIMELINE, {"id": proposal_id}, token))["proposal"][
        "timeline"
    ]
    return entries


async def _amend(world: World, proposal: dict[str, Any], amount: int) -> dict[str, Any]:
    given = {
        "proposalId": proposal["id"],
        "basedOnDigest": proposal["payloadDigest"],
        "reason": "The order was partly refunded.",
        "patch": {"amount": amount},
    }
    amended: dict[str, Any] = (await world.gql(AMEND, {"input": given}, world.reviewers[0]))[
        "amendProposal"
    ]["proposal"]
    return amended


async def test_the_timeline_tells_proposal_amendment_decisions_and_quorum_in_order(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql, reviewers=3, approvalPolicy=POLICY)
    proposal = (await world.propose({"amount": 5000, "currency": "EUR"}))["proposal"]
    frozen_clock.advance(1)
    amended = await _amend(world, proposal, 4500)
    frozen_clock.advance(1)
    await world.decide(world.reviewers[1], amended, reason="Matches the order.")
    frozen_clock.advance(1)
    await world.decide(world.reviewers[2], amended)

    entries = await timeline(gql, world.reviewers[1], proposal["id"])
    assert [(e["kind"], e["action"]) for e in entries] == [
        ("PROPOSED", "proposal.proposed"),
        ("AMENDED", "proposal.amended"),
        ("DECISION", "approval.approved"),
        ("DECISION", "approval.approved"),
        ("APPROVED", "proposal.approved"),
    ]
    proposed, amendment, first, second, _ = entries
    assert proposed["actor"] == {"name": "agent"}
    assert proposed["payloadDigest"] == proposal["payloadDigest"]
    assert proposed["policyRule"] == {
        "rule": 0,
        "name": "large refunds",
        "approvals": 2,
        "queue": {"slug": world.queue_slug},
    }
    assert amendment["actor"] == {"name": "reviewer-0"}
    assert (amendment["fromDigest"], amendment["payloadDigest"], amendment["revision"]) == (
        proposal["payloadDigest"],
        amended["payloadDigest"],
        2,
    )
    assert amendment["reason"] == "The order was partly refunded."
    assert amendment["diff"] == [{"op": "replace", "path": "/amount", "value": 4500, "from": None}]
    assert [(e["actor"]["name"], e["decision"], e["payloadDigest"]) for e in (first, second)] == [
        ("reviewer-1", "APPROVED", amended["payloadDigest"]),
        ("reviewer-2", "APPROVED", amended["payloadDigest"]),
    ]
    assert first["reason"] == "Matches the order."
    assert len({e["auditEventId"] for e in entries}) == len(entries)
    assert [e["at"] for e in entries] == sorted(e["at"] for e in entries)


async def test_a_rejection_names_its_reviewer_and_reason(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    proposal = (await world.propose())["proposal"]
    await world.decide(world.reviewers[0], proposal, decision="REJECTED", reason="Wrong order.")
    entries = await timeline(gql, world.agent, proposal["id"])
    assert [(e["kind"], e["decision"], e["reason"]) for e in entries] == [
        ("PROPOSED", None, None),
        ("DECISION", "REJECTED", "Wrong order."),
        ("REJECTED", None, None),
    ]
    assert entries[1]["actor"] == {"name": "reviewer-0"}
    # Without an approval policy, no rule set the quorum: the target's requiredApprovals did.
    assert entries[0]["policyRule"] is None


async def test_an_execution_by_its_agent_is_told(gql: GraphQLClient) -> None:
    world = await build_world(gql, url=None)
    proposal = (await world.propose())["proposal"]
    await world.decide(world.reviewers[0], proposal)
    given = {"proposalId": proposal["id"], "payloadDigest": proposal["payloadDigest"]}
    lease = (await gql(BEGIN, {"input": given}, world.agent))["beginExecution"]["lease"]
    reported = {"proposalId": proposal["id"], "lease": lease, "outcome": "APPLIED"}
    await gql(REPORT, {"input": reported}, world.agent)
    entries = await timeline(gql, world.admin, proposal["id"])
    assert [(e["kind"], e["action"], (e["actor"] or {}).get("name")) for e in entries][-3:] == [
        ("APPROVED", "proposal.approved", "reviewer-0"),
        ("EXECUTION", "proposal.execution_started", "agent"),
        ("APPLIED", "proposal.applied", "agent"),
    ]


async def test_the_timeline_is_read_as_its_proposal_is(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    proposal = (await world.propose())["proposal"]
    stranger = await gql.token(Role.REVIEWER, name="stranger")
    refused = await gql.error(TIMELINE, {"id": proposal["id"]}, stranger)
    assert refused.code == "FORBIDDEN"
    assert [e["kind"] for e in await timeline(gql, world.agent, proposal["id"])] == ["PROPOSED"]
