"""The circuit breaker, driven by real receivers on loopback: consecutive endpoint failures
open a target's circuit, its deliveries then wait without spending attempts, and probes
decide when it closes (docs/design.md 4.16). Each attempt is made as a worker makes it
(``worker.deliver``: claim, send, record); the clock is frozen and moved by hand.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlmodel import col, select

from signoff import clock
from signoff.constants import (
    CIRCUIT_FAILURE_THRESHOLD,
    CIRCUIT_PROBE_MAX_SECONDS,
    CIRCUIT_PROBE_SECONDS,
)
from signoff.jobs.dispatcher import Dispatcher
from signoff.models import AuditEvent, ChangeEvent, DeadLetter, Incident, IncidentState
from signoff.resolvers.delivery.claims import claim_deliveries, claim_delivery
from tests.helpers import GraphQLClient, World, build_world
from tests.jobs.conftest import Worker
from tests.jobs.test_delivery import approved, read
from tests.receivers import Answer, Receiver, serve
from tests.schema.test_target_circuit import CIRCUIT, records

OPENS = CIRCUIT_FAILURE_THRESHOLD


async def circuit(world: World) -> dict[str, Any]:
    """The target's circuit, as a client reads it."""
    target: dict[str, Any] = (await world.gql(CIRCUIT, {"id": world.target_id}, world.admin))[
        "target"
    ]
    return target


def iso(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat()


async def fail_each(worker: Worker, proposals: list[dict[str, Any]]) -> None:
    for proposal in proposals:
        assert await worker.deliver(proposal["id"]) == "FAILED"


async def attempt_counts(world: World, proposals: list[dict[str, Any]]) -> list[int]:
    return [(await read(world, p["id"]))["deliveryAttemptCount"] for p in proposals]


async def claim_all(worker: Worker) -> list[str]:
    """What a worker with 50 free slots would claim now (ids)."""
    async with worker.services.work() as work:
        claim = await claim_deliveries(work, limit=50, lease_seconds=60)
    return [d.proposal.id for d in claim.deliveries]


async def until_received(receiver: Receiver, count: int) -> None:
    for _ in range(500):
        if len(receiver.requests) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the receiver did not get {count} requests")


async def circuit_records(worker: Worker, world: World, action: str) -> list[Any]:
    """The target's audit records and change events of ``action``, (details, snapshot)."""
    async with worker.services.sessionmaker() as session:
        audits = (
            await session.exec(
                select(AuditEvent.details).where(
                    AuditEvent.target_id == world.target_id, AuditEvent.action == action
                )
            )
        ).all()
        events = (
            await session.exec(
                select(ChangeEvent.snapshot).where(
                    ChangeEvent.entity_id == world.target_id, ChangeEvent.kind == action
                )
            )
        ).all()
    return list(zip(audits, events, strict=True))


async def test_ten_failures_open_the_circuit_and_a_successful_probe_closes_it(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    script = [Answer(503)] * OPENS + [Answer(200, delay=1.0), Answer(200)]
    async with serve(Receiver(script)) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        failing = [await approved(world) for _ in range(OPENS)]
        waiting = [await approved(world) for _ in range(2)]

        await fail_each(worker, failing[:-1])
        assert (await circuit(world))["circuitState"] == "CLOSED"
        assert (await circuit(world))["consecutiveFailures"] == OPENS - 1
        await fail_each(worker, failing[-1:])
        opened_at = clock.now()
        probe_at = opened_at + timedelta(seconds=CIRCUIT_PROBE_SECONDS)
        assert await circuit(world) == {
            "circuitState": "OPEN",
            "consecutiveFailures": OPENS,
            "lastError": "RECEIVER_ERROR (HTTP 503)",
            "lastErrorAt": iso(opened_at),
            "circuitOpenedAt": iso(opened_at),
            "nextProbeAt": iso(probe_at),
        }
        async with worker.services.sessionmaker() as session:
            [incident] = (
                await session.exec(
                    select(Incident).where(Incident.fingerprint == f"target:{world.target_id}")
                )
            ).all()
        assert incident.state == IncidentState.OPEN and incident.entity_id == world.target_id
        [(opened, snapshot)] = await circuit_records(worker, world, "target.circuit_opened")
        assert opened == {"consecutive_failures": OPENS, "last_error": "RECEIVER_ERROR (HTTP 503)"}
        assert snapshot["circuitState"] == "OPEN" and snapshot["nextProbeAt"] == iso(probe_at)

        # Open: nothing of the target is claimed, not even deliveries due now, and no
        # attempt is spent. The failed ones' retries fall due after 15 s; still nothing.
        for proposal in waiting:
            assert await worker.deliver(proposal["id"]) == "NOT_DUE"
        frozen_clock.advance(CIRCUIT_PROBE_SECONDS - 1)
        for proposal in failing + waiting:
            assert await worker.deliver(proposal["id"]) == "NOT_DUE"
        assert await claim_all(worker) == []
        assert await attempt_counts(world, failing + waiting) == [1] * OPENS + [0, 0]
        assert len(receiver.requests) == OPENS

        # At nextProbeAt one delivery goes as the probe; while it is in flight the circuit
        # is HALF_OPEN and nothing else is claimed.
        frozen_clock.advance(1)
        probe = asyncio.create_task(worker.deliver(failing[0]["id"]))
        await until_received(receiver, OPENS + 1)
        half_open = await circuit(world)
        assert half_open["circuitState"] == "HALF_OPEN"
        lease = timedelta(seconds=worker.services.settings.delivery_lease_seconds)
        assert half_open["nextProbeAt"] == iso(clock.now() + lease)  # if the probe's worker dies
        assert await claim_all(worker) == []
        assert await probe == "APPLIED"
        assert len(receiver.requests) == OPENS + 1

        assert await circuit(world) == {
            "circuitState": "CLOSED",
            "consecutiveFailures": 0,
            "lastError": "RECEIVER_ERROR (HTTP 503)",  # the record of what last failed
            "lastErrorAt": iso(opened_at),
            "circuitOpenedAt": None,
            "nextProbeAt": None,
        }
        [(closed, snapshot)] = await records(gql, world)  # target.circuit_closed, no actor
        assert closed == {"consecutive_failures": 0, "last_error": "RECEIVER_ERROR (HTTP 503)"}
        assert snapshot["circuitState"] == "CLOSED" and snapshot["nextProbeAt"] is None
        # The waiting deliveries go again, the failed ones on their next attempt.
        for proposal in failing[1:] + waiting:
            assert await worker.deliver(proposal["id"]) == "APPLIED"
    assert await attempt_counts(world, failing + waiting) == [2] * OPENS + [1, 1]


async def test_a_failed_probe_reopens_the_circuit_for_as_long_as_it_has_been_open(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    """Probes back off: each failed probe waits as long as the circuit has been open, at
    least the first interval and at most ``CIRCUIT_PROBE_MAX_SECONDS``."""
    async with serve(Receiver([Answer(503)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposals = [await approved(world) for _ in range(OPENS)]
        await fail_each(worker, proposals)
        opened_at = clock.now()
        probe_at = opened_at + timedelta(seconds=CIRCUIT_PROBE_SECONDS)

        waits: list[float] = []
        for probe in proposals[:7]:
            frozen_clock.advance((probe_at - clock.now()).total_seconds() - 1)
            assert await claim_all(worker) == []  # not a second early
            frozen_clock.advance(1)
            assert await worker.deliver(probe["id"]) == "FAILED"
            state = await circuit(world)
            assert state["circuitState"] == "OPEN"
            assert state["circuitOpenedAt"] == iso(opened_at)
            next_probe_at = datetime.fromisoformat(state["nextProbeAt"])
            waits.append((next_probe_at - clock.now()).total_seconds())
            probe_at = next_probe_at

    first, cap = CIRCUIT_PROBE_SECONDS, CIRCUIT_PROBE_MAX_SECONDS
    assert waits == [first, 2 * first, 4 * first, 8 * first, 16 * first, cap, cap]
    assert (await circuit(world))["consecutiveFailures"] == OPENS + 7
    # One attempt per probe, nothing in between.
    assert len(receiver.requests) == OPENS + 7
    assert await attempt_counts(world, proposals) == [2] * 7 + [1] * 3
    # Each probe and each reopening is a move of the circuit, audited and in the feed.
    half_opened = await circuit_records(worker, world, "target.circuit_half_opened")
    assert [snapshot["circuitState"] for _, snapshot in half_opened] == ["HALF_OPEN"] * 7
    async with worker.services.sessionmaker() as session:
        reopened = (
            await session.exec(
                select(AuditEvent.id).where(
                    AuditEvent.target_id == world.target_id,
                    AuditEvent.action == "target.circuit_reopened",
                )
            )
        ).all()
        opened_events = (
            await session.exec(
                select(ChangeEvent.id).where(
                    ChangeEvent.entity_id == world.target_id,
                    ChangeEvent.kind == "target.circuit_opened",
                )
            )
        ).all()
    assert (len(reopened), len(opened_events)) == (7, 1 + 7)


async def test_a_rejected_request_is_no_endpoint_failure_and_resets_the_count(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    """A 4xx is about one message: the receiver is up. Nine 503s, a 400, nine 503s leave
    the circuit closed; the tenth consecutive 503 opens it."""
    script = [Answer(503)] * (OPENS - 1) + [Answer(400)] + [Answer(503)]
    async with serve(Receiver(script)) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposals = [await approved(world) for _ in range(2 * OPENS)]

        await fail_each(worker, proposals[: OPENS - 1])
        assert (await circuit(world))["consecutiveFailures"] == OPENS - 1
        await fail_each(worker, proposals[OPENS - 1 : OPENS])
        rejected = await read(world, proposals[OPENS - 1]["id"])
        assert rejected["lastErrorCode"] == "REQUEST_REJECTED" and rejected["deliveryTerminal"]
        state = await circuit(world)
        assert state["circuitState"] == "CLOSED" and state["consecutiveFailures"] == 0
        assert state["lastError"] == "RECEIVER_ERROR (HTTP 503)"  # a 400 is not an endpoint error

        await fail_each(worker, proposals[OPENS:-1])
        state = await circuit(world)
        assert state["circuitState"] == "CLOSED" and state["consecutiveFailures"] == OPENS - 1
        await fail_each(worker, proposals[-1:])
        state = await circuit(world)
        assert state["circuitState"] == "OPEN" and state["consecutiveFailures"] == OPENS


async def test_a_receiver_aborting_a_message_on_a_503_ends_its_retries(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    abort = {"webhook-delivery": "abort-message"}
    async with serve(Receiver([Answer(503, headers=abort)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "FAILED"
        frozen_clock.advance(3600)
        assert await worker.deliver(proposal["id"]) == "NOT_DUE"

    assert len(receiver.requests) == 1
    state = await read(world, proposal["id"])
    assert state["deliveryTerminal"] is True and state["lastErrorCode"] == "RECEIVER_ABORTED"
    assert state["nextAttemptAt"] is None and state["deliveryAttemptCount"] == 1
    assert [(a["responseClass"], a["statusCode"], a["errorCode"]) for a in state["attempts"]] == [
        ("TERMINAL", 503, "RECEIVER_ABORTED")
    ]
    async with worker.services.sessionmaker() as session:
        [incident] = (
            await session.exec(
                select(Incident).where(
                    col(Incident.fingerprint) == f"deliver_proposal:{proposal['id']}"
                )
            )
        ).all()
        [letter] = (await session.exec(select(DeadLetter))).all()
    assert incident.state == IncidentState.OPEN and incident.last_error_code == "RECEIVER_ABORTED"
    assert (letter.proposal_id, letter.error_code, letter.attempt_count) == (
        proposal["id"],
        "RECEIVER_ABORTED",
        1,
    )


async def test_abort_message_on_a_success_changes_nothing(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    abort = {"webhook-delivery": "abort-message"}
    async with serve(Receiver([Answer(200, headers=abort)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        assert await worker.deliver(proposal["id"]) == "APPLIED"
    state = await read(world, proposal["id"])
    assert state["lastErrorCode"] is None and state["deliveryTerminal"] is False
    assert [a["responseClass"] for a in state["attempts"]] == ["APPLIED"]


async def test_a_due_probe_waits_for_deliveries_in_flight_without_busy_claiming(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A delivery claimed before the circuit opened is still in flight when the probe falls
    due: the probe waits for it (only one request at a time while the circuit is not
    closed), and a dispatcher looks again at its next poll or wake, not over and over."""
    async with serve(Receiver([Answer(503)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposals = [await approved(world) for _ in range(OPENS + 1)]
        async with worker.services.work() as work:  # another worker's request, still going
            assert await claim_delivery(work, proposals[-1]["id"], lease_seconds=600)
        await fail_each(worker, proposals[:OPENS])
        frozen_clock.advance(CIRCUIT_PROBE_SECONDS)
        assert await claim_all(worker) == []

        caplog.set_level(logging.DEBUG, logger="signoff.jobs")
        dispatcher = Dispatcher(worker.services, concurrency=4)
        await dispatcher.start()
        await asyncio.sleep(0.5)
        await dispatcher.stop()
    claims = [r for r in caplog.records if r.getMessage().startswith("claimed ")]
    assert 1 <= len(claims) <= 2
    assert len(receiver.requests) == OPENS
