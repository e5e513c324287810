"""Target health: a target whose receiver keeps failing is one incident, however many
proposals and attempts fail (docs/design.md section 6.4)."""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select

from signoff import clock
from signoff.constants import TARGET_HEALTH_MIN_ATTEMPTS, TARGET_HEALTH_WINDOW_SECONDS
from signoff.models import AuditEvent, ChangeEvent, Incident, IncidentState
from signoff.resolvers.core import lifecycles
from signoff.resolvers.core.lifecycles import INCIDENT
from signoff.resolvers.targets.health import Health
from tests.helpers import GraphQLClient, World, build_world
from tests.jobs.conftest import Worker
from tests.jobs.test_delivery import approved
from tests.receivers import Answer, Receiver, serve


async def target_incidents(worker: Worker, world: World) -> list[Incident]:
    async with worker.services.sessionmaker() as session:
        rows = await session.exec(
            select(Incident).where(Incident.fingerprint == f"target:{world.target_id}")
        )
        return list(rows.all())


async def incident_events(worker: Worker, incident_id: str) -> list[str]:
    async with worker.services.sessionmaker() as session:
        rows = await session.exec(
            select(ChangeEvent.kind)
            .where(ChangeEvent.entity_id == incident_id)
            .order_by(col(ChangeEvent.entity_version))
        )
        return list(rows.all())


async def fail_once_each(worker: Worker, proposals: list[dict[str, Any]]) -> None:
    for proposal in proposals:
        assert await worker.deliver(proposal["id"]) == "FAILED"


def test_the_rule_needs_enough_attempts_and_half_of_them_failing() -> None:
    assert not Health(attempts=TARGET_HEALTH_MIN_ATTEMPTS - 1, failures=4).unhealthy
    assert Health(attempts=TARGET_HEALTH_MIN_ATTEMPTS, failures=5).unhealthy
    assert Health(attempts=10, failures=5).unhealthy
    assert not Health(attempts=10, failures=4).unhealthy
    assert Health(attempts=8, failures=6).failure_percent == 75


async def test_a_failing_receiver_opens_one_target_incident_with_its_failure_rate(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    async with serve(Receiver([Answer(503)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposals = [await approved(world) for _ in range(7)]

        await fail_once_each(worker, proposals[:4])
        assert await target_incidents(worker, world) == []  # too few attempts to judge

        await fail_once_each(worker, proposals[4:5])
        [incident] = await target_incidents(worker, world)
        assert incident.kind == "target_unhealthy" and incident.severity == "HIGH"
        assert incident.entity_type == "target" and incident.entity_id == world.target_id
        assert incident.state == IncidentState.OPEN and incident.occurrence_count == 1
        assert "5 of its last 5 attempts failed (100%)" in incident.title
        assert incident.last_error_code == "RECEIVER_ERROR"
        assert incident.summary is not None and "HTTP 503" in incident.summary

        # More failures, of other proposals and retries of the same: still one incident,
        # counted once; its description follows the latest failures.
        await fail_once_each(worker, proposals[5:])
        frozen_clock.advance(15)
        await fail_once_each(worker, proposals[:3])

    [again] = await target_incidents(worker, world)
    assert again.id == incident.id and again.occurrence_count == 1
    assert "10 of its last 10 attempts failed" in again.title
    assert again.last_seen_at == clock.now()
    assert await incident_events(worker, incident.id) == ["incident.opened"]
    async with worker.services.sessionmaker() as session:
        audit = (
            await session.exec(
                select(AuditEvent.action, AuditEvent.details).where(
                    col(AuditEvent.target_id).in_([incident.id, world.target_id])
                )
            )
        ).all()
    # The tenth consecutive failure also opened the target's circuit (its own audit
    # record); the incident it raises is the same one, already open.
    assert sorted(action for action, _ in audit) == [
        "incident.opened",
        "target.circuit_opened",
        "target.registered",
        "target.unhealthy",
    ]
    [details] = [details for action, details in audit if action == "target.unhealthy"]
    assert details["failure_percent"] == 100 and details["attempts"] == 5


async def test_a_target_that_mostly_succeeds_opens_no_incident(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    script = [Answer(500), Answer(200), Answer(200), Answer(500), Answer(200), Answer(200)]
    async with serve(Receiver(script)) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        for _ in range(len(script)):
            await worker.deliver((await approved(world))["id"])
    assert await target_incidents(worker, world) == []


async def test_a_new_bout_of_failures_after_a_quiet_window_recurs(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    async with serve(Receiver([Answer(500)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        await fail_once_each(worker, [await approved(world) for _ in range(5)])
        [incident] = await target_incidents(worker, world)

        frozen_clock.advance(TARGET_HEALTH_WINDOW_SECONDS + 1)
        later = [await approved(world) for _ in range(5)]
        await fail_once_each(worker, later[:4])
        assert (await target_incidents(worker, world))[0].occurrence_count == 1
        await fail_once_each(worker, later[4:])

    [recurred] = await target_incidents(worker, world)
    assert recurred.id == incident.id and recurred.occurrence_count == 2
    assert recurred.state == IncidentState.OPEN
    assert await incident_events(worker, incident.id) == ["incident.opened", "incident.recurred"]


async def test_failures_after_the_incident_was_resolved_recur(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
) -> None:
    async with serve(Receiver([Answer(500)])) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposals = [await approved(world) for _ in range(6)]
        await fail_once_each(worker, proposals[:5])
        [incident] = await target_incidents(worker, world)
        async with worker.services.work() as work:
            resolved = await INCIDENT.move(
                work,
                lifecycles.RESOLVE,
                incident.id,
                actor_id=None,
                values={"resolved_at": clock.now()},
            )
            assert resolved is not None
            await work.commit()
        await fail_once_each(worker, proposals[5:])

    [recurred] = await target_incidents(worker, world)
    assert recurred.occurrence_count == 2 and recurred.state == IncidentState.OPEN
    assert recurred.resolved_at is None
    assert await incident_events(worker, incident.id) == [
        "incident.opened",
        "incident.resolved",
        "incident.recurred",
    ]
