"""A target's circuit counts outcomes without holding up claims: a batch of successes for a
closed circuit with no failures counted has nothing to write, and leaves the target's row
to the claim that locks it (PostgreSQL: on SQLite writers are serialised anyway)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from sqlmodel import col, select

from signoff.delivery import AttemptOutcome
from signoff.models import CircuitState, ResponseClass, Target
from signoff.resolvers.core.work import WorkMaker
from signoff.resolvers.targets import circuit
from tests.conftest import requires_postgres
from tests.helpers import GraphQLClient, build_world

AT = datetime(2026, 1, 1, tzinfo=UTC)


def success() -> AttemptOutcome:
    return AttemptOutcome(ResponseClass.APPLIED, None, 200, None, "d", "r", AT, AT, 1)


def failure() -> AttemptOutcome:
    return AttemptOutcome(
        ResponseClass.RETRYABLE, "RECEIVER_ERROR", 503, None, "d", None, AT, AT, 1
    )


async def note(make: WorkMaker, target_id: str, outcomes: list[AttemptOutcome]) -> None:
    async with make() as work:
        await circuit.note_attempts(work, target_id, outcomes)
        await work.commit()


async def read_target(gql: GraphQLClient, target_id: str) -> Target:
    async with gql.sessionmaker() as session:
        found = await session.exec(
            select(Target)
            .where(col(Target.id) == target_id)
            .execution_options(populate_existing=True)
        )
        return found.one()


@requires_postgres
async def test_successes_of_a_healthy_target_do_not_wait_for_a_claim_holding_its_row(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql)
    make = WorkMaker(gql.sessionmaker)
    async with gql.sessionmaker() as claim:
        # As a claim does, until it commits.
        await claim.exec(select(Target).where(col(Target.id) == world.target_id).with_for_update())
        noted = asyncio.create_task(note(make, world.target_id, [success()] * 3))
        done, _ = await asyncio.wait({noted}, timeout=5)
        await claim.commit()
    await noted
    assert done, "recording successes waited for the claim's lock on the target"
    target = await read_target(gql, world.target_id)
    assert (target.consecutive_failures, target.circuit_state) == (0, CircuitState.CLOSED)


async def test_a_success_after_failures_still_resets_the_count(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    make = WorkMaker(gql.sessionmaker)
    await note(make, world.target_id, [failure(), failure()])
    assert (await read_target(gql, world.target_id)).consecutive_failures == 2
    await note(make, world.target_id, [success()])
    target = await read_target(gql, world.target_id)
    assert (target.consecutive_failures, target.circuit_state) == (0, CircuitState.CLOSED)
