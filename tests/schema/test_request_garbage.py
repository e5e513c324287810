"""A read leaves no reference cycle behind: its context, loaders, executor and the rows
they read go when the request ends, by reference counting, not at the cyclic garbage
collector's next pass (which, under load, met hundreds of a page's objects per request)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

from signoff.models.records import Record
from signoff.schema.context import Context
from signoff.schema.loaders import Loaders, RowLoader
from signoff.schema.serving.execution import PlainFieldExecutor
from tests.helpers import GraphQLClient, build_world

SELECTION = """id state payload target { id name } task { id state }
approvals { id decision createdAt approver { id name } }"""
PAGE = "{ proposals(first: 20) { edges { cursor node { " + SELECTION + " } } } }"
ONE = "query One($id: ID!) { proposal(id: $id) { " + SELECTION + " } }"
HELLO = "{ viewer { queueIds } }"
# What a read makes that would keep its rows, if it were caught in a cycle.
OF_A_REQUEST = (Context, Loaders, RowLoader, PlainFieldExecutor, Record)


@contextmanager
def unreachable_kept() -> Iterator[list[object]]:
    """Collect what becomes unreachable inside the block, into the list given."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    kept: list[object] = []
    try:
        yield kept
        gc.collect()
        kept.extend(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()


async def test_reads_leave_no_reference_cycle(gql: GraphQLClient) -> None:
    world = await build_world(gql, required_approvals=3)
    made = [(await world.propose())["proposal"] for _ in range(3)]
    await world.decide(world.reviewers[0], made[0])
    reads = [(PAGE, {}), (ONE, {"id": made[0]["id"]}), (HELLO, {})]
    for document, variables in reads:  # caches filled on first use are not garbage
        await gql(document, variables, world.reviewers[1])

    with unreachable_kept() as garbage:
        for document, variables in reads:
            data = await gql(document, variables, world.reviewers[1])
            assert data  # answered, not refused

    caught = sorted({type(o).__name__ for o in garbage if isinstance(o, OF_A_REQUEST)})
    assert caught == []
