"""Claims, leases and the checks made before sending, with an injected clock."""

from __future__ import annotations

import asyncio
import dataclasses

from signoff import clock
from signoff.delivery import send
from signoff.models import Proposal, Target
from signoff.resolvers.delivery.claims import claim_delivery, renew_lease
from signoff.resolvers.delivery.outcomes import record_outcome
from tests.helpers import GraphQLClient, build_world
from tests.jobs.conftest import Worker
from tests.jobs.test_delivery import RETRY, approved, read
from tests.jobs.test_operator import retry
from tests.receivers import Answer, Receiver, serve


async def test_a_lapsed_lease_lets_another_worker_take_over(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    async with serve(Receiver()) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        async with worker.services.work() as work:
            crashed = await claim_delivery(work, proposal["id"], lease_seconds=60)
        assert crashed is not None and crashed.delivery_attempt_count == 1
        assert await worker.deliver(proposal["id"]) == "NOT_DUE"
        frozen_clock.advance(60)
        assert await worker.deliver(proposal["id"]) == "APPLIED"
        # The first worker wakes up and reports its own attempt: it no longer holds it.
        async with worker.services.work() as work:
            target = await work.session.get(Target, crashed.target_id)
            assert target is not None
            outcome = await send(worker.services.http, crashed, target, world.signing_secret, 1)
            assert await record_outcome(work, crashed, target, outcome) is None
    assert [r.attempt for r in receiver.requests] == [2, 1]
    assert {r.webhook_id for r in receiver.requests} == {f"msg_{proposal['id']}"}
    state = await read(world, proposal["id"])
    assert state["state"] == "APPLIED" and state["deliveryAttemptCount"] == 2
    assert len(state["attempts"]) == 2


async def test_the_holder_renews_its_lease(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    world = await build_world(gql)
    proposal = await approved(world)
    async with worker.services.work() as work:
        claimed = await claim_delivery(work, proposal["id"], lease_seconds=60)
        assert claimed is not None
        frozen_clock.advance(50)
        assert await renew_lease(work, proposal["id"], 1, lease_seconds=60)
        assert not await renew_lease(work, proposal["id"], 2, lease_seconds=60)
        frozen_clock.advance(20)
        assert await claim_delivery(work, proposal["id"], lease_seconds=60) is None
        frozen_clock.advance(41)
        again = await claim_delivery(work, proposal["id"], lease_seconds=60)
        assert again is not None and again.delivery_attempt_count == 2


async def test_the_lease_is_renewed_while_the_receiver_takes_its_time(
    gql: GraphQLClient,
    worker: Worker,
) -> None:
    """Real time: a 1 s lease, renewed every third of a second, outlives a 1.5 s response."""
    worker.services.settings = dataclasses.replace(
        worker.services.settings, delivery_lease_seconds=1
    )
    async with serve(Receiver([Answer(delay=1.5)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        delivery = asyncio.create_task(worker.deliver(proposal["id"]))
        await asyncio.sleep(1.2)
        async with worker.services.work() as work:
            assert await claim_delivery(work, proposal["id"], lease_seconds=1) is None
        assert await delivery == "APPLIED"
    assert len(receiver.requests) == 1


async def test_concurrent_claims_have_one_winner(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    world = await build_world(gql)
    proposal = await approved(world)

    async def claim() -> Proposal | None:
        async with worker.services.work() as work:
            return await claim_delivery(work, proposal["id"], lease_seconds=60)

    claims = await asyncio.gather(*(claim() for _ in range(20)))
    winners = [c for c in claims if c is not None]
    assert len(winners) == 1 and winners[0].delivery_attempt_count == 1


async def test_an_expired_action_is_never_sent(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    async with serve(Receiver()) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world, expiresInSeconds=60)
        frozen_clock.advance(61)
        assert await worker.deliver(proposal["id"]) == "ACTION_EXPIRED"
    assert receiver.requests == []
    state = await read(world, proposal["id"])
    assert state["deliveryTerminal"] is True and state["lastErrorCode"] == "ACTION_EXPIRED"


async def test_a_payload_changed_after_approval_is_never_sent(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    async with serve(Receiver()) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        async with worker.services.sessionmaker() as session:
            row = await session.get(Proposal, proposal["id"])
            assert row is not None
            row.payload = {"amount": 100_000, "currency": "EUR"}
            await session.commit()
        assert await worker.deliver(proposal["id"]) == "APPROVAL_DIGEST_MISMATCH"
    assert receiver.requests == []


async def test_bounded_auto_proposals_are_due_at_once(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    async with serve(Receiver()) as receiver:
        world = await build_world(gql, url=receiver.url, approval_mode="BOUNDED_AUTO")
        receiver.secret = world.signing_secret
        proposal = (await world.propose())["proposal"]
        assert proposal["state"] == "QUEUED"
        assert await worker.deliver(proposal["id"]) == "APPLIED"
    assert len(receiver.requests) == 1


async def test_a_worker_from_an_earlier_retry_cycle_cannot_settle_the_new_attempt(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    """The lease is fenced by a generation that never repeats: after ``retryProposal``
    resets the attempt count, a worker that stalled holding attempt 1 of the first cycle
    does not match attempt 1 of the second."""
    async with serve(Receiver([Answer(400)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        async with worker.services.work() as work:
            stale = await claim_delivery(work, proposal["id"], lease_seconds=60)
        assert stale is not None
        frozen_clock.advance(60)
        assert await worker.deliver(proposal["id"]) == "FAILED"  # took over; 400 is final
        await gql(RETRY, retry(proposal), world.admin)
        async with worker.services.work() as work:
            current = await claim_delivery(work, proposal["id"], lease_seconds=60)
        assert current is not None
        assert current.delivery_attempt_count == stale.delivery_attempt_count == 1
        async with worker.services.work() as work:
            target = await work.session.get(Target, stale.target_id)
            assert target is not None
            outcome = await send(worker.services.http, stale, target, world.signing_secret, 1)
            assert await record_outcome(work, stale, target, outcome) is None
    state = await read(world, proposal["id"])
    assert state["state"] == "APPLYING" and state["deliveryAttemptCount"] == 1


ATTEMPTS = """
query($id: ID!) { proposal(id: $id) {
  deliveryAttemptCount
  attempts { attemptNumber responseClass statusCode webhookId finishedAt durationMs }
} }
"""


async def test_an_attempt_cut_off_by_a_killed_worker_stays_in_the_record(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    """The first worker claims and sends, then dies before recording what came back: the
    request reached the receiver, so the history shows it, its outcome unknown."""
    async with serve(Receiver()) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        async with worker.services.work() as work:
            killed = await claim_delivery(work, proposal["id"], lease_seconds=60)
            assert killed is not None
            target = await work.session.get(Target, killed.target_id)
            assert target is not None
        await send(worker.services.http, killed, target, world.signing_secret, 1)
        frozen_clock.advance(60)
        assert await worker.deliver(proposal["id"]) == "APPLIED"
    webhook_id = f"msg_{proposal['id']}"
    assert [(r.attempt, r.webhook_id) for r in receiver.requests] == [
        (1, webhook_id),
        (2, webhook_id),
    ]
    read_back = (await gql(ATTEMPTS, {"id": proposal["id"]}, world.admin))["proposal"]
    assert read_back["deliveryAttemptCount"] == 2
    lost, applied = read_back["attempts"]
    assert lost == {
        "attemptNumber": 1,
        "responseClass": "UNKNOWN",
        "statusCode": None,
        "webhookId": webhook_id,
        "finishedAt": None,
        "durationMs": None,
    }
    assert (applied["attemptNumber"], applied["responseClass"]) == (2, "APPLIED")
    assert applied["statusCode"] == 200 and applied["webhookId"] == webhook_id
