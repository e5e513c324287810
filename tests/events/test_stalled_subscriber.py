"""A subscriber that selects nested fields and then stops reading must not slow writers.

Its frames pile up in the socket buffers until the server's send blocks. Whatever the
server does with that subscriber, it must not hold a database transaction meanwhile: on
SQLite that would be the write lock (every writer waits out the 30 s busy timeout, then
fails), on PostgreSQL a connection left ``idle in transaction``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from signoff.database import SessionMaker, sqlite_can_write
from tests.conftest import PG_URL
from tests.helpers import CLAIM, build_world
from tests.live import (
    Server,
    feed_settled,
    head_cursor,
    http_gql,
    open_transport_ws,
    server_log_on_failure,
)

Serve = Callable[..., Awaitable[Server]]

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads socket queues from /proc/net/tcp"
)

# The README's "Watch a queue" selection, plus the proposal's JSON: large frames.
STALLED_QUERY = """
subscription($queueId: ID, $after: String) {
  queueEvents(queueId: $queueId, after: $after) {
    cursor kind entityType entityId occurredAt
    actor { name }
    proposal { id state approvalCount subject payload }
    task { id state assignee { name } }
  }
}
"""

RELEASE = "mutation($id: ID!) { releaseTask(input: {taskId: $id}) { id state } }"

BACKLOG = 30  # proposals, two events each, ~120 kB per frame: ~7 MB, more than the buffers
MUTATIONS = 20
ANSWER_WITHIN = 3.0  # far below the 30 s SQLite busy timeout
GIVE_UP_AFTER = 10.0  # the client's own timeout: fail fast rather than wait out 30 s
STALL_WITHIN = 10.0


def padding() -> str:
    """~60 kB of incompressible text: one JSON value stays under the 64 kB limit."""
    return base64.b64encode(os.urandom(45_000)).decode()


def tcp_queues(local_port: int, remote_port: int) -> tuple[int, int] | None:
    """(bytes not yet acknowledged by the peer, bytes received but not read) of one socket."""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote = fields[1].split(":")[1], fields[2].split(":")[1]
        if int(local, 16) == local_port and int(remote, 16) == remote_port:
            tx, rx = fields[4].split(":")
            return int(tx, 16), int(rx, 16)
    return None


def idle_in_transaction(database_url: str) -> list[str]:
    """The test database's backends that sit ``idle in transaction`` now."""
    url = make_url(database_url)
    admin = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid, state, now() - state_change, left(query, 60) FROM pg_stat_activity "
            "WHERE datname = %s AND state LIKE 'idle in transaction%%'",
            (url.database,),
        ).fetchall()
    return [repr(row) for row in rows]


async def no_transaction_left_open(database_url: str, within: float = 3.0) -> None:
    """No transaction stays open: on SQLite the write lock can be taken; on PostgreSQL a
    moment comes within ``within`` seconds when no backend is idle in transaction (a
    transaction held by a stalled send never ends; a passing one does)."""
    if PG_URL is None:
        path = make_url(database_url).database
        assert path is not None
        free = await asyncio.to_thread(sqlite_can_write, path, within=within)
        assert free, f"the SQLite write lock is held (BEGIN IMMEDIATE waited {within} s)"
        return
    for _ in range(int(within / 0.1)):
        held = await asyncio.to_thread(idle_in_transaction, database_url)
        if not held:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"backends left idle in transaction for {within} s: {held}")


async def test_a_subscriber_that_stops_reading_does_not_slow_writers(
    serve: Serve, sessionmaker: SessionMaker, database_url: str
) -> None:
    server = await serve()
    with server_log_on_failure(server):
        async with http_gql(server, sessionmaker) as gql:
            world = await build_world(gql)
            subscriber, writer = world.reviewers
            await feed_settled(sessionmaker)
            after = await head_cursor(gql, subscriber)
            backlog = [
                await world.propose(
                    {"amount": 100, "currency": "EUR", "padding": padding()},
                    subject={"order": f"o-{i}", "padding": padding()},
                )
                for i in range(BACKLOG)
            ]
            task_id = backlog[0]["task"]["id"]

        # A client that reads the acknowledgement, subscribes, and never reads again: a
        # tiny receive buffer, so the server's socket buffer and then its send fill up.
        sock = socket.socket()
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", server.port))
            client_port = sock.getsockname()[1]
            stalled = await open_transport_ws(
                server.ws_url,
                {"authorization": f"Bearer {subscriber}"},
                sock=sock,
                max_queue=1,  # the library stops reading the socket after one frame
                max_size=None,
                compression=None,  # the padding stays as large on the wire
                ping_interval=None,
            )
        except BaseException:
            sock.close()
            raise
        stalls: list[tuple[int, int]] = []  # (server's unsent bytes, client's unread bytes)

        def stalled_now() -> bool:
            server_side = tcp_queues(server.port, client_port)
            client_side = tcp_queues(client_port, server.port)
            if server_side is None or client_side is None:
                return False
            if server_side[0] > 0 and client_side[1] > 0:
                stalls.append((server_side[0], client_side[1]))
                return True
            return False

        try:
            await stalled.send(
                json.dumps(
                    {
                        "id": "1",
                        "type": "subscribe",
                        "payload": {
                            "query": STALLED_QUERY,
                            "variables": {"queueId": world.queue_id, "after": after},
                        },
                    }
                )
            )
            # The replay of the backlog fills the buffers; writers start once the server's
            # send is stuck (or after STALL_WITHIN: whether it was is checked at the end).
            for _ in range(int(STALL_WITHIN / 0.1)):
                if stalled_now():
                    break
                await asyncio.sleep(0.1)

            async with httpx.AsyncClient(base_url=server.url, timeout=GIVE_UP_AFTER) as http:
                for i in range(MUTATIONS):
                    name, query = ("claimTask", CLAIM) if i % 2 == 0 else ("releaseTask", RELEASE)
                    started = time.monotonic()
                    try:
                        response = await http.post(
                            "/graphql",
                            json={"query": query, "variables": {"id": task_id}},
                            headers={"Authorization": f"Bearer {writer}"},
                        )
                    except httpx.TimeoutException:
                        raise AssertionError(
                            f"mutation {i + 1} ({name}) did not answer within {GIVE_UP_AFTER} s"
                        ) from None
                    elapsed = time.monotonic() - started
                    body = response.json()
                    assert not body.get("errors"), f"mutation {i + 1} ({name}): {body['errors']}"
                    assert body["data"][name]["id"] == task_id
                    assert elapsed < ANSWER_WITHIN, (
                        f"mutation {i + 1} ({name}) took {elapsed:.1f} s"
                    )

                    started = time.monotonic()
                    try:
                        ready = await http.get("/readyz", timeout=ANSWER_WITHIN)
                    except httpx.TimeoutException:
                        raise AssertionError(
                            f"/readyz after mutation {i + 1} did not answer in {ANSWER_WITHIN} s"
                        ) from None
                    assert ready.status_code == 200, f"/readyz after mutation {i + 1}: {ready.text}"
                    stalled_now()

                # The subscriber really stopped reading: the server had frames it could not send.
                assert stalls, "the server's send never blocked: the test did not stall it"
                # Still stalled (or cut off by the server): either way, nothing is held open.
                await no_transaction_left_open(database_url)
        finally:
            stalled.transport.abort()
            with contextlib.suppress(Exception):
                await stalled.wait_closed()

        await no_transaction_left_open(database_url)
        async with httpx.AsyncClient(base_url=server.url, timeout=ANSWER_WITHIN) as http:
            assert (await http.get("/readyz")).status_code == 200
