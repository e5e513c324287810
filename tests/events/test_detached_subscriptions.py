"""A subscription handed over from Strawberry's operation once authorised (the default)
answers exactly as one served inside it for its whole life (``SIGNOFF_LIVE_DETACHED=0``):
the differential test of the two paths over every ending and every frame.

Two servers on one database, one on each path, get the same socket, messages and changes
at the same moments; what each socket receives, operation by operation, and what each
server counts (``/metrics``) must be the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from signoff.database import SessionMaker
from tests.helpers import build_world, create_tasks, revoke_by_hand
from tests.live import QUEUE_EVENTS, Server, feed_settled, head_cursor, http_gql

Serve = Callable[..., Awaitable[Server]]
TRANSPORT_WS = "graphql-transport-ws"
REMOVE_MEMBER = """
mutation($input: QueueMemberInput!) { removeQueueMember(input: $input) { id } }
"""
# Both paths' servers: operations per socket and subscriptions per token low enough to
# reach, the viewer re-read often enough for a revocation to close the socket at once.
ENV = {
    "SIGNOFF_WS_MAX_OPERATIONS": "4",
    "SIGNOFF_LIVE_MAX_SUBSCRIPTIONS_PER_TOKEN": "5",
    "SIGNOFF_EVENTS_AUTH_REFRESH_SECONDS": "0.2",
}
# Counted by both paths alike: subscriptions and the codes of every error sent.
COUNTED = ('signoff_graphql_requests_total{operation="subscription"}', "signoff_graphql_errors")


@dataclass
class Socket:
    """A graphql-transport-ws client that keeps every message it receives, by operation."""

    ws: ClientConnection
    received: dict[str, list[Any]] = field(default_factory=dict)
    close: tuple[int | None, str | None] | None = None
    _reader: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for text in self.ws:
                message = json.loads(text)
                payload = message.get("payload")
                if isinstance(payload, dict):
                    for error in payload.get("errors", []):
                        error.get("extensions", {}).pop("requestId", None)
                key = message.get("id") or message["type"]
                self.received.setdefault(key, []).append(message)
        self.close = (self.ws.close_code, self.ws.close_reason)

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(message))

    async def subscribe(self, operation_id: str, variables: dict[str, Any]) -> None:
        payload = {"query": QUEUE_EVENTS, "variables": variables}
        await self.send({"id": operation_id, "type": "subscribe", "payload": payload})

    def count(self, key: str) -> int:
        return len(self.received.get(key, []))


@contextlib.asynccontextmanager
async def sockets(servers: list[Server], token: str) -> AsyncIterator[list[Socket]]:
    """One acknowledged socket on each server."""
    async with contextlib.AsyncExitStack() as stack:
        opened = []
        for server in servers:
            ws = await stack.enter_async_context(
                connect(server.ws_url, subprotocols=[TRANSPORT_WS])  # type: ignore[list-item]
            )
            payload = {"authorization": f"Bearer {token}"}
            await ws.send(json.dumps({"type": "connection_init", "payload": payload}))
            assert json.loads(await ws.recv())["type"] == "connection_ack"
            socket = Socket(ws)
            socket.start()
            opened.append(socket)
        yield opened


async def until(check: Callable[[], bool], within: float = 10) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, "not within the time allowed"
        await asyncio.sleep(0.02)


async def none_live(server: Server, within: float = 10) -> None:
    """Until the server counts no live subscription (each ended, its group left)."""
    deadline = time.monotonic() + within
    while await server.live_subscriptions() != 0:
        assert time.monotonic() < deadline, "subscriptions still live"
        await asyncio.sleep(0.05)


async def counted(server: Server) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=server.url, timeout=5) as http:
        text = (await http.get("/metrics")).text
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(COUNTED) and "_created" not in line
    }


async def test_a_handed_over_subscription_answers_as_one_served_inside_strawberry(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    inside = await serve(SIGNOFF_LIVE_DETACHED="0", **ENV)
    handed_over = await serve(**ENV)
    servers = [inside, handed_over]
    async with http_gql(inside, sessionmaker) as gql:
        world = await build_world(gql)
        reviewer = world.reviewers[0]
        me = (await gql("query { viewer { actor { id } } }", token=reviewer))["viewer"]
        await feed_settled(sessionmaker)
        after = await head_cursor(gql, reviewer)
        one_queue = {"queueId": world.queue_id, "after": after}
        every_queue = {"queueId": None, "after": after}
        async with sockets(servers, reviewer) as pair:
            for socket in pair:
                await socket.send({"type": "ping"})
                await socket.subscribe("queue", one_queue)
                await socket.subscribe("all", every_queue)
                await socket.subscribe("bad-cursor", {**one_queue, "after": "not-a-cursor"})
                await socket.subscribe("dropped", every_queue)
            await until(lambda: all(s.count("bad-cursor") >= 1 for s in pair))
            await until(lambda: all(s.count("pong") == 1 for s in pair))
            await create_tasks(gql, world.admin, world.queue_id, 1, "first")
            await until(lambda: all(s.count("dropped") == 1 for s in pair))
            for socket in pair:
                await socket.send({"id": "dropped", "type": "complete"})
                # Four operations at most: two more, then one over the bound.
                await socket.subscribe("third", every_queue)
                await socket.subscribe("fourth", every_queue)
                await socket.subscribe("over", every_queue)
            await until(lambda: all(s.count("over") == 1 for s in pair))
            await create_tasks(gql, world.admin, world.queue_id, 1, "second")
            await until(lambda: all(s.count("fourth") == 2 for s in pair))
            await gql(
                REMOVE_MEMBER,
                {"input": {"queueId": world.queue_id, "actorId": me["actor"]["id"]}},
                world.admin,
            )
            # The queue's subscription ends FORBIDDEN, then completes; the others go on.
            await until(lambda: all(s.count("queue") == 4 for s in pair))
            # Counted so far: the operations that ended (before the revocation, whose
            # closing socket ends the rest at moments that differ from run to run).
            ended = [await counted(server) for server in servers]
            async with sockets(servers, reviewer) as others:
                # Five subscriptions per token at most: two more, then one over the bound.
                for socket in others:
                    await socket.subscribe("fifth", every_queue)
                    await socket.subscribe("sixth", every_queue)
                    await socket.subscribe("over-token", every_queue)
                await until(lambda: all(s.count("over-token") == 1 for s in others))
                assert others[0].received == others[1].received
                refusal = others[0].received["over-token"][0]
                assert refusal["payload"][0]["extensions"]["code"] == "TOO_MANY_SUBSCRIPTIONS"
            await revoke_by_hand(sessionmaker, reviewer)
            await until(lambda: all(s.close is not None for s in pair))
    reference, lean = pair
    assert lean.received == reference.received
    assert lean.close == reference.close
    assert reference.close is not None and reference.close[0] == 4403
    kinds = [m["type"] for m in reference.received["queue"]]
    assert kinds == ["next", "next", "next", "complete"]
    assert reference.received["queue"][2]["payload"]["errors"][0]["extensions"]["code"] == (
        "FORBIDDEN"
    )
    assert [m["type"] for m in reference.received["bad-cursor"]] == ["next", "complete"]
    assert reference.received["over"][0]["type"] == "error"
    assert [m["type"] for m in reference.received["dropped"]] == ["next"]
    assert ended[1] == ended[0]
    assert ended[0]['signoff_graphql_requests_total{operation="subscription"}'] == 2
    for server in servers:
        await none_live(server)


async def test_a_socket_closed_by_its_client_ends_its_handed_over_subscriptions(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    """The client goes without a word: both paths end the subscription alike (nothing
    left counted live, nothing counted as an operation that ended)."""
    servers = [await serve(SIGNOFF_LIVE_DETACHED="0", **ENV), await serve(**ENV)]
    async with http_gql(servers[0], sessionmaker) as gql:
        world = await build_world(gql)
        reviewer = world.reviewers[0]
        await feed_settled(sessionmaker)
        after = await head_cursor(gql, reviewer)
        async with sockets(servers, reviewer) as pair:
            for socket in pair:
                await socket.subscribe("queue", {"queueId": world.queue_id, "after": after})
            await create_tasks(gql, world.admin, world.queue_id, 1, "seen")
            await until(lambda: all(s.count("queue") == 1 for s in pair))
            for server in servers:
                assert await server.live_subscriptions() == 1
    assert pair[0].received == pair[1].received
    for server in servers:
        await none_live(server)
    assert await counted(servers[1]) == await counted(servers[0])
