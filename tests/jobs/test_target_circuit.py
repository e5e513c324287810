"""Closing a target's circuit by hand wakes delivery for its waiting proposals at once."""

from __future__ import annotations

from sqlmodel import select

from signoff.models import Actor, CircuitState
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.targets.controls import close_target_circuit
from tests.helpers import GraphQLClient, build_world
from tests.jobs.conftest import Worker
from tests.jobs.test_delivery import approved
from tests.schema.test_target_circuit import open_circuit


async def test_closing_the_circuit_wakes_the_waiting_deliveries(
    gql: GraphQLClient, worker: Worker
) -> None:
    world = await build_world(gql)
    proposal = await approved(world)
    await open_circuit(gql, world)
    worker.jobs.enqueued.clear()

    async with worker.services.work() as work:  # the worker's unit of work keeps its enqueues
        admin = (await work.session.exec(select(Actor).where(Actor.name == "admin"))).one()
        result = await close_target_circuit(
            work=work,
            viewer=Viewer(admin, frozenset()),
            target_id=world.target_id,
            reason="receiver redeployed",
        )

    assert result.target.circuit_state == CircuitState.CLOSED and not result.replayed
    assert worker.jobs.enqueued == [(f"deliver:{proposal['id']}:1", None)]
