"""Amendments racing approvals (PostgreSQL, where transactions truly interleave): an
approval of the old digest never counts for the new one, whichever commits first."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.models import Approval, AuditEvent, HumanTask, Proposal, ProposalRevision
from signoff.resolvers.approval import approvals
from tests.concurrency.test_races import reviewers
from tests.conftest import requires_postgres
from tests.helpers import DECIDE, GraphQLClient, build_world
from tests.schema.test_amendments import ACCEPT, AMEND, amendment


def decision(proposal: dict[str, Any]) -> dict[str, Any]:
    return {
        "input": {
            "proposalId": proposal["id"],
            "decision": "APPROVED",
            "payloadDigest": proposal["payloadDigest"],
        }
    }


async def counted_approvals(gql: GraphQLClient, proposal_id: str) -> tuple[Proposal, set[str]]:
    """The proposal, and the approvers whose approval names its current digest."""
    async with gql.sessionmaker() as session:
        proposal = await session.get(Proposal, proposal_id)
        assert proposal is not None
        rows = (
            await session.exec(
                select(Approval).where(
                    Approval.proposal_id == proposal_id,
                    Approval.payload_digest == proposal.payload_digest,
                )
            )
        ).all()
    return proposal, {row.approver_id for row in rows}


@requires_postgres
@pytest.mark.parametrize("round_", range(4))
async def test_an_amendment_racing_approvals_of_the_old_digest(
    gql: GraphQLClient, round_: int
) -> None:
    world = await build_world(gql, reviewers=0, required_approvals=2)
    proposal = (await world.propose())["proposal"]
    amender, *approvers = await reviewers(gql, world.queue_slug, 6)
    calls = [gql.raw(DECIDE, decision(proposal), r) for r in approvers[:round_]]
    calls.append(gql.raw(AMEND, amendment(proposal, patch={"amount": 50}), amender))
    calls += [gql.raw(DECIDE, decision(proposal), r) for r in approvers[round_:]]
    bodies = await asyncio.gather(*calls)
    codes = Counter(
        b["errors"][0]["extensions"]["code"] if b.get("errors") else "ok" for b in bodies
    )
    amended = "errors" not in bodies[round_]
    stored, counted = await counted_approvals(gql, proposal["id"])
    if amended:
        # Every approval that counted names the new digest: none of the old ones did.
        assert stored.revision == 2 and stored.state == "APPROVAL_REQUIRED"
        assert counted == set() and stored.approval_count == 0
    else:
        # The quorum was reached first; the amendment was refused and changed nothing.
        assert bodies[round_]["errors"][0]["extensions"]["code"] == "NOT_AWAITING_APPROVAL"
        assert stored.revision == 1 and stored.state == "QUEUED" and len(counted) == 2
    assert set(codes) <= {"ok", "NOT_AWAITING_APPROVAL", "PAYLOAD_DIGEST_MISMATCH"}, codes


@requires_postgres
async def test_an_approval_read_before_an_amendment_commits_is_refused(
    gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reviewer's request has read the proposal (old digest) when the amendment
    commits; its approval must not count, and nothing of it is left behind."""
    world = await build_world(gql, reviewers=2, required_approvals=1)
    proposal = (await world.propose())["proposal"]
    amended: list[dict[str, Any]] = []
    read_task = approvals.approval_task

    async def read_then_amend(session: AsyncSession, proposal_id: str) -> HumanTask | None:
        task = await read_task(session, proposal_id)
        if not amended:
            amended.append(
                await gql.raw(AMEND, amendment(proposal, patch={"amount": 50}), world.reviewers[1])
            )
        return task

    monkeypatch.setattr(approvals, "approval_task", read_then_amend)
    decided = await gql.raw(DECIDE, decision(proposal), world.reviewers[0])
    assert "errors" not in amended[0], amended[0]
    assert decided["errors"][0]["extensions"]["code"] == "PAYLOAD_DIGEST_MISMATCH", decided
    stored, counted = await counted_approvals(gql, proposal["id"])
    assert stored.state == "APPROVAL_REQUIRED" and stored.revision == 2
    assert counted == set() and stored.approval_count == 0
    async with gql.sessionmaker() as session:
        rows = (
            await session.exec(select(Approval).where(Approval.proposal_id == proposal["id"]))
        ).all()
    assert rows == []


@requires_postgres
async def test_concurrent_amendments_of_one_digest_one_wins(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=0)
    proposal = (await world.propose())["proposal"]
    racers = await reviewers(gql, world.queue_slug, 8)
    bodies = await asyncio.gather(
        *(
            gql.raw(AMEND, amendment(proposal, patch={"amount": 10 + i}), r)
            for i, r in enumerate(racers)
        )
    )
    codes = Counter(
        b["errors"][0]["extensions"]["code"] if b.get("errors") else "ok" for b in bodies
    )
    assert codes == Counter({"ok": 1, "PAYLOAD_DIGEST_MISMATCH": 7})
    [winner] = [b["data"]["amendProposal"] for b in bodies if not b.get("errors")]
    stored, _ = await counted_approvals(gql, proposal["id"])
    assert stored.revision == 2 and stored.payload == winner["proposal"]["payload"]
    async with gql.sessionmaker() as session:
        revisions = (
            await session.exec(
                select(ProposalRevision.revision).where(
                    ProposalRevision.proposal_id == proposal["id"]
                )
            )
        ).all()
    assert sorted(revisions) == [1, 2]


@requires_postgres
@pytest.mark.parametrize("round_", range(3))
async def test_accepting_an_amendment_racing_the_last_approval_queues_once(
    gql: GraphQLClient, round_: int
) -> None:
    world = await build_world(gql, reviewers=2, amendmentsNeedProposer=True)
    proposal = (await world.propose())["proposal"]
    amended = (await gql(AMEND, amendment(proposal, patch={"amount": 9}), world.reviewers[0]))[
        "amendProposal"
    ]["proposal"]
    accept = gql.raw(
        ACCEPT,
        {"input": {"proposalId": proposal["id"], "payloadDigest": amended["payloadDigest"]}},
        world.agent,
    )
    approve = gql.raw(DECIDE, decision(amended), world.reviewers[1])
    bodies = await asyncio.gather(*((accept, approve) if round_ % 2 else (approve, accept)))
    assert all(not b.get("errors") for b in bodies), bodies
    stored, counted = await counted_approvals(gql, proposal["id"])
    assert stored.state == "QUEUED" and not stored.awaiting_proposer and len(counted) == 1
    async with gql.sessionmaker() as session:
        queued = (
            await session.exec(
                select(AuditEvent).where(
                    AuditEvent.target_id == proposal["id"],
                    AuditEvent.action == "proposal.approved",
                )
            )
        ).all()
    assert len(queued) == 1
