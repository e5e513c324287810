"""A socket refused for its token's bound leaves no reference cycle behind (issue 46, goal
6): a storm's hundreds of refused sockets go by reference counting as they end, not at the
cyclic collector's next passes, which they would otherwise fill and lengthen. Served as
``signoff serve`` serves (uvicorn's httptools and sans-I/O websockets protocols)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator

import pytest
from httpx import AsyncClient
from starlette.applications import Starlette
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed
from websockets.server import ServerProtocol
from websockets.streams import StreamReader

from signoff.config import Settings
from signoff.database import create_sessionmaker
from signoff.live.turnstile import Gate
from signoff.live.waits import MessageQueue
from signoff.live.websocket import Connection
from signoff.schema.context import Context
from signoff.web.app import create_app
from tests.events.test_websocket_limits import TRANSPORT_WS, connected
from tests.helpers import GraphQLClient, build_world
from tests.live import InProcessServer, serve_in_process
from tests.schema.test_request_garbage import unreachable_kept

# What a websocket makes that would keep its connection's state, if caught in a cycle.
OF_A_SOCKET = (
    HttpToolsProtocol,
    WebSocketsSansIOProtocol,
    ServerProtocol,
    StreamReader,
    MessageQueue,
    Gate,
    Connection,
    Context,
)


@pytest.fixture
async def one_socket_app(settings: Settings, clean_database: None) -> AsyncIterator[Starlette]:
    """The app with a bound of one socket per token."""
    application = create_app(dataclasses.replace(settings, live_max_sockets_per_token=1))
    async with application.router.lifespan_context(application):
        yield application


async def refused(live: InProcessServer, token: str) -> None:
    async with connect(live.ws_url, subprotocols=[TRANSPORT_WS]) as ws:
        init = {"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}}
        await ws.send(json.dumps(init))
        with pytest.raises(ConnectionClosed):
            await ws.recv()
        assert ws.close_code == 4429


async def test_a_socket_over_its_tokens_bound_leaves_no_reference_cycle(
    one_socket_app: Starlette,
) -> None:
    async with serve_in_process(one_socket_app) as live:
        async with AsyncClient(base_url=live.url, timeout=30) as client:
            gql = GraphQLClient(client, create_sessionmaker(one_socket_app.state.engine))
            world = await build_world(gql, reviewers=1)
        token = world.reviewers[0]
        async with connect(live.ws_url, subprotocols=[TRANSPORT_WS]) as holder:
            await connected(holder, world.reviewers[0])  # the token's one socket
            await refused(live, token)  # caches filled on first use are not garbage
            await asyncio.sleep(0.2)
            with unreachable_kept() as garbage:
                for _ in range(5):
                    await refused(live, token)
                await asyncio.sleep(0.5)  # the server's side of each socket has ended

    caught = sorted({type(o).__name__ for o in garbage if isinstance(o, OF_A_SOCKET)})
    assert caught == []
