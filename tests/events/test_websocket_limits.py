"""Websocket limits: operations per connection (a coded error, the socket stays open) and
the server's keep-alive pings (a client that stops answering is closed 4410)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from signoff.database import SessionMaker
from signoff.models import Role
from tests.live import QUEUE_EVENTS, Server, http_gql

Serve = Callable[..., Awaitable[Server]]
TRANSPORT_WS: Any = "graphql-transport-ws"
LEGACY_WS: Any = "graphql-ws"


async def receive(ws: ClientConnection, within: float = 10) -> dict[str, Any]:
    """The next message, past the legacy protocol's keep-alive ("ka") messages."""
    async with asyncio.timeout(within):
        while True:
            message: dict[str, Any] = json.loads(await ws.recv())
            if message["type"] != "ka":
                return message


async def connected(ws: ClientConnection, token: str) -> None:
    init = {"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}}
    await ws.send(json.dumps(init))
    assert (await receive(ws))["type"] == "connection_ack"


async def reviewer_token(server: Server, sessionmaker: SessionMaker) -> str:
    async with http_gql(server, sessionmaker) as gql:
        return await gql.token(Role.REVIEWER)


async def test_operations_over_the_connection_limit_get_a_coded_error(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    server = await serve(SIGNOFF_WS_MAX_OPERATIONS="2")
    token = await reviewer_token(server, sessionmaker)
    async with connect(server.ws_url, subprotocols=[TRANSPORT_WS]) as ws:
        await connected(ws, token)
        for operation_id in ("1", "2", "3"):
            subscribe = {
                "id": operation_id,
                "type": "subscribe",
                "payload": {"query": QUEUE_EVENTS},
            }
            await ws.send(json.dumps(subscribe))
        refused = await receive(ws)
        assert refused["type"] == "error" and refused["id"] == "3"
        error = refused["payload"][0]
        assert error["extensions"]["code"] == "TOO_MANY_SUBSCRIPTIONS"
        assert "2 operations" in error["message"]
        await ws.send(json.dumps({"id": "1", "type": "complete"}))
        await ws.send(
            json.dumps({"id": "4", "type": "subscribe", "payload": {"query": QUEUE_EVENTS}})
        )
        await ws.send(json.dumps({"type": "ping"}))
        assert (await receive(ws))["type"] == "pong"  # "4" was taken: no error came first

    async with connect(server.ws_url, subprotocols=[LEGACY_WS]) as legacy:
        await connected(legacy, token)
        for operation_id in ("1", "2", "3"):
            start = {"id": operation_id, "type": "start", "payload": {"query": QUEUE_EVENTS}}
            await legacy.send(json.dumps(start))
        refused = await receive(legacy)
        assert refused["type"] == "error" and refused["id"] == "3"
        assert refused["payload"]["extensions"]["code"] == "TOO_MANY_SUBSCRIPTIONS"


async def test_the_server_pings_and_closes_a_client_that_stops_answering(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    server = await serve(SIGNOFF_WS_PING_SECONDS="0.3")
    token = await reviewer_token(server, sessionmaker)
    async with connect(server.ws_url, subprotocols=[TRANSPORT_WS]) as ws:
        await connected(ws, token)
        for _ in range(3):  # answered pings keep the connection open
            assert (await receive(ws, within=3)) == {"type": "ping"}
            await ws.send(json.dumps({"type": "pong"}))
        assert (await receive(ws, within=3)) == {"type": "ping"}
        try:
            async with asyncio.timeout(5):
                while True:
                    await ws.recv()
        except ConnectionClosed:
            pass
        assert ws.close_code == 4410


async def test_refused_documents_over_a_websocket_are_coded_errors(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    server = await serve()
    token = await reviewer_token(server, sessionmaker)
    documents = {
        "1": ("subscription { queueEvents(", "GRAPHQL_PARSE_FAILED"),
        "2": ("subscription { noSuchField }", "GRAPHQL_VALIDATION_FAILED"),
        "3": (
            "subscription { queueEvents { " + "proposal { task { " * 7 + "id" + " } }" * 7 + " } }",
            "QUERY_TOO_DEEP",
        ),
        "4": (
            'subscription { proposalEvents(proposalId: "a\\u0000") { cursor } }',
            "INVALID_CHARACTER",
        ),
    }
    async with connect(server.ws_url, subprotocols=[TRANSPORT_WS]) as ws:
        await connected(ws, token)
        for operation_id, (query, code) in documents.items():
            subscribe = {"id": operation_id, "type": "subscribe", "payload": {"query": query}}
            await ws.send(json.dumps(subscribe))
            refused = await receive(ws)
            assert refused["type"] == "error" and refused["id"] == operation_id, refused
            assert refused["payload"][0]["extensions"]["code"] == code, refused
