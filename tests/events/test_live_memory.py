"""A client that subscribes with ever-new variables (a new cursor, a new session every
time) costs the server a bounded amount of memory: what it remembers per selection is
bounded, and a group is gone with its last member."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import json
from collections.abc import Callable

from starlette.applications import Starlette
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from signoff.constants import LIVE_SELECTION_CACHE_SIZE
from signoff.live.broadcast import Broadcaster
from signoff.models import Role
from tests.conftest import checked_once
from tests.helpers import GraphQLClient
from tests.live import InProcessServer, open_transport_ws

pytestmark = checked_once  # the live layer's memory: the same on every database

AT_ONCE = 50
WARM_UP = 1_000
# Each set of variables used to leave an entry behind: 4,000 sets leave 4,000 objects,
# four times what the assertion allows (the test ran 10,000 before the suite ran in
# parallel; fewer cost a worker less and fail the same way).
DISTINCT = 4_000

BY_VARIABLE = "subscription($s: String!) { draftEvents(sessionId: $s) { cursor kind } }"
WRITTEN_IN = 'subscription {{ draftEvents(sessionId: "{}") {{ cursor kind }} }}'


async def test_thousands_of_distinct_variable_sets_leave_memory_where_it_was(
    app: Starlette, live: InProcessServer, gql: GraphQLClient
) -> None:
    agent = await gql.token(Role.AGENT)
    broadcaster = app.state.broadcaster
    ws = await open_transport_ws(live.ws_url, {"authorization": f"Bearer {agent}"})
    answering = asyncio.create_task(_answer_pings(ws))
    try:
        await _subscribe_in_turn(ws, broadcaster, answering, range(WARM_UP))
        before = await _settled_objects()
        await _subscribe_in_turn(ws, broadcaster, answering, range(WARM_UP, WARM_UP + DISTINCT))
        # Each set of variables used to leave an entry behind (about DISTINCT objects
        # here): the count comes back under the bound once the last batch is torn down,
        # or never.
        after = await _settled_objects(below=before + 1_000)
    finally:
        await ws.close()
        await answering
    assert broadcaster.group_count == 0
    assert broadcaster.selections.cached <= 2 * LIVE_SELECTION_CACHE_SIZE
    assert after - before < 1_000, after - before


async def _answer_pings(ws: ClientConnection) -> None:
    with contextlib.suppress(ConnectionClosed):
        async for raw in ws:
            message = json.loads(raw)
            assert message["type"] in ("ping", "complete"), message
            if message["type"] == "ping":
                await ws.send(json.dumps({"type": "pong"}))


async def _subscribe_in_turn(
    ws: ClientConnection, broadcaster: Broadcaster, answering: asyncio.Task[None], numbers: range
) -> None:
    """Subscribe with each number's own session id, ``AT_ONCE`` live at a time (half as a
    variable, half written into the document), then complete them. A message other than
    a ping or a completion (an error, a refusal) fails at once, naming it."""
    for start in range(numbers.start, numbers.stop, AT_ONCE):
        batch = range(start, min(start + AT_ONCE, numbers.stop))
        for n in batch:
            session = f"session-{n}"
            payload = (
                {"query": BY_VARIABLE, "variables": {"s": session}}
                if n % 2
                else {"query": WRITTEN_IN.format(session)}
            )
            await ws.send(json.dumps({"id": str(n), "type": "subscribe", "payload": payload}))
        await _until(functools.partial(_live, broadcaster, len(batch)), answering)
        for n in batch:
            await ws.send(json.dumps({"id": str(n), "type": "complete"}))
        await _until(lambda: broadcaster.group_count == 0, answering)


def _live(broadcaster: Broadcaster, count: int) -> bool:
    return broadcaster.subscriber_count == count


async def _until(done: Callable[[], bool], answering: asyncio.Task[None]) -> None:
    async with asyncio.timeout(10):
        while not done():
            if answering.done():
                answering.result()  # the unexpected message's assertion
                raise AssertionError("the socket closed")
            await asyncio.sleep(0.005)


def _tracked_objects() -> int:
    gc.collect()
    return len(gc.get_objects())


async def _settled_objects(below: int | None = None, within: float = 5) -> int:
    """Objects tracked once the server has let go of the subscriptions just completed:
    their groups are gone at once, but on a busy machine (pytest-xdist workers beside
    this one) their connections' tasks can still be finishing. The fewest seen over a
    few samples, until one is ``below`` or ``within`` seconds have passed."""
    fewest = _tracked_objects()
    deadline = asyncio.get_running_loop().time() + within
    samples = 1
    while asyncio.get_running_loop().time() < deadline:
        if (below is None and samples >= 3) or (below is not None and fewest < below):
            break
        await asyncio.sleep(0.05)
        fewest = min(fewest, _tracked_objects())
        samples += 1
    return fewest
