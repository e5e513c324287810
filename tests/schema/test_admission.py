"""Turns at the database: however many HTTP operations arrive at once, no more than the
pool's size of them hold connections, the rest wait their turn, and every one is answered
(docs/design.md section 12, "Turns at the database")."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette

from signoff.database import POOL_SIZE
from signoff.schema.context import Admission
from tests.helpers import GraphQLClient, build_world

PAGE = "{ proposals(first: 5) { edges { node { id state target { name } task { id } } } } }"


class CheckedOut:
    """The engine's connections that ``tasks`` (the requests) have out of the pool, the
    most at once, and how many they opened; the app's own background work (the relay)
    uses the same pool and is not counted."""

    def __init__(self) -> None:
        self.tasks: set[asyncio.Task[Any]] = set()
        self.out: set[int] = set()
        self.most = 0
        self.opened = 0

    def _ours(self) -> bool:
        return asyncio.current_task() in self.tasks

    def checkout(self, _dbapi: Any, record: Any, _proxy: Any) -> None:
        if self._ours():
            self.out.add(id(record))
            self.most = max(self.most, len(self.out))

    def checkin(self, _dbapi: Any, record: Any) -> None:
        self.out.discard(id(record))

    def connect(self, *_: Any) -> None:
        if self._ours():
            self.opened += 1


@contextmanager
def watching(engine: AsyncEngine) -> Iterator[CheckedOut]:
    seen = CheckedOut()
    pool = engine.sync_engine.pool
    hooks = [("checkout", seen.checkout), ("checkin", seen.checkin), ("connect", seen.connect)]
    for name, hook in hooks:
        event.listen(pool, name, hook)
    try:
        yield seen
    finally:
        for name, hook in hooks:
            event.remove(pool, name, hook)


async def test_operations_past_the_pool_wait_their_turn(gql: GraphQLClient, app: Starlette) -> None:
    world = await build_world(gql)
    for i in range(3):
        await world.propose({"amount": i + 1, "currency": "EUR"})
    reviewer = world.reviewers[0]
    await gql(PAGE, token=reviewer)  # the viewer is cached, the pool warm

    with watching(app.state.engine) as seen:
        requests = [asyncio.create_task(gql(PAGE, token=reviewer)) for _ in range(4 * POOL_SIZE)]
        seen.tasks.update(requests)
        pages = await asyncio.gather(*requests)

    assert all(len(page["proposals"]["edges"]) == 3 for page in pages)
    assert 1 < seen.most <= POOL_SIZE
    assert seen.opened <= POOL_SIZE
    assert not seen.out


async def test_one_turn_covers_an_operation_and_returns_once() -> None:
    turns = asyncio.Semaphore(2)
    first, second = Admission(turns), Admission(turns)
    # Sibling fields opening sessions at once take one turn between them.
    await asyncio.gather(first.take(), first.take(), first.take())
    await first.take()
    await second.take()
    assert turns.locked()

    third = Admission(turns)
    waiting = asyncio.create_task(third.take())
    await asyncio.sleep(0.01)
    assert not waiting.done()

    first.give_back()
    first.give_back()  # the operation ended, then its request: one turn comes back
    await asyncio.wait_for(waiting, 1)
    assert turns.locked()
    second.give_back()
    third.give_back()
    assert turns._value == 2


async def test_a_waiting_operation_cancelled_holds_no_turn() -> None:
    turns = asyncio.Semaphore(1)
    holder, waiter = Admission(turns), Admission(turns)
    await holder.take()
    waiting = asyncio.create_task(waiter.take())
    await asyncio.sleep(0.01)
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    waiter.give_back()  # the request ends: nothing to give back
    holder.give_back()
    assert turns._value == 1
