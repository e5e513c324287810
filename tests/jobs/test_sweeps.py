"""The periodic sweeps: due work is enqueued again, lapsed approvals are cancelled."""

from __future__ import annotations

from sqlmodel import select

from signoff import clock
from signoff.jobs.delivery import expire_due_proposals, sweep_deliveries
from signoff.models import AuditEvent
from signoff.resolvers.delivery.claims import claim_delivery
from tests.helpers import GraphQLClient, build_world
from tests.jobs.conftest import Worker
from tests.jobs.test_delivery import approved, read


async def test_sweep_enqueues_due_proposals_and_lapsed_leases(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    world = await build_world(gql)
    proposal = await approved(world)
    waiting = (await world.propose())["proposal"]
    assert await sweep_deliveries(worker.ctx) == 1
    assert worker.jobs.enqueued == [(f"deliver:{proposal['id']}:1", None)]

    async with worker.services.work() as work:
        assert await claim_delivery(work, proposal["id"], lease_seconds=60) is not None
    assert await sweep_deliveries(worker.ctx) == 0
    frozen_clock.advance(60)
    assert await sweep_deliveries(worker.ctx) == 1
    assert worker.jobs.enqueued[-1] == (f"deliver:{proposal['id']}:2", None)
    assert waiting["id"] not in str(worker.jobs.enqueued)


async def test_lapsed_approvals_are_cancelled_and_their_tasks_expired(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    world = await build_world(gql)
    proposed = await world.propose(expiresInSeconds=60)
    proposal, task = proposed["proposal"], proposed["task"]
    assert await expire_due_proposals(worker.ctx) == 0
    frozen_clock.advance(60)
    assert await expire_due_proposals(worker.ctx) == 1
    assert await expire_due_proposals(worker.ctx) == 0

    state = await world.gql(
        "query($id: ID!) { proposal(id: $id) { state task { state } } }",
        {"id": proposal["id"]},
        world.admin,
    )
    assert state["proposal"] == {"state": "CANCELLED", "task": {"state": "EXPIRED"}}
    refused = await world.gql.error(
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
    assert refused.code == "NOT_AWAITING_APPROVAL"
    async with worker.services.sessionmaker() as session:
        events = (
            await session.exec(
                select(AuditEvent.action).where(AuditEvent.target_id == proposal["id"])
            )
        ).all()
    assert "proposal.expired" in events
    assert task["state"] == "OPEN"
    assert (await read(world, proposal["id"]))["nextAttemptAt"] is None
