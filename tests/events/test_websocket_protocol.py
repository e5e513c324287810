"""What a websocket client sees: close codes, both subprotocols, a too-slow subscriber."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from signoff.database import SessionMaker
from signoff.models import ChangeKind
from signoff.resolvers.core.work import UnitOfWork
from tests.helpers import build_world, record_event
from tests.live import QUEUE_EVENTS, Server, feed_settled, head_cursor, http_gql

Serve = Callable[..., Awaitable[Server]]
TRANSPORT_WS = "graphql-transport-ws"


async def _close_code(ws: ClientConnection, within: float = 10) -> int | None:
    with contextlib.suppress(ConnectionClosed):
        async with asyncio.timeout(within):
            while True:
                await ws.recv()
    return ws.close_code


@pytest.mark.parametrize(
    "payload",
    [{}, {"authorization": "Bearer so_not-a-token"}, {"authorization": "so_missing-scheme"}],
)
async def test_connection_init_without_a_valid_token_closes_4403(
    shared_server: Server, payload: dict[str, Any]
) -> None:
    server = shared_server
    async with connect(server.ws_url, subprotocols=[TRANSPORT_WS]) as ws:  # type: ignore[list-item]
        await ws.send(json.dumps({"type": "connection_init", "payload": payload}))
        assert await _close_code(ws) == 4403


async def test_subscribing_before_connection_init_closes_4401(shared_server: Server) -> None:
    server = shared_server
    async with connect(server.ws_url, subprotocols=[TRANSPORT_WS]) as ws:  # type: ignore[list-item]
        await ws.send(
            json.dumps({"type": "subscribe", "id": "1", "payload": {"query": QUEUE_EVENTS}})
        )
        assert await _close_code(ws) == 4401


async def test_no_connection_init_within_five_seconds_closes_4408(shared_server: Server) -> None:
    server = shared_server
    async with connect(server.ws_url, subprotocols=[TRANSPORT_WS]) as ws:  # type: ignore[list-item]
        assert await _close_code(ws, within=8) == 4408


async def test_legacy_graphql_ws_protocol_streams_events(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    server = await serve()
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql)
        reviewer = world.reviewers[0]
        await feed_settled(sessionmaker)
        after = await head_cursor(gql, reviewer)
        async with connect(server.ws_url, subprotocols=["graphql-ws"]) as ws:  # type: ignore[list-item]
            # GraphiQL sends its Headers tab as the payload, capitalised.
            await ws.send(
                json.dumps(
                    {"type": "connection_init", "payload": {"Authorization": f"Bearer {reviewer}"}}
                )
            )
            assert json.loads(await ws.recv())["type"] == "connection_ack"
            await ws.send(
                json.dumps(
                    {
                        "type": "start",
                        "id": "1",
                        "payload": {
                            "query": QUEUE_EVENTS,
                            "variables": {"queueId": world.queue_id, "after": after},
                        },
                    }
                )
            )
            await world.propose()
            kinds = []
            while len(kinds) < 2:
                message = json.loads(await asyncio.wait_for(ws.recv(), 10))
                if message["type"] == "data":
                    kinds.append(message["payload"]["data"]["queueEvents"]["kind"])
    assert kinds == ["proposal.proposed", "task.created"]


async def test_a_slow_subscriber_is_closed_4429_while_a_fast_one_keeps_going(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    server = await serve(SIGNOFF_SUBSCRIBER_BUFFER="128", SIGNOFF_EVENTS_RELAY_SECONDS="0.05")
    # Paced: bursts stay well under the buffer.
    closed = await _one_reads_one_stalls(server, sessionmaker, 1500, 3000, pause=0.02)
    assert closed == (4429, "subscriber too slow; resume with after")


async def test_a_subscriber_holding_too_many_bytes_is_closed_4429_whatever_its_frame_count(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    """Large frames to a client that never reads: the frame count (set out of reach here)
    is not what stops them; the bytes queued for it are (issue 46: 30-60 KB frames to
    sockets that never read grew a process by hundreds of megabytes)."""
    server = await serve(
        SIGNOFF_SUBSCRIBER_BUFFER="100000",
        SIGNOFF_SUBSCRIBER_BUFFER_BYTES="262144",
        SIGNOFF_EVENTS_RELAY_SECONDS="0.05",
    )
    closed = await _one_reads_one_stalls(server, sessionmaker, 200, 30_000, pause=0.05)
    assert closed == (4429, "subscriber too slow; resume with after")


async def _one_reads_one_stalls(
    server: Server, sessionmaker: SessionMaker, total: int, padding_bytes: int, pause: float
) -> tuple[int | None, str | None]:
    """Two subscribers of one queue, one reading every frame, one that never reads (a 4 KiB
    receive buffer); ``total`` events of ``padding_bytes`` random bytes each (base64,
    incompressible), ten at a time, ``pause`` apart. The reader must get every frame;
    returns how the stalled one was closed."""
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql)
        reviewer = world.reviewers[0]
        await feed_settled(sessionmaker)
        after = await head_cursor(gql, reviewer)
    subscribe = json.dumps(
        {
            "type": "subscribe",
            "id": "1",
            "payload": {
                "query": "subscription($q: ID, $a: String) { queueEvents(queueId: $q, after: $a) "
                "{ cursor snapshot } }",
                "variables": {"q": world.queue_id, "a": after},
            },
        }
    )
    init = json.dumps(
        {"type": "connection_init", "payload": {"authorization": f"Bearer {reviewer}"}}
    )
    stalled_sock = socket.socket()
    stalled_sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled_sock.connect(("127.0.0.1", server.port))
    async with (
        connect(
            server.ws_url,
            subprotocols=[TRANSPORT_WS],  # type: ignore[list-item]
            max_queue=1,
            sock=stalled_sock,
        ) as stalled,
        connect(server.ws_url, subprotocols=[TRANSPORT_WS], max_size=None) as reading,
    ):  # type: ignore[list-item]
        for ws in (stalled, reading):
            await ws.send(init)
            assert json.loads(await ws.recv())["type"] == "connection_ack"
            await ws.send(subscribe)

        async def consume() -> int:
            received = 0
            while received < total:
                message = json.loads(await asyncio.wait_for(reading.recv(), 20))
                if message["type"] == "next":
                    received += 1
            return received

        consumer = asyncio.create_task(consume())
        padding = base64.b64encode(os.urandom(padding_bytes)).decode()
        for batch in range(total // 10):
            async with sessionmaker() as session:
                unit = UnitOfWork(session)
                for i in range(10):
                    record_event(
                        unit,
                        kind=ChangeKind.TASK_CREATED,
                        entity_type="task",
                        entity_id=f"t-{batch}-{i}",
                        queue_id=world.queue_id,
                        snapshot={"padding": padding},
                    )
                await unit.commit()
            await asyncio.sleep(pause)
        assert await consumer == total  # the reader got every frame meanwhile
        # The stalled client now reads what the server managed to send, then the close.
        await _close_code(stalled, within=60)  # a deadline for a busy machine
        return stalled.close_code, stalled.close_reason


async def test_legacy_graphql_ws_refuses_a_bad_token_with_4403(shared_server: Server) -> None:
    server = shared_server
    async with connect(server.ws_url, subprotocols=["graphql-ws"]) as ws:  # type: ignore[list-item]
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"authorization": "Bearer so_wrong"}})
        )
        assert json.loads(await ws.recv())["type"] == "connection_error"
        assert await _close_code(ws) == 4403
