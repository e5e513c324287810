"""Delivery, retries, expiry and compensation write to the change feed, in order."""

from __future__ import annotations

from sqlmodel import col, select

from signoff import clock
from signoff.events.feed import stamp_pending
from signoff.jobs.delivery import expire_due_proposals
from signoff.models import ChangeEvent
from tests.helpers import GraphQLClient, build_world
from tests.jobs.conftest import Worker
from tests.jobs.test_delivery import RETRY, approved
from tests.jobs.test_operator import COMPENSATE
from tests.receivers import Answer, Receiver, serve


async def feed(worker: Worker, entity_id: str | None = None) -> list[ChangeEvent]:
    """Stamp what is pending, as the sequencer does, and read events in cursor order."""
    async with worker.services.sessionmaker() as session:
        await stamp_pending(session)
        await session.commit()
        stmt = select(ChangeEvent).order_by(col(ChangeEvent.cursor))
        if entity_id is not None:
            stmt = stmt.where(ChangeEvent.entity_id == entity_id)
        return list((await session.exec(stmt)).all())


async def test_exhaustion_retry_and_incidents_reach_the_feed(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver([Answer(500)])) as receiver:
        world = await build_world(gql, url=receiver.url, maxAttempts=2)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        for _ in range(2):
            await worker.deliver(proposal["id"])
            frozen_clock.advance(15)
        retry = {
            "proposalId": proposal["id"],
            "payloadDigest": proposal["payloadDigest"],
            "idempotencyKey": "again",
        }
        await gql(RETRY, {"input": retry}, world.admin)
        for _ in range(2):
            await worker.deliver(proposal["id"])
            frozen_clock.advance(15)

    events = await feed(worker, proposal["id"])
    assert [(e.kind, e.snapshot.get("deliveryTerminal")) for e in events] == [
        ("proposal.proposed", False),
        ("proposal.approved", False),
        ("proposal.delivery_started", False),
        ("proposal.failed", False),
        ("proposal.delivery_started", False),
        ("proposal.failed", True),
        ("proposal.requeued", False),
        ("proposal.delivery_started", False),
        ("proposal.failed", False),
        ("proposal.delivery_started", False),
        ("proposal.failed", True),
    ]
    assert events[3].snapshot["lastErrorCode"] == "RECEIVER_ERROR"
    # Claims and lease renewals bump the version too, without an event: increasing, not dense.
    versions = [e.entity_version or 0 for e in events]
    assert versions[:2] == [1, 2] and versions == sorted(set(versions))
    incidents = [e for e in await feed(worker) if e.entity_type == "incident"]
    assert [(e.kind, e.snapshot["occurrenceCount"], e.entity_version) for e in incidents] == [
        ("incident.opened", 1, 1),
        ("incident.recurred", 2, 2),
    ]


async def test_applied_compensated_and_expired_reach_the_feed(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver()) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "APPLIED"
    compensation = (
        await gql(
            COMPENSATE,
            {
                "input": {
                    "proposalId": proposal["id"],
                    "targetId": world.target_id,
                    "actionCode": "refund.undo",
                    "payload": {"amount": 100, "currency": "EUR"},
                    "idempotencyKey": "undo-1",
                }
            },
            world.admin,
        )
    )["proposeCompensation"]
    lapsing = (await world.propose(expiresInSeconds=60))["proposal"]
    frozen_clock.advance(61)
    assert await expire_due_proposals(worker.ctx) >= 1

    kinds = [e.kind for e in await feed(worker, proposal["id"])]
    assert kinds[-2:] == ["proposal.applied", "proposal.compensation_required"]
    compensating = compensation["proposal"]["id"]
    assert [e.kind for e in await feed(worker, compensating)] == ["proposal.proposed"]
    assert [e.kind for e in await feed(worker, compensation["task"]["id"])] == ["task.created"]
    assert [e.kind for e in await feed(worker, lapsing["id"])][-1] == "proposal.expired"
    expired = [e for e in await feed(worker) if e.kind == "task.expired"]
    assert [e.snapshot["state"] for e in expired] == ["EXPIRED"]
