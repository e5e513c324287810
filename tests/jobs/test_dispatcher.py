"""A started dispatcher's shutdown, against a real receiver on loopback."""

from __future__ import annotations

import asyncio

from signoff.jobs.dispatcher import Dispatcher
from tests.helpers import GraphQLClient, build_world
from tests.jobs.conftest import Worker
from tests.jobs.test_delivery import approved, read
from tests.receivers import Answer, Receiver, serve


async def test_stopping_while_a_request_is_in_flight_records_it_and_returns(
    gql: GraphQLClient, worker: Worker
) -> None:
    """stop() waits for the request, and its outcome arriving as stop() begins closing the
    loops must not leave the flush loop waiting for outcomes that never come."""
    async with serve(Receiver([Answer(delay=0.3)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        dispatcher = Dispatcher(worker.services, concurrency=4)
        await dispatcher.start()
        for _ in range(500):  # until the receiver holds the request
            if receiver.requests:
                break
            await asyncio.sleep(0.01)
        await asyncio.wait_for(dispatcher.stop(), 5)
    assert len(receiver.requests) == 1
    assert (await read(world, proposal["id"]))["state"] == "APPLIED"


async def test_a_delivery_due_later_in_a_wake_bucket_is_claimed_without_its_own_wake(
    gql: GraphQLClient, worker: Worker
) -> None:
    """Approvals in one time bucket share a wake job, so one may commit after the claim
    that job caused: the dispatcher looks again a bucket later, not at its next poll."""
    async with serve(Receiver([Answer()])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        # A bucket long enough for the approval below to commit inside it.
        dispatcher = Dispatcher(worker.services, concurrency=4, poll_seconds=30, wake_bucket=3)
        await dispatcher.start()
        try:
            await asyncio.sleep(0.1)  # the start-up claim and its wait have begun
            dispatcher.wake_for_bucket()
            await asyncio.sleep(0.1)  # the claim this wake caused found nothing
            proposal = await approved(world)  # its job is the fake queue's: no wake
            assert not receiver.requests
            for _ in range(100):
                if receiver.requests:
                    break
                await asyncio.sleep(0.05)
            assert len(receiver.requests) == 1
        finally:
            await asyncio.wait_for(dispatcher.stop(), 5)
    assert (await read(world, proposal["id"]))["state"] == "APPLIED"
