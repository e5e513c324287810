"""Deadline steps under real concurrency: sweeps racing sweeps, and an escalation racing a
decision; exactly one wins each time (PostgreSQL interleaves them; SQLite serialises)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from sqlmodel import func, select

from signoff import clock
from signoff.errors import NotAwaitingApproval, PayloadDigestMismatch
from signoff.jobs.delivery import expire_due_proposals
from signoff.models import AuditEvent, Decision, Proposal, ProposalState
from signoff.resolvers.access.actors import authenticate
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.approval.approvals import apply_decision
from signoff.resolvers.core.work import Services, UnitOfWork
from signoff.resolvers.reach.deadlines import apply_deadline
from tests.helpers import GraphQLClient
from tests.jobs.conftest import Worker
from tests.jobs.test_deadlines import escalating_world, read


class WorkAt(UnitOfWork):
    """A unit of work whose clock reads ``at``: two processes a moment apart."""

    def __init__(self, session: object, services: Services, at: datetime) -> None:
        super().__init__(session, services)  # type: ignore[arg-type]
        self.at = at

    def now(self) -> datetime:
        return self.at


async def test_concurrent_sweeps_escalate_once(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    world, chain = await escalating_world(gql)
    proposal = (await world.propose(expiresInSeconds=60))["proposal"]
    frozen_clock.advance(60)
    done = await asyncio.gather(*(expire_due_proposals(worker.ctx) for _ in range(8)))
    assert sum(done) == 1
    escalated = await read(world, proposal["id"])
    assert (escalated["escalationLevel"], escalated["queue"]["id"]) == (1, chain[0][0])
    async with worker.services.sessionmaker() as session:
        audited = (
            await session.exec(
                select(func.count()).where(
                    AuditEvent.target_id == proposal["id"],
                    AuditEvent.action == "proposal.escalated",
                )
            )
        ).one()
    assert audited == 1


async def test_an_escalation_racing_a_decision_one_wins(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    """The decision read the proposal a second before its deadline; the escalation runs at
    the deadline. Whichever commits first wins; the other changes nothing."""
    world, _ = await escalating_world(gql, steps=1)
    for _ in range(6):
        proposal = (await world.propose(expiresInSeconds=60))["proposal"]
        async with worker.services.sessionmaker() as session:
            row = await session.get(Proposal, proposal["id"])
            assert row is not None
            deadline = row.expires_at
        frozen_clock.current = deadline
        read_it = asyncio.Event()
        results = sorted(
            await asyncio.gather(
                decide(worker, world.reviewers[0], proposal["id"], deadline, read_it),
                escalate(worker, proposal["id"], deadline, read_it),
            )
        )
        assert results in (["decided", "missed"], ["escalated", "refused"]), results
        final = await read(world, proposal["id"])
        if results[0] == "decided":
            assert (final["state"], final["escalationLevel"]) == (ProposalState.QUEUED, 0)
        else:
            assert (final["state"], final["approvalCount"]) == ("APPROVAL_REQUIRED", 0)


async def decide(
    worker: Worker, reviewer: str, proposal_id: str, deadline: datetime, read_it: asyncio.Event
) -> str:
    """A decision a second before the deadline, by a reviewer who read the proposal then."""
    async with worker.services.sessionmaker() as session:
        work = WorkAt(session, worker.services.work.services, deadline - timedelta(seconds=1))
        viewer: Viewer = await authenticate(session=session, token=reviewer)
        stale = await session.get(Proposal, proposal_id)
        assert stale is not None
        await session.commit()  # SQLite: end the read, so the escalation may write
        read_it.set()
        try:
            await apply_decision(
                work, viewer, stale, Decision.APPROVED, None, payload_digest=stale.payload_digest
            )
        except (NotAwaitingApproval, PayloadDigestMismatch):
            # The escalation gave the proposal a new deadline, so a new digest: the
            # decision named the old one.
            return "refused"
        await work.commit()
        return "decided"


async def escalate(
    worker: Worker, proposal_id: str, deadline: datetime, read_it: asyncio.Event
) -> str:
    """The sweep at the deadline, once the decision has read the proposal."""
    await read_it.wait()
    async with worker.services.sessionmaker() as session:
        work = WorkAt(session, worker.services.work.services, deadline)
        lapsed = await session.get(Proposal, proposal_id)
        assert lapsed is not None
        done = await apply_deadline(work, lapsed)
        await work.commit()
        return "escalated" if done is not None else "missed"
