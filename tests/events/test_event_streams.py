"""Server-Sent Events at ``/graphql`` as the wire shows them: an idle stream gets
heartbeats, each ``next`` event's id is its cursor, single connection mode's stream
token is good for the API token that reserved it only (and as many operations as a
websocket), and a stream that stops reading is cut."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Awaitable, Callable

import httpx

from signoff.database import SessionMaker
from signoff.models import Role
from tests.events.test_stalled_subscriber import (
    ANSWER_WITHIN,
    BACKLOG,
    STALLED_QUERY,
    padding,
)
from tests.helpers import build_world, create_tasks
from tests.live import Server, feed_settled, http_gql

Serve = Callable[..., Awaitable[Server]]
SUBSCRIBE = {"query": "subscription($q: ID) { queueEvents(queueId: $q) { cursor entityId } }"}
STREAM = {"accept": "text/event-stream"}


async def test_an_idle_stream_gets_heartbeats_and_events_carry_their_cursor(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    server = await serve(SIGNOFF_WS_PING_SECONDS="0.2")
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1)
        await feed_settled(gql.sessionmaker)
        body = {**SUBSCRIBE, "variables": {"q": world.queue_id}}
        headers = {**STREAM, "authorization": f"Bearer {world.reviewers[0]}"}
        lines: list[str] = []
        async with (
            httpx.AsyncClient(base_url=server.url, timeout=30) as http,
            http.stream("POST", "/graphql", json=body, headers=headers) as response,
        ):
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            assert response.headers["cache-control"] == "no-cache, no-transform"
            await server.subscriptions_live(1)
            created = asyncio.create_task(create_tasks(gql, world.admin, world.queue_id, 1))
            async with asyncio.timeout(30):
                async for line in response.aiter_lines():
                    lines.append(line)
                    # Two heartbeats, and an event read whole (its id, name and data).
                    ids = [i for i, x in enumerate(lines) if x.startswith("id:")]
                    if lines.count(": ping") >= 2 and ids and len(lines) > ids[0] + 2:
                        break
            [task_id] = await created
    event_at = next(i for i, line in enumerate(lines) if line.startswith("id:"))
    cursor = lines[event_at].removeprefix("id: ")
    assert lines[event_at + 1] == "event: next"
    assert f'"cursor":"{cursor}"' in lines[event_at + 2]
    assert task_id in lines[event_at + 2]


async def test_a_stream_token_is_only_good_for_the_token_that_reserved_it(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    server = await serve(SIGNOFF_WS_MAX_OPERATIONS="1")
    async with http_gql(server, sessionmaker) as gql:
        mine, theirs = await gql.token(Role.ADMIN), await gql.token(Role.ADMIN)
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
        reserved = await http.put("/graphql", headers={"authorization": f"Bearer {mine}"})
        assert reserved.status_code == 201
        stream_token = {"x-graphql-event-stream-token": reserved.text}
        operation = {**SUBSCRIBE, "extensions": {"operationId": "1"}}
        for token, status, code in ((theirs, 404, "NOT_FOUND"), ("nope", 401, "UNAUTHENTICATED")):
            refused = await http.post(
                "/graphql",
                json=operation,
                headers={**stream_token, "authorization": f"Bearer {token}"},
            )
            assert refused.status_code == status
            assert refused.json()["errors"][0]["extensions"]["code"] == code
        accepted = await http.post(
            "/graphql", json=operation, headers={**stream_token, "authorization": f"Bearer {mine}"}
        )
        assert accepted.status_code == 202
        again = await http.post(
            "/graphql", json=operation, headers={**stream_token, "authorization": f"Bearer {mine}"}
        )
        assert again.status_code == 409
        assert again.json()["errors"][0]["extensions"]["code"] == "EVENT_STREAM_CONFLICT"
        over = await http.post(
            "/graphql",
            json={**SUBSCRIBE, "extensions": {"operationId": "2"}},
            headers={**stream_token, "authorization": f"Bearer {mine}"},
        )
        assert over.json()["errors"][0]["extensions"]["code"] == "TOO_MANY_SUBSCRIPTIONS"


async def until_received(received: list[str], count: int, reader: asyncio.Task[None]) -> None:
    while len(received) < count and not reader.done():  # noqa: ASYNC110 (lines arrive in a task)
        await asyncio.sleep(0.05)
    reader.cancel()


async def test_a_stream_that_stops_reading_is_cut_and_slows_nobody(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    """Its frames fill the socket buffers, then its queue of SIGNOFF_SUBSCRIBER_BUFFER
    frames: it is cut there, while a stream that reads gets every frame and writers
    answer at once."""
    server = await serve(SIGNOFF_SUBSCRIBER_BUFFER="4")
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1)
        reviewer = world.reviewers[0]
        await feed_settled(gql.sessionmaker)
        body = json.dumps({"query": STALLED_QUERY, "variables": {"queueId": world.queue_id}})
        stalled = socket.socket()
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        try:
            await asyncio.to_thread(stalled.connect, ("127.0.0.1", server.port))
            request = (
                f"POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {reviewer}"
                f"\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n{body}"
            )
            stalled.sendall(request.encode())  # and never reads
            headers = {**STREAM, "authorization": f"Bearer {reviewer}"}
            received: list[str] = []
            async with (
                httpx.AsyncClient(base_url=server.url, timeout=30) as http,
                http.stream(
                    "POST",
                    "/graphql",
                    json={**SUBSCRIBE, "variables": {"q": world.queue_id}},
                    headers=headers,
                ) as reading,
            ):

                async def read() -> None:
                    async for line in reading.aiter_lines():
                        if line.startswith("id:"):
                            received.append(line)

                reader = asyncio.create_task(read())
                await server.subscriptions_live(2)
                for i in range(BACKLOG):
                    started = time.monotonic()
                    await world.propose(
                        {"amount": 100, "currency": "EUR", "padding": padding()},
                        subject={"order": f"o-{i}", "padding": padding()},
                    )
                    assert time.monotonic() - started < ANSWER_WITHIN
                await server.subscriptions_live(1)  # the stalled stream was cut
                # proposal.proposed and task.created, for each proposal
                await asyncio.wait_for(until_received(received, 2 * BACKLOG, reader), 15)
        finally:
            stalled.close()
    assert len(set(received)) == 2 * BACKLOG
