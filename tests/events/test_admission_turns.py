"""Websockets not yet acknowledged take turns on the event loop (``live.turnstile``, issue
46 goal 6): while a storm of sockets waits for its turns, an acknowledged subscriber's
pings are answered and its frames arrive; a socket that waited still gets acknowledged,
and a ``connection_init`` that came in time is not timed out while it waits. Served by
uvicorn in the test's loop, over real sockets."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from httpx import AsyncClient
from starlette.applications import Starlette
from websockets.asyncio.client import ClientConnection, connect

from signoff.config import Settings
from signoff.database import create_sessionmaker
from signoff.live.turnstile import Turnstile
from signoff.web.app import create_app
from tests.events.test_websocket_limits import TRANSPORT_WS, connected, receive
from tests.helpers import GraphQLClient, build_world, create_tasks
from tests.live import feed_published, serve_in_process, subscriptions_live

WATCH = "subscription($q: ID) { queueEvents(queueId: $q) { kind entityId } }"
STORM = 40


@dataclass
class Hold:
    """The turnstile, held by the test: while ``held``, every wait for a turn is kept."""

    held: bool = False
    waiting: list[asyncio.Future[None]] = field(default_factory=list)

    async def until_waiting(self, count: int, within: float = 15) -> None:
        async with asyncio.timeout(within):
            while len(self.waiting) < count:  # noqa: ASYNC110
                await asyncio.sleep(0.02)

    def let_go(self) -> None:
        self.held = False
        for waiter in self.waiting:
            if not waiter.done():
                waiter.set_result(None)


@pytest.fixture
def hold(monkeypatch: pytest.MonkeyPatch) -> Hold:
    hold = Hold()
    wait = Turnstile.wait

    def held(self: Turnstile) -> asyncio.Future[None] | None:
        if not hold.held:
            return wait(self)
        waiter = asyncio.get_running_loop().create_future()
        hold.waiting.append(waiter)
        return waiter

    monkeypatch.setattr(Turnstile, "wait", held)
    return hold


def init(token: str) -> str:
    return json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}})


async def storm_socket(url: str, token: str) -> ClientConnection:
    """A socket that, once accepted, sends its ``connection_init``."""
    ws = await connect(url, subprotocols=[TRANSPORT_WS], open_timeout=30)
    await ws.send(init(token))
    return ws


async def test_an_acknowledged_subscriber_is_served_while_a_storm_waits_its_turns(
    app: Starlette, gql: GraphQLClient, hold: Hold
) -> None:
    world = await build_world(gql, reviewers=2)
    victim, abuser = world.reviewers
    await feed_published(gql.sessionmaker)  # the setup's events do not reach the subscriber
    async with (
        serve_in_process(app) as live,
        connect(live.ws_url, subprotocols=[TRANSPORT_WS]) as ws,
    ):
        await connected(ws, victim)
        subscribe = {"id": "v", "type": "subscribe", "payload": {"query": WATCH}}
        subscribe["payload"]["variables"] = {"q": world.queue_id}  # type: ignore[index]
        await ws.send(json.dumps(subscribe))
        await subscriptions_live(app, 1)

        hold.held = True
        storm = [asyncio.create_task(storm_socket(live.ws_url, abuser)) for _ in range(STORM)]
        try:
            await hold.until_waiting(STORM)  # every handshake waits for its turn
            await ws.send(json.dumps({"type": "ping"}))
            assert (await receive(ws, 5))["type"] == "pong"
            [task_id] = await create_tasks(gql, world.admin, world.queue_id, 1)
            frame = await receive(ws, 10)
            assert frame["type"] == "next"
            assert frame["payload"]["data"]["queueEvents"]["entityId"] == task_id
            assert not any(task.done() for task in storm)  # still waiting

            hold.let_go()
            sockets = await asyncio.gather(*storm)
            for socket in sockets:  # each waited, and is acknowledged
                assert (await receive(socket, 15))["type"] == "connection_ack"
        finally:
            hold.let_go()
            for task in storm:
                if task.done() and task.exception() is None:
                    await task.result().close()
                task.cancel()


@pytest.fixture
async def quick_app(
    settings: Settings, clean_database: None, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Starlette]:
    """The app with a connection-init timeout of half a second."""
    monkeypatch.setattr("signoff.web.app.WS_CONNECTION_INIT_TIMEOUT_SECONDS", 0.5)
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


async def test_a_connection_init_waiting_for_its_turn_is_not_timed_out(
    quick_app: Starlette, hold: Hold
) -> None:
    async with serve_in_process(quick_app) as live:
        async with AsyncClient(base_url=live.url, timeout=30) as client:
            gql = GraphQLClient(client, create_sessionmaker(quick_app.state.engine))
            world = await build_world(gql, reviewers=1)
        async with (
            connect(live.ws_url, subprotocols=[TRANSPORT_WS]) as waiting,
            connect(live.ws_url, subprotocols=[TRANSPORT_WS]) as silent,
        ):
            hold.held = True  # both accepted; the next messages wait
            await waiting.send(init(world.reviewers[0]))
            await hold.until_waiting(1)
            await asyncio.sleep(1.5)  # three timeouts
            hold.let_go()
            assert (await receive(waiting, 5))["type"] == "connection_ack"
            # A socket that sends nothing is still timed out.
            with pytest.raises(Exception):  # noqa: B017
                await receive(silent, 5)
            assert silent.close_code == 4408


async def test_a_new_connection_is_read_at_its_turn_and_a_kept_one_never_waits(
    app: Starlette, hold: Hold
) -> None:
    """A storm's HTTP upgrade requests are parsed a few a turn (``internals``' protocol):
    a new connection's first request waits for its turn; a connection already read from
    goes on."""
    async with (
        serve_in_process(app) as live,
        AsyncClient(base_url=live.url, timeout=10) as kept,
    ):
        assert (await kept.get("/healthz")).status_code == 200
        hold.held = True
        reader, writer = await asyncio.open_connection("127.0.0.1", live.port)
        try:
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: signoff\r\n\r\n")
            await hold.until_waiting(1)
            assert (await kept.get("/healthz")).status_code == 200
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(reader.read(1), 0.3)
            hold.let_go()
            status = await asyncio.wait_for(reader.readline(), 5)
            assert status.startswith(b"HTTP/1.1 200"), status
        finally:
            hold.let_go()
            writer.close()
