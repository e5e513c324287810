"""A target's moves from several places at once (PostgreSQL): each is one compare-and-set
of the transition core, so exactly one caller makes a move and writes its audit row and
change event. (On SQLite writers are serialised, and callers held between their read and
their write would keep each other waiting.)"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlmodel import func, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.delivery import AttemptOutcome
from signoff.models import Actor, AuditEvent, ChangeEvent, CircuitState, ResponseClass, Target
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.core.work import WorkMaker
from signoff.resolvers.targets import circuit, targets
from signoff.resolvers.targets.controls import close_target_circuit
from signoff.resolvers.targets.targets import pause_target, resume_target, retire_target
from tests.conftest import requires_postgres
from tests.helpers import GraphQLClient, World, build_world
from tests.schema.test_target_circuit import open_circuit

RACERS = 8
AT = datetime(2026, 1, 1, tzinfo=UTC)


async def counts(gql: GraphQLClient, world: World, action: str) -> tuple[int, int]:
    """The target's audit rows and change events of ``action``."""
    async with gql.sessionmaker() as session:
        audits = select(func.count()).select_from(AuditEvent)
        events = select(func.count()).select_from(ChangeEvent)
        audits = audits.where(AuditEvent.target_id == world.target_id, AuditEvent.action == action)
        events = events.where(ChangeEvent.entity_id == world.target_id, ChangeEvent.kind == action)
        return (await session.exec(audits)).one(), (await session.exec(events)).one()


async def admin_of(gql: GraphQLClient) -> Viewer:
    async with gql.sessionmaker() as session:
        admin = (await session.exec(select(Actor).where(Actor.name == "admin"))).one()
    return Viewer(admin, frozenset())


def failure(at: datetime = AT) -> AttemptOutcome:
    return AttemptOutcome(
        ResponseClass.RETRYABLE, "RECEIVER_ERROR", 503, None, "d", None, at, at, 1
    )


def success(at: datetime = AT) -> AttemptOutcome:
    return AttemptOutcome(ResponseClass.APPLIED, None, 200, None, "d", "r", at, at, 1)


@requires_postgres
async def test_concurrent_retires_announce_once(
    gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = await build_world(gql)
    viewer, make = await admin_of(gql), WorkMaker(gql.sessionmaker)

    # Every caller has read the target, still active, before any of them writes.
    read_target = targets.get_target
    everyone_read = asyncio.Barrier(RACERS)

    async def read_then_wait(*, session: AsyncSession, viewer: Viewer, target_id: str) -> Target:
        target = await read_target(session=session, viewer=viewer, target_id=target_id)
        await everyone_read.wait()
        return target

    monkeypatch.setattr(targets, "get_target", read_then_wait)

    async def retire() -> Target:
        async with make() as work:
            return await retire_target(work=work, viewer=viewer, target_id=world.target_id)

    retired = await asyncio.gather(*(retire() for _ in range(RACERS)))
    assert all(target.retired_at is not None for target in retired)
    assert len({target.retired_at for target in retired}) == 1  # the winner's, read back
    assert await counts(gql, world, "target.retired") == (1, 1)


@requires_postgres
async def test_pauses_and_resumes_at_once_alternate(gql: GraphQLClient) -> None:
    """Half pause, half resume, all at once: each success flips the hold, so the winners
    alternate, and each writes exactly one audit row and one event."""
    world = await build_world(gql)
    viewer, make = await admin_of(gql), WorkMaker(gql.sessionmaker)

    async def flip(pause: bool) -> bool:
        async with make() as work:
            try:
                if pause:
                    await pause_target(
                        work=work, viewer=viewer, target_id=world.target_id, reason="maintenance"
                    )
                else:
                    await resume_target(work=work, viewer=viewer, target_id=world.target_id)
            except Exception as refused:
                assert getattr(refused, "code", None) in {
                    "TARGET_ALREADY_PAUSED",
                    "TARGET_NOT_PAUSED",
                }
                return False
            return True

    won = await asyncio.gather(*(flip(i % 2 == 0) for i in range(2 * RACERS)))
    pauses, resumes = (
        await counts(gql, world, "target.paused"),
        await counts(gql, world, "target.resumed"),
    )
    assert pauses[0] == pauses[1] and resumes[0] == resumes[1]
    assert pauses[0] + resumes[0] == sum(won)
    assert pauses[0] - resumes[0] in {0, 1}  # every resume undid a pause before it


@requires_postgres
async def test_concurrent_failures_open_the_circuit_once(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    make = WorkMaker(gql.sessionmaker)

    async def fail_ten() -> None:
        async with make() as work:
            await circuit.note_attempts(work, world.target_id, [failure()] * 10)
            await work.commit()

    await asyncio.gather(*(fail_ten() for _ in range(RACERS)))
    async with gql.sessionmaker() as session:
        target = await session.get(Target, world.target_id)
    assert target is not None and target.circuit_state == CircuitState.OPEN
    assert target.consecutive_failures == 10 * RACERS
    # Two audit rows of the one opening: the move's, and the raising of its incident.
    assert await counts(gql, world, "target.circuit_opened") == (2, 1)


@requires_postgres
async def test_an_operator_and_a_successful_probe_close_the_circuit_once(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql)
    await open_circuit(gql, world, CircuitState.HALF_OPEN)
    viewer, make = await admin_of(gql), WorkMaker(gql.sessionmaker)

    async def probe_succeeds() -> str:
        async with make() as work:
            await circuit.note_attempts(work, world.target_id, [success()])
            await work.commit()
        return "probe"

    async def operator_closes() -> str:
        async with make() as work:
            try:
                await close_target_circuit(
                    work=work, viewer=viewer, target_id=world.target_id, reason="redeployed"
                )
            except Exception as refused:
                assert getattr(refused, "code", None) == "TARGET_CIRCUIT_NOT_OPEN"
                return "refused"
            return "closed"

    racers = [probe_succeeds() for _ in range(RACERS // 2)]
    racers += [operator_closes() for _ in range(RACERS // 2)]
    results = await asyncio.gather(*racers)
    assert await counts(gql, world, "target.circuit_closed") == (1, 1)
    assert results.count("closed") <= 1
