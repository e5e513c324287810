"""Pausing a target holds its deliveries; resuming sends them at once."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlmodel import select

from signoff import clock
from signoff.jobs.delivery import sweep_deliveries
from signoff.models import Actor
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.delivery.claims import claim_delivery
from signoff.resolvers.targets.targets import resume_target
from tests.helpers import GraphQLClient, World, build_world
from tests.jobs.conftest import Worker
from tests.jobs.test_delivery import approved, read
from tests.receivers import Answer, Receiver, serve

PAUSE = """
mutation($input: PauseTargetInput!) {
  pauseTarget(input: $input) { replayed target { id pausedAt } }
}
"""


async def pause(world: World, reason: str = "receiver down for maintenance") -> dict[str, Any]:
    data = await world.gql(
        PAUSE, {"input": {"targetId": world.target_id, "reason": reason}}, world.admin
    )
    result: dict[str, Any] = data["pauseTarget"]
    assert result["target"]["pausedAt"] is not None
    return result


async def resume(worker: Worker, world: World) -> None:
    """Resume through the resolver on the worker's unit of work, whose enqueues are kept."""
    async with worker.services.work() as work:
        admin = (await work.session.exec(select(Actor).where(Actor.name == "admin"))).one()
        result = await resume_target(
            work=work, viewer=Viewer(admin, frozenset()), target_id=world.target_id
        )
    assert result.target.paused_at is None and not result.replayed


async def test_a_paused_target_holds_its_proposals_and_resuming_delivers_them(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    async with serve(Receiver()) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        await pause(world)
        proposal = await approved(world)

        assert await worker.deliver(proposal["id"]) == "NOT_DUE"
        frozen_clock.advance(3600)
        assert await worker.deliver(proposal["id"]) == "NOT_DUE"
        assert await sweep_deliveries(worker.ctx) == 0
        state = await read(world, proposal["id"])
        assert state["state"] == "QUEUED" and state["deliveryAttemptCount"] == 0
        assert receiver.requests == []

        worker.jobs.enqueued.clear()
        await resume(worker, world)
        assert worker.jobs.enqueued == [(f"deliver:{proposal['id']}:1", None)]
        assert await worker.deliver(proposal["id"]) == "APPLIED"

    assert [r.webhook_id for r in receiver.requests] == [f"msg_{proposal['id']}"]


async def test_an_attempt_in_flight_finishes_but_a_lapsed_lease_is_not_taken_over(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    async with serve(Receiver([Answer(hang=True), Answer(200)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        in_flight, stalled = await approved(world), await approved(world)

        delivering = asyncio.create_task(worker.deliver(in_flight["id"]))
        for _ in range(500):  # until the receiver holds the request
            if receiver.requests:
                break
            await asyncio.sleep(0.01)
        async with worker.services.work() as work:  # a worker that claims, then dies
            assert await claim_delivery(work, stalled["id"], lease_seconds=60) is not None
        await pause(world)
        receiver._release.set()
        assert await delivering == "APPLIED"

        frozen_clock.advance(61)  # the dead worker's lease lapses while the target is paused
        assert await worker.deliver(stalled["id"]) == "NOT_DUE"
        assert await sweep_deliveries(worker.ctx) == 0
        assert len(receiver.requests) == 1

        worker.jobs.enqueued.clear()
        await resume(worker, world)
        assert worker.jobs.enqueued == [(f"deliver:{stalled['id']}:2", None)]
        assert await worker.deliver(stalled["id"]) == "APPLIED"
    assert len(receiver.requests) == 2


async def test_a_retry_that_falls_due_while_paused_waits_for_the_resume(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    async with serve(Receiver([Answer(500), Answer(200)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "FAILED"
        await pause(world)
        frozen_clock.advance(15)
        assert await worker.deliver(proposal["id"]) == "NOT_DUE"
        assert len(receiver.requests) == 1

        worker.jobs.enqueued.clear()
        await resume(worker, world)
        assert worker.jobs.enqueued == [(f"deliver:{proposal['id']}:2", None)]
        assert await worker.deliver(proposal["id"]) == "APPLIED"
