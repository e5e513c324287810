"""A disabled actor's token is refused at a websocket's ``connection_init`` with 4403, as
a bad token is (not 1013, which says the database is away); enabling it lets it in again."""

from __future__ import annotations

import asyncio
import json

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from signoff.database import SessionMaker
from signoff.models import Role
from signoff.resolvers.access.actors import disable_actor, enable_actor
from signoff.resolvers.core.work import WorkMaker
from tests.helpers import GraphQLClient
from tests.live import InProcessServer


async def connection_init(
    server: InProcessServer, subprotocol: str, token: str
) -> tuple[list[str], int | None]:
    """Send ``connection_init`` with ``token``: the types of the messages received until
    the server acknowledges or closes, and the close code (``None``: acknowledged)."""
    received: list[str] = []
    async with connect(server.ws_url, subprotocols=[subprotocol]) as ws:  # type: ignore[list-item]
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}})
        )
        try:
            async with asyncio.timeout(10):
                while "connection_ack" not in received:
                    received.append(json.loads(await ws.recv())["type"])
        except ConnectionClosed:
            return received, ws.close_code
    return received, None


@pytest.mark.parametrize(
    ("subprotocol", "refusal"),
    [("graphql-transport-ws", []), ("graphql-ws", ["connection_error"])],
)
async def test_a_disabled_actor_is_refused_4403_and_let_in_once_enabled(
    live: InProcessServer,
    gql: GraphQLClient,
    sessionmaker: SessionMaker,
    subprotocol: str,
    refusal: list[str],
) -> None:
    token = await gql.token(Role.REVIEWER, name="alice")
    async with WorkMaker(sessionmaker)() as work:
        await disable_actor(work=work, name="alice")
    assert await connection_init(live, subprotocol, token) == (refusal, 4403)

    async with WorkMaker(sessionmaker)() as work:
        await enable_actor(work=work, name="alice")
    assert await connection_init(live, subprotocol, token) == (["connection_ack"], None)
