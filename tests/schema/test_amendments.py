"""Amend, then approve: a new revision and digest, earlier approvals void, the diff kept."""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select

from signoff.models import AuditEvent, ChangeEvent
from tests.helpers import GraphQLClient, World, build_world

AMEND = """
mutation($input: AmendProposalInput!) {
  amendProposal(input: $input) {
    replayed
    proposal { id state payload payloadDigest revision approvalCount awaitingProposer }
    revision { revision digest payload diff reason amendedBy { name } }
  }
}
"""

ACCEPT = """
mutation($input: AcceptAmendmentInput!) {
  acceptAmendment(input: $input) {
    replayed proposal { id state payloadDigest awaitingProposer }
  }
}
"""

PROPOSAL = """
query($id: ID!) {
  proposal(id: $id) {
    state payloadDigest revision approvalCount awaitingProposer
    approvals { decision revision payloadDigest }
    revisions { revision digest payload diff reason at amendedBy { name } }
    task { state context }
  }
}
"""


def amendment(proposal: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "input": {
            "proposalId": proposal["id"],
            "basedOnDigest": proposal["payloadDigest"],
            "reason": "The customer paid 80, not 100.",
            **fields,
        }
    }


async def amend(
    world: World, reviewer: str, proposal: dict[str, Any], **fields: Any
) -> dict[str, Any]:
    data = await world.gql(AMEND, amendment(proposal, **fields), reviewer)
    result: dict[str, Any] = data["amendProposal"]
    return result


async def read(world: World, proposal_id: str) -> dict[str, Any]:
    data = await world.gql(PROPOSAL, {"id": proposal_id}, world.admin)
    result: dict[str, Any] = data["proposal"]
    return result


async def test_an_amendment_makes_a_new_revision_and_voids_earlier_approvals(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql, reviewers=3, required_approvals=2)
    proposal = (await world.propose())["proposal"]
    await world.decide(world.reviewers[0], proposal)

    amended = await amend(world, world.reviewers[1], proposal, patch={"amount": 80})
    assert amended["replayed"] is False
    new = amended["proposal"]
    assert new["payload"] == {"amount": 80, "currency": "EUR"}
    assert new["revision"] == 2 and new["approvalCount"] == 0
    assert new["state"] == "APPROVAL_REQUIRED" and new["awaitingProposer"] is False
    assert new["payloadDigest"] != proposal["payloadDigest"]
    assert amended["revision"]["diff"] == [{"op": "replace", "path": "/amount", "value": 80}]
    assert amended["revision"]["amendedBy"] == {"name": "reviewer-1"}

    # The first reviewer's approval named the old digest: it is void, and the old digest
    # can no longer be decided.
    stale = await gql.error(
        "mutation($i: DecideProposalInput!) { decideProposal(input: $i) { replayed } }",
        {
            "i": {
                "proposalId": proposal["id"],
                "decision": "APPROVED",
                "payloadDigest": proposal["payloadDigest"],
            }
        },
        world.reviewers[2],
    )
    assert stale.code == "PAYLOAD_DIGEST_MISMATCH"

    # The full quorum again, on the new digest, from reviewers other than its author; the
    # reviewer who approved revision 1 may approve revision 2, once.
    first = await world.decide(world.reviewers[2], new)
    assert first["proposal"]["state"] == "APPROVAL_REQUIRED"
    again = await gql.error(
        "mutation($i: DecideProposalInput!) { decideProposal(input: $i) { replayed } }",
        {
            "i": {
                "proposalId": new["id"],
                "decision": "APPROVED",
                "payloadDigest": new["payloadDigest"],
            }
        },
        world.reviewers[2],
    )
    assert again.code == "ALREADY_DECIDED"
    second = await world.decide(world.reviewers[0], new)
    assert second["proposal"]["state"] == "QUEUED"

    state = await read(world, proposal["id"])
    assert [(a["revision"], a["payloadDigest"]) for a in state["approvals"]] == [
        (1, proposal["payloadDigest"]),
        (2, new["payloadDigest"]),
        (2, new["payloadDigest"]),
    ]
    assert [r["revision"] for r in state["revisions"]] == [1, 2]
    original, second_revision = state["revisions"]
    assert original["payload"] == {"amount": 100, "currency": "EUR"}
    assert original["digest"] == proposal["payloadDigest"] and original["amendedBy"] is None
    assert second_revision["reason"] == "The customer paid 80, not 100."


async def test_an_amendment_is_audited_and_published_with_its_diff(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    proposal = (await world.propose())["proposal"]
    amended = await amend(
        world, world.reviewers[0], proposal, payload={"amount": 5, "currency": "USD"}
    )
    digest = amended["proposal"]["payloadDigest"]
    async with gql.sessionmaker() as session:
        audit = (
            await session.exec(
                select(AuditEvent).where(
                    AuditEvent.target_id == proposal["id"], AuditEvent.action == "proposal.amended"
                )
            )
        ).one()
        event = (
            await session.exec(
                select(ChangeEvent).where(
                    ChangeEvent.entity_id == proposal["id"], ChangeEvent.kind == "proposal.amended"
                )
            )
        ).one()
    diff = [
        {"op": "replace", "path": "/amount", "value": 5},
        {"op": "replace", "path": "/currency", "value": "USD"},
    ]
    assert sorted(audit.details["diff"], key=str) == sorted(diff, key=str)
    assert audit.details["from_digest"] == proposal["payloadDigest"]
    assert audit.details["payload_digest"] == digest and audit.details["revision"] == 2
    assert sorted(event.snapshot["diff"], key=str) == sorted(diff, key=str)
    assert event.snapshot["revision"] == 2 and event.snapshot["payloadDigest"] == digest


async def test_the_approval_task_shows_the_new_revision_open_to_all(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    proposed = await world.propose()
    await gql(
        "mutation($id: ID!) { claimTask(input: {taskId: $id}) { id } }",
        {"id": proposed["task"]["id"]},
        world.reviewers[0],
    )
    amended = await amend(world, world.reviewers[0], proposed["proposal"], patch={"amount": 7})
    task = (await read(world, proposed["proposal"]["id"]))["task"]
    assert task["state"] == "OPEN"
    assert task["context"]["payload"] == {"amount": 7, "currency": "EUR"}
    assert task["context"]["payloadDigest"] == amended["proposal"]["payloadDigest"]
    assert task["context"]["revision"] == 2


async def test_amending_refusals_leave_the_proposal_unchanged(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=2)
    proposed = await world.propose()
    proposal = proposed["proposal"]
    reviewer = world.reviewers[0]
    refusals = {
        "PAYLOAD_DIGEST_MISMATCH": amendment(
            {**proposal, "payloadDigest": "sha256:" + "0" * 64}, patch={"amount": 2}
        ),
        "PAYLOAD_SCHEMA_INVALID": amendment(proposal, patch={"amount": "lots"}),
        "VALIDATION_FAILED": amendment(proposal, patch={"amount": 2}, payload={"amount": 2}),
    }
    for code, variables in refusals.items():
        assert (await gql.error(AMEND, variables, reviewer)).code == code, code
    unchanged = amendment(proposal, patch={"amount": 100})
    assert (await gql.error(AMEND, unchanged, reviewer)).code == "VALIDATION_FAILED"
    short_reason = amendment(proposal, patch={"amount": 2}, reason="no")
    assert (await gql.error(AMEND, short_reason, reviewer)).code == "VALIDATION_FAILED"
    assert (await gql.error(AMEND, amendment(proposal, patch={"amount": 2}), world.agent)).code == (
        "FORBIDDEN"
    )
    await gql(
        "mutation($id: ID!) { claimTask(input: {taskId: $id}) { id } }",
        {"id": proposed["task"]["id"]},
        world.reviewers[1],
    )
    claimed = await gql.error(AMEND, amendment(proposal, patch={"amount": 2}), reviewer)
    assert claimed.code == "TASK_CLAIMED_BY_OTHER"

    decided = await world.decide(world.reviewers[1], proposal)
    assert decided["proposal"]["state"] == "QUEUED"
    late = await gql.error(AMEND, amendment(proposal, patch={"amount": 2}), reviewer)
    assert late.code == "NOT_AWAITING_APPROVAL"
    state = await read(world, proposal["id"])
    assert state["revision"] == 1 and state["payloadDigest"] == proposal["payloadDigest"]
    assert [r["revision"] for r in state["revisions"]] == [1]


async def test_a_target_can_forbid_amendments(gql: GraphQLClient) -> None:
    world = await build_world(gql, amendable=False)
    proposal = (await world.propose())["proposal"]
    refused = await gql.error(AMEND, amendment(proposal, patch={"amount": 2}), world.reviewers[0])
    assert refused.code == "AMENDMENT_NOT_ALLOWED"
    assert (await read(world, proposal["id"]))["revision"] == 1


async def test_an_amendment_is_idempotent_by_key(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    proposal = (await world.propose())["proposal"]
    first = await amend(
        world, world.reviewers[0], proposal, patch={"amount": 3}, idempotencyKey="k1"
    )
    again = await amend(
        world, world.reviewers[0], proposal, patch={"amount": 3}, idempotencyKey="k1"
    )
    assert again["replayed"] is True and again["revision"] == first["revision"]
    other = await gql.error(
        AMEND, amendment(proposal, patch={"amount": 4}, idempotencyKey="k1"), world.reviewers[0]
    )
    assert other.code == "IDEMPOTENCY_KEY_REUSED"
    assert (await read(world, proposal["id"]))["revision"] == 2


async def test_merge_patch_removes_keys_with_null(gql: GraphQLClient) -> None:
    world = await build_world(gql, inputSchema={"type": "object"})
    proposal = (await world.propose({"amount": 1, "note": "x", "meta": {"a": 1, "b": 2}}))[
        "proposal"
    ]
    amended = await amend(
        world, world.reviewers[0], proposal, patch={"note": None, "meta": {"b": None, "c": 3}}
    )
    assert amended["proposal"]["payload"] == {"amount": 1, "meta": {"a": 1, "c": 3}}


async def test_the_proposer_accepts_an_amendment_before_it_is_queued(gql: GraphQLClient) -> None:
    world = await build_world(gql, amendmentsNeedProposer=True)
    proposal = (await world.propose())["proposal"]
    amended = (await amend(world, world.reviewers[0], proposal, patch={"amount": 90}))["proposal"]
    assert amended["awaitingProposer"] is True

    # The quorum is in, but the agent has not accepted: the proposal waits.
    decided = await world.decide(world.reviewers[1], amended)
    assert decided["proposal"]["state"] == "APPROVAL_REQUIRED"

    accept = {"input": {"proposalId": proposal["id"], "payloadDigest": amended["payloadDigest"]}}
    assert (await gql.error(ACCEPT, accept, world.reviewers[0])).code == "FORBIDDEN"
    stale = {"input": {"proposalId": proposal["id"], "payloadDigest": proposal["payloadDigest"]}}
    assert (await gql.error(ACCEPT, stale, world.agent)).code == "PAYLOAD_DIGEST_MISMATCH"
    accepted = (await gql(ACCEPT, accept, world.agent))["acceptAmendment"]
    assert accepted["proposal"]["state"] == "QUEUED"
    assert accepted["proposal"]["awaitingProposer"] is False
    assert (await gql.error(ACCEPT, accept, world.agent)).code == "NOT_AWAITING_APPROVAL"
    assert (await read(world, proposal["id"]))["task"]["state"] == "COMPLETED"


async def test_accepting_before_the_quorum_leaves_it_to_the_reviewers(gql: GraphQLClient) -> None:
    world = await build_world(gql, amendmentsNeedProposer=True)
    proposal = (await world.propose())["proposal"]
    amended = (await amend(world, world.reviewers[0], proposal, patch={"amount": 90}))["proposal"]
    accept = {"input": {"proposalId": proposal["id"], "payloadDigest": amended["payloadDigest"]}}
    accepted = (await gql(ACCEPT, accept, world.agent))["acceptAmendment"]["proposal"]
    assert accepted["state"] == "APPROVAL_REQUIRED" and accepted["awaitingProposer"] is False
    assert (await gql.error(ACCEPT, accept, world.agent)).code == "NO_AMENDMENT_PENDING"
    decided = await world.decide(world.reviewers[1], amended)
    assert decided["proposal"]["state"] == "QUEUED"
    async with gql.sessionmaker() as session:
        actions = (
            await session.exec(
                select(AuditEvent.action)
                .where(AuditEvent.target_id == proposal["id"])
                .order_by(col(AuditEvent.id))
            )
        ).all()
    assert "proposal.amendment_accepted" in actions
